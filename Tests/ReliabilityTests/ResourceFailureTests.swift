import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// A write operation under test, with the files it starts from.
struct WriteCase: CustomStringConvertible, Sendable {
    enum Kind: String, Sendable { case convert, copy, replace, relocate, saves }
    let kind: Kind
    let sourceType: String
    let destinationType: String

    var description: String {
        switch kind {
        case .convert: "convert \(sourceType)→\(destinationType)"
        case .replace: "replace \(destinationType) with \(sourceType)"
        default: "\(kind.rawValue) \(destinationType)"
        }
    }

    static let all: [WriteCase] = [
        .init(kind: .convert, sourceType: "sqlite", destinationType: "lmdb"),
        .init(kind: .convert, sourceType: "lmdb", destinationType: "xml"),
        .init(kind: .convert, sourceType: "xml", destinationType: "sqlite"),
    ] + Backends.types.flatMap { t in
        [WriteCase(kind: .copy, sourceType: t, destinationType: t), WriteCase(kind: .relocate, sourceType: t, destinationType: t),
         WriteCase(kind: .saves, sourceType: t, destinationType: t)]
    } + [
        .init(kind: .replace, sourceType: "lmdb", destinationType: "sqlite"),
        .init(kind: .replace, sourceType: "xml", destinationType: "lmdb"),
        .init(kind: .replace, sourceType: "sqlite", destinationType: "xml"),
    ]
}

/// One write operation set up in `src/` and `dst/` of a scratch directory, run under a constraint on `dst/`, and
/// checked afterwards: a clear error naming a path in `dst/`, the source untouched, the destination as it was
/// (absent, or the store that was there), nothing partial and nothing staged.
struct ConstrainedWrite {
    let c: WriteCase
    let scratch: TemporaryDirectory
    let sourceDirectory: URL
    let destinationDirectory: URL
    /// The store read from (convert, copy, replace, relocate's old path).
    let source: URL
    /// The path written (saves write into it).
    let destination: URL
    let sourceBytes: [String: Data]
    /// The destination store's files before the run, when one was there.
    var destinationBytes: [String: Data]

    init(_ c: WriteCase) throws {
        self.c = c
        scratch = try TemporaryDirectory("reliability-resource-\(c.kind.rawValue)-\(c.destinationType)")
        sourceDirectory = try scratch.directory("src")
        destinationDirectory = try scratch.directory("dst")
        source = sourceDirectory.appendingPathComponent("library.\(c.sourceType)")
        destination = destinationDirectory.appendingPathComponent((c.kind == .saves ? "saves." : "out.") + c.destinationType)
        if c.kind != .saves { try StoreBytes.copy(try Fixtures.library(c.sourceType), to: source) }
        sourceBytes = StoreBytes.contents(of: source)
        destinationBytes = [:]
    }

    /// Puts the destination's starting store in place (after the constrained file system is mounted).
    mutating func prepareDestination() throws {
        switch c.kind {
        case .replace, .saves: try StoreBytes.copy(try Fixtures.other(c.destinationType), to: destination)
        default: break
        }
        destinationBytes = StoreBytes.contents(of: destination)
    }

    /// The command, its program first.
    func command() throws -> [String] {
        let storectl = try BuiltTools.require(BuiltTools.storectl, "storectl").path
        switch c.kind {
        case .convert: return [storectl, "convert", source.path, destination.path, "--to", c.destinationType, "-q"]
        case .copy: return [storectl, "copy", source.path, destination.path, "-q"]
        case .replace: return [storectl, "replace", destination.path, "--with", source.path, "-q"]
        case .relocate: return [storectl, "relocate", source.path, destination.path, "-q"]
        case .saves:
            // Far more saves than the constraint allows: the loop must fail before it gets there.
            return [try BuiltTools.require(BuiltTools.storestress, "storestress").path, "saves", destination.path, "--writer", "w",
                    "--count", "5000", "--history"]
        }
    }

    func run(_ command: [String]) throws -> Child {
        let child = try Child(URL(fileURLWithPath: command[0]), Array(command.dropFirst()))
        child.wait()
        return child
    }

