import Foundation
import StoreTestSupport
import Testing

/// storectl prints the framework's log lines on standard error at the level asked for, and nothing by default.
@Suite struct StorectlLoggingTests {
    func sampleStore(in dir: TemporaryDirectory) throws {
        let r = try Storectl.run(["create", "a.sqlite", "--model", PackagePaths.libraryModel.path, "--import",
                                  PackagePaths.libraryData.path, "--quiet"], in: dir)
        #expect(r.status == 0, "create failed: \(r.stderr)")
    }

    @Test func logLevelDebugShowsTheOperationOnStandardError() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try sampleStore(in: dir)
        let r = try Storectl.run(["convert", "a.sqlite", "b.lmdb", "--log-level", "debug", "--quiet"], in: dir)
        #expect(r.status == 0, "\(r.stderr)")
        let finished = try #require(r.stderr.split(separator: "\n").first { $0.contains("copy store finished") })
        #expect(finished.contains("debug"))
        #expect(finished.contains("command=convert"))
        #expect(finished.contains("duration_ms="))
        #expect(finished.contains(dir.path("b.lmdb").path))
        #expect(r.stdout.isEmpty)
    }

    @Test func noLogLinesByDefault() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try sampleStore(in: dir)
        let r = try Storectl.run(["convert", "a.sqlite", "b.xml", "--quiet"], in: dir)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.isEmpty)
        #expect(r.stdout.isEmpty)
    }

    @Test func anUnknownLevelIsAUsageError() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let r = try Storectl.run(["convert", "a.sqlite", "b.xml", "--log-level", "loud"], in: dir)
        #expect(r.status == 64)
        #expect(r.stderr.contains("--log-level"))
    }
}
