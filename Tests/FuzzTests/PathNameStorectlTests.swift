import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// The same awkward names through the `storectl` binary: create, import, convert through every type, diff,
/// verify, info, copy, replace, relocate and destroy. A leading dash is given as a relative path after `--`.
@Suite struct PathNameStorectlTests {
    static let cases: [(label: String, directory: String, name: String)] = [
        ("spaces", "with spaces", "my store"),
        ("non-ASCII", "Données ünïcödé 日本語", "Données ünïcödé 日本語"),
        ("leading dash", "-dash", "-store"),
        ("newline", "new\nline", "store\nname"),
    ]

    @Test(arguments: cases.map(\.label))
    func storectlHandlesTheName(_ label: String) throws {
        let storectl = try BuiltTools.require(BuiltTools.storectl, "storectl")
        let c = try #require(Self.cases.first { $0.label == label })
        let root = try TemporaryDirectory("storectl-paths")
        let dir = root.url.appendingPathComponent(c.directory, isDirectory: true)
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("moved"), withIntermediateDirectories: true)
        let data = dir.appendingPathComponent("slice.ndjson")
        try Data(LibrarySample.slice(count: 12, seed: 11)).write(to: data)

        /// Runs storectl in `dir` with relative paths after `--` (so a leading dash is a name, not an option).
        @discardableResult
        func run(_ verb: [String], _ paths: [String], options: [String] = [], expect status: Int32 = 0) throws -> ChildProcess.Result {
            let arguments = ["-C", dir.path, storectl.path] + verb + options + ["--"] + paths
            let result = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/env"), arguments, timeout: 120)
            #expect(result.exitStatus == status, "storectl \(verb.joined(separator: " ")) \(paths) (\(label)): \(result)")
            return result
        }
        let n = c.name
        try run(["create"], ["\(n).sqlite"], options: ["--model=\(PackagePaths.libraryModel.path)"])
        try run(["import"], ["\(n).sqlite", "slice.ndjson"])
        try run(["convert"], ["\(n).sqlite", "\(n).lmdb"])
        try run(["convert"], ["\(n).lmdb", "\(n).xml"])
        try run(["diff"], ["\(n).sqlite", "\(n).xml"])
        for ext in ["sqlite", "lmdb", "xml"] { try run(["verify"], ["\(n).\(ext)"]) }
        let info = try run(["info"], ["\(n).xml"], options: ["--json"])
        let json = try JSONSerialization.jsonObject(with: Data(info.stdout.utf8)) as? [String: Any]
        #expect((json?["path"] as? String)?.hasSuffix("\(n).xml") == true, "info names the store: \(info.stdout.prefix(300))")
        #expect(json?["records"] as? Int == 12)
        try run(["copy"], ["\(n).sqlite", "\(n) backup.sqlite"])
        try run(["replace"], ["\(n).lmdb"], options: ["--with=\(n) backup.sqlite"])  // `=`: the value may start with '-' 
        try run(["diff"], ["\(n).lmdb", "\(n) backup.sqlite"])
        try run(["relocate"], ["\(n).xml", "moved/\(n).xml"])
        try run(["diff"], ["moved/\(n).xml", "\(n).sqlite"])
        for path in ["\(n).sqlite", "\(n).lmdb", "\(n) backup.sqlite", "moved/\(n).xml"] { try run(["destroy"], [path]) }
        #expect(PathNameTests.listing(dir) == ["moved", "slice.ndjson"], "\(label)")
        #expect(PathNameTests.listing(dir.appendingPathComponent("moved")).isEmpty, "\(label)")
    }
}