    /// Checks the aftermath of a run that had to fail because of the constraint; `named` is the path the error
    /// must mention.
    func expectCleanFailure(_ child: Child, named path: URL? = nil, _ constraint: String) {
        let label = "\(c) under \(constraint)"
        #expect(!child.killedBySignal, "\(label): \(child.summary)")
        #expect(child.status == (c.kind == .saves ? 1 : 2), "\(label): \(child.summary)")
        let named = (path ?? destinationDirectory).path
        let namesPath = child.stderr.contains("error") && child.stderr.contains(named)
        #expect(namesPath, "\(label): the error should name \(named): \(child.summary)")
        #expect(StoreBytes.contents(of: source) == sourceBytes, "\(label): the source changed")
        #expect(StoreBytes.staging(in: destinationDirectory).isEmpty, "\(label): staging left: \(StoreBytes.staging(in: destinationDirectory))")
        #expect(StoreBytes.staging(in: sourceDirectory).isEmpty, "\(label): staging left beside the source")
        switch c.kind {
        case .convert, .copy, .relocate:
            #expect(CrashHarness.entries(of: destination).isEmpty, "\(label): partial destination \(CrashHarness.entries(of: destination))")
        case .replace:
            #expect(StoreBytes.contents(of: destination) == destinationBytes, "\(label): the old destination changed")
        case .saves:
            let log = SaveLog(store: destination, writers: ["other", "w"], history: ["w"])
            #expect(log.problems.isEmpty, "\(label): \(log.problems.prefix(5))")
            let printed = SaveLog.lastPrinted(child.stdout)
            let n = log.committed["w"] ?? 0
            #expect(n == printed || n == printed + 1, "\(label): \(n) saves stored, \(printed) reported")
            #expect(log.committed["other"] == 3, "\(label): the saves that were there before are damaged")
        }
    }
}

/// Every write operation under a file-size limit, on a full disk and in a read-only directory: a clear error
/// (exit status 2 from storectl, 1 from storestress) naming the path, and nothing lost, partial or staged.
@Suite("Resource failures")
struct ResourceFailureTests {
    @Test("a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored)", arguments: WriteCase.all)
    func fileSizeLimit(_ c: WriteCase) throws {
        var write = try ConstrainedWrite(c)
        defer { write.scratch.remove() }
        try write.prepareDestination()
        // Room for the files already there and a few saves, never for a copy of the library (over 1 MB).
        let largest = StoreBytes.dataFiles(of: write.destination).compactMap {
            try? FileManager.default.attributesOfItem(atPath: $0.path)[.size] as? Int
        }.max() ?? 0
        let limit = c.kind == .saves ? largest + 40_000 : 300_000
        let storestress = try BuiltTools.require(BuiltTools.storestress, "storestress").path
        let child = try write.run([storestress, "limit-fsize", "\(limit)"] + write.command())
        write.expectCleanFailure(child, "a \(limit)-byte file-size limit")
    }

    @Test("a full disk (a small tmpfs)", .enabled(if: Mounts.available, Mounts.skipReason), arguments: WriteCase.all)
    func fullDisk(_ c: WriteCase) throws {
        var write = try ConstrainedWrite(c)
        defer { write.scratch.remove() }
        // Room for the store that starts there (and a few saves), never for a copy of the library (over 1 MB).
        let starting = c.kind == .replace || c.kind == .saves ? StoreBytes.usage(of: try Fixtures.other(c.destinationType)) : 0
        let size = starting + (c.kind == .saves ? 100_000 : 300_000)

        try Mounts.tmpfs(at: write.destinationDirectory, bytes: size)
        defer { Mounts.unmount(write.destinationDirectory) }
        try write.prepareDestination()
        let child = try write.run(try write.command())
        write.expectCleanFailure(child, "a full \(size)-byte file system")
    }

