import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// Destroy deletes only files the store owns: a store path or an owned file that is a symbolic link is refused
/// (nothing is deleted, the link's target least of all); replace renames a link aside, never touching its target.
@Suite("Destroy safety")
struct DestroySafetyTests {
    /// Expects destroy through the API and through storectl to refuse `url` with a message about a symbolic link.
    func expectRefused(_ url: URL, _ context: String) throws {
        let error = #expect(throws: StoreError.self, "\(context)") { try Backends.operations.destroyStore(at: url, force: true) }
        guard case .refused(_, let reason)? = error else {
            Issue.record("\(context): expected StoreError.refused, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("symbolic link"), "\(context): \(reason)")
        let run = try Child.storectl(["destroy", url.path, "--force"])
        #expect(run.status == 2, "\(context): \(run.summary)")
        #expect(run.stderr.contains("symbolic link"), "\(context): \(run.summary)")
    }

    @Test("a store path that is a symbolic link is refused; the store it points to stays", arguments: Backends.types)
    func linkedStorePath(_ type: String) throws {
        let scratch = try TemporaryDirectory("reliability-symlink-path-\(type)")
        defer { scratch.remove() }
        let target = scratch.path("real/store.\(type)")
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try StoreBytes.copy(try Fixtures.other(type), to: target)
        let before = StoreBytes.contents(of: target)
        let link = scratch.path("link.\(type)")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)

        try expectRefused(link, "\(type) store path linked")
        #expect(StoreBytes.contents(of: target) == before)
        #expect(StoreBytes.isSymbolicLink(link))
    }

    /// The sidecar or inner file of `store` that a link can stand in for, per backend.
    static let linkableFiles: [(type: String, name: String)] = [
        ("sqlite", "-wal"), ("sqlite", "-shm"), ("lmdb", "/lock.mdb"), ("lmdb", "/data.mdb"), ("xml", ".lock"),
    ]

    @Test("a store whose own file is a symbolic link to elsewhere is refused; the target stays",
          arguments: 0..<linkableFiles.count)
    func linkedOwnedFile(_ index: Int) throws {
        let (type, suffix) = Self.linkableFiles[index]
        let scratch = try TemporaryDirectory("reliability-symlink-owned-\(type)")
        defer { scratch.remove() }
        let store = scratch.path("store.\(type)")
        try StoreBytes.copy(try Fixtures.other(type), to: store)
        let victimDirectory = try scratch.directory("elsewhere")
        let file = URL(fileURLWithPath: store.path + suffix)
        let victim: URL
        if suffix == "/data.mdb" {
            // The data file is another store's: the link makes this path look like that store.
            let other = victimDirectory.appendingPathComponent("victim.lmdb")
            try StoreBytes.copy(try Fixtures.other(type), to: other)
            victim = other.appendingPathComponent("data.mdb")
            try FileManager.default.removeItem(at: file)
        } else {
            victim = victimDirectory.appendingPathComponent("precious.txt")
            try Data("not the store's".utf8).write(to: victim)
            try? FileManager.default.removeItem(at: file)
        }
        let victimBytes = try Data(contentsOf: victim)
        try FileManager.default.createSymbolicLink(at: file, withDestinationURL: victim)
        try #require(Backends.storeType(at: store) == type, "the store with a linked \(suffix) should still sniff as \(type)")

        try expectRefused(store, "\(type) with \(suffix) linked")
        let victimNow = try Data(contentsOf: victim)
        #expect(victimNow == victimBytes, "\(type): the file \(suffix) links to was written")
        #expect(StoreBytes.isSymbolicLink(file))
        #expect(FileManager.default.fileExists(atPath: store.path))
    }

    @Test("replacing a store through a symbolic link replaces the link, never the store it points to",
          arguments: Backends.types)
    func replaceThroughLink(_ type: String) throws {
        let scratch = try TemporaryDirectory("reliability-symlink-replace-\(type)")
        defer { scratch.remove() }
        let target = scratch.path("real.\(type)")
        try StoreBytes.copy(try Fixtures.other(type), to: target)
        let before = StoreBytes.contents(of: target)
        let link = scratch.path("link.\(type)")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        let library = try Fixtures.library(type)

        let run = try Child.storectl(["replace", link.path, "--with", library.path, "-q"])
        // Either outcome is safe — a clear refusal, or the link itself replaced — as long as the target is intact.
        if run.status == 0 {
            #expect(!StoreBytes.isSymbolicLink(link))
            #expect(StoreChecks.problems(at: link, type: type, identicalTo: library) == nil)
        } else {
            #expect(run.status == 2, "\(run.summary)")
            #expect(run.stderr.contains(link.path), "\(run.summary)")
        }
        #expect(StoreBytes.contents(of: target) == before)
        #expect(StoreBytes.staging(in: scratch.url).isEmpty)
    }

    @Test("a store in a directory reached through a symbolic link is destroyed normally", arguments: Backends.types)
    func linkedParentDirectory(_ type: String) throws {
        let scratch = try TemporaryDirectory("reliability-symlink-parent-\(type)")
        defer { scratch.remove() }
        let real = try scratch.directory("real")
        try StoreBytes.copy(try Fixtures.other(type), to: real.appendingPathComponent("store.\(type)"))
        let neighbour = real.appendingPathComponent("neighbour.txt")
        try Data("stays".utf8).write(to: neighbour)
        let linkedDirectory = scratch.path("linked")
        try FileManager.default.createSymbolicLink(at: linkedDirectory, withDestinationURL: real)

        let run = try Child.storectl(["destroy", linkedDirectory.appendingPathComponent("store.\(type)").path, "-q"])
        #expect(run.status == 0, "\(run.summary)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: real.path) == ["neighbour.txt"])
    }
}