    @Test("a read-only directory (a read-only bind mount)", .enabled(if: Mounts.available, Mounts.skipReason),
          arguments: WriteCase.all)
    func readOnlyDirectory(_ c: WriteCase) throws {
        var write = try ConstrainedWrite(c)
        defer { write.scratch.remove() }
        try write.prepareDestination()
        try Mounts.readOnly(write.destinationDirectory)
        defer { Mounts.unmount(write.destinationDirectory) }
        let child = try write.run(try write.command())
        write.expectCleanFailure(child, named: c.kind == .saves ? write.destination : nil, "a read-only directory")
        if c.kind == .saves { #expect(StoreBytes.contents(of: write.destination) == write.destinationBytes) }
    }

    @Test("an SQLite store on read-only media reads whole with an empty -wal beside it, and refuses a -wal with data",
          .enabled(if: Mounts.available, Mounts.skipReason))
    func readOnlySQLiteWithLeftoverLog() throws {
        let scratch = try TemporaryDirectory("reliability-ro-wal")
        defer { scratch.remove() }
        // A closed store with an empty -wal (what a reader that had it open leaves in a copy): nothing is lost by
        // reading the main file alone, so it must open.
        let quiet = try scratch.directory("quiet")
        let store = quiet.appendingPathComponent("other.sqlite")
        try StoreBytes.copy(try Fixtures.other("sqlite"), to: store)
        #expect(FileManager.default.createFile(atPath: store.path + "-wal", contents: Data()))
        try? FileManager.default.removeItem(atPath: store.path + "-shm")
        try Mounts.readOnly(quiet)
        defer { Mounts.unmount(quiet) }
        let log = SaveLog(store: store, writers: ["other"])
        #expect(log.problems.isEmpty, "\(log.problems.prefix(3))")
        #expect(log.committed["other"] == 3)

        // A -wal holding saves the main file lacks cannot be read without its -shm, which read-only media cannot
        // get: a clear error naming the store, never the main file's older state.
        let hot = try scratch.directory("hot")
        let library = hot.appendingPathComponent("library.sqlite")
        try StoreBytes.copy(try Fixtures.library("sqlite"), to: library)
        try? FileManager.default.removeItem(atPath: library.path + "-shm")
        let walBytes = (try? FileManager.default.attributesOfItem(atPath: library.path + "-wal")[.size] as? Int) ?? 0
        try #require(walBytes > 0, "the library fixture holds a hot -wal")
        try Mounts.readOnly(hot)
        defer { Mounts.unmount(hot) }
        do {
            let opened = try Backends.open(library)
            try? opened.close()
            Issue.record("a store whose -wal holds data opened from read-only media without it")
        } catch let error as StoreError {
            #expect(error.description.contains(library.path), "\(error)")
        }
    }

    @Test("relocating out of a read-only directory fails clearly; both paths stay whole or absent",
          .enabled(if: Mounts.available, Mounts.skipReason), arguments: Backends.types)
    func relocateFromReadOnly(_ type: String) throws {
        let write = try ConstrainedWrite(WriteCase(kind: .relocate, sourceType: type, destinationType: type))
        defer { write.scratch.remove() }
        try Mounts.readOnly(write.sourceDirectory)
        defer { Mounts.unmount(write.sourceDirectory) }
        let child = try write.run(try write.command())
        #expect(child.status == 2, "\(child.summary)")
        #expect(child.stderr.contains(write.source.path), "\(child.summary)")
        #expect(StoreBytes.contents(of: write.source) == write.sourceBytes)
        // Either the copy was made and only removing the old store failed (both whole: the next relocate, with
        // write access, finishes), or reading failed first (SQLite cannot read a hot -wal without creating its
        // -shm) and nothing was made.
        if FileManager.default.fileExists(atPath: write.destination.path) {
            let problems = StoreChecks.problems(at: write.destination, type: type, identicalTo: try Fixtures.library(type))
            #expect(problems == nil, "\(problems ?? "")")
        } else {
            #expect(CrashHarness.entries(of: write.destination).isEmpty)
        }
        #expect(StoreBytes.staging(in: write.destinationDirectory).isEmpty)
    }

    @Test("destroying a store in a read-only directory fails and deletes nothing",
          .enabled(if: Mounts.available, Mounts.skipReason), arguments: Backends.types)
    func destroyReadOnly(_ type: String) throws {
        var write = try ConstrainedWrite(WriteCase(kind: .replace, sourceType: type, destinationType: type))
        defer { write.scratch.remove() }
        try write.prepareDestination()
        try Mounts.readOnly(write.destinationDirectory)
        defer { Mounts.unmount(write.destinationDirectory) }
        let child = try write.run([try BuiltTools.require(BuiltTools.storectl, "storectl").path, "destroy", write.destination.path])
        #expect(child.status == 2, "\(child.summary)")
        #expect(child.stderr.contains(write.destinationDirectory.path), "\(child.summary)")
        #expect(StoreBytes.contents(of: write.destination) == write.destinationBytes)
    }
}
