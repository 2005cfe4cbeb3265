import Foundation
import StoreAPI
import StoreSync
import StoreTestSupport
import Testing

@Suite("Folder remote")
struct FolderRemoteTests {
    private func name(_ seq: Int64, peer: UUID = UUID()) -> ChangeFileName { ChangeFileName(peer: peer, sequence: seq) }

    @Test func namesRoundTripAndForeignNamesAreRejected() {
        let n = name(42)
        #expect(ChangeFileName(fileName: n.description) == n)
        for foreign in ["", ".tmp-123", "notes.txt", n.description + ".partial", "x" + n.description,
                        n.description.replacingOccurrences(of: "0042", with: "00-2"),
                        n.description.lowercased(), "\(UUID().uuidString)-0000000000000000.changes"] {
            #expect(ChangeFileName(fileName: foreign) == nil, "\(foreign)")
        }
    }

    @Test func putIsOnceAndTwoWritersNeverOverwriteEachOther() async throws {
        let dir = try TemporaryDirectory("folder-remote-put")
        let remote = try FolderRemote(directory: dir.url, container: "c")
        let n = name(1)
        // Many writers race for one name: exactly one wins, and the file is the winner's whole.
        let outcomes = try await withThrowingTaskGroup(of: (PutOutcome, Data).self) { group in
            for i in 0..<8 {
                group.addTask {
                    let data = Data(repeating: UInt8(i), count: 200_000)
                    return (try await remote.put(data, as: n), data)
                }
            }
            var all: [(PutOutcome, Data)] = []
            for try await o in group { all.append(o) }
            return all
        }
        let winners = outcomes.filter { $0.0 == .created }
        #expect(winners.count == 1)
        #expect(try await remote.fetch(n) == winners.first?.1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: remote.root.appendingPathComponent("changes").path) == [n.description],
                "no temporary file is left behind")
    }

    @Test func partialAndForeignFilesAreIgnoredAndGapsAreWaitedFor() async throws {
        let dir = try TemporaryDirectory("folder-remote-list")
        let remote = try FolderRemote(directory: dir.url, container: "c")
        let peer = UUID()
        _ = try await remote.put(Data("one".utf8), as: name(1, peer: peer))
        _ = try await remote.put(Data("three".utf8), as: name(3, peer: peer))
        let changes = remote.root.appendingPathComponent("changes")
        try Data("half".utf8).write(to: changes.appendingPathComponent(".tmp-\(UUID().uuidString)"))
        try Data("junk".utf8).write(to: changes.appendingPathComponent("Thumbs.db"))
        try Data("conflict".utf8).write(to: changes.appendingPathComponent(name(2, peer: peer).description + " (conflicted copy)"))
        let first = try await remote.list(after: nil)
        #expect(first.names == [name(1, peer: peer)], "file 3 waits for file 2")
        _ = try await remote.put(Data("two".utf8), as: name(2, peer: peer))
        let second = try await remote.list(after: first.cursor)
        #expect(second.names == [name(2, peer: peer), name(3, peer: peer)])
        #expect(try await remote.list(after: second.cursor).names.isEmpty)
    }

    @Test func identityIsStableAndAMissingFolderIsAnError() async throws {
        let dir = try TemporaryDirectory("folder-remote-identity")
        let a = try FolderRemote(directory: dir.url, container: "c")
        let b = try FolderRemote(directory: dir.url, container: "c")
        #expect(try await a.identity() == b.identity())
        #expect(try await a.identity() != FolderRemote(directory: dir.url, container: "other").identity())
        let gone = try FolderRemote(directory: dir.path("not-mounted"), container: "c")
        await #expect(throws: SyncError.self) { try await gone.identity() }
        #expect(throws: SyncError.self) { try FolderRemote(directory: dir.url, container: "../escape") }
    }

    @Test func twoStoresSyncThroughAFolderIgnoringForeignFiles() async throws {
        let dir = try TemporaryDirectory("folder-remote-sync")
        let folder = try dir.directory("share")
        let options = SyncOptions(remote: folder, containerIdentifier: "library")
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: try SyncRemotes.remote(for: options), options: options)
        let b = try Replica(dir.path("b.xml"), type: "xml", remote: try SyncRemotes.remote(for: options), options: options)
        let id = try a.insert("Author", ["name": "shared"])
        try await a.sync()
        // A file with a change file's name that is not one: reported and skipped, never fatal.
        let bogus = ChangeFileName(peer: UUID(), sequence: 1)
        try Data("{not json".utf8).write(to: folder.appendingPathComponent("library/changes/\(bogus.description)"))
        let report = try await b.sync()
        #expect(report.ignoredFiles == 1)
        #expect(try b.value(id, "name") == .string("shared"))
    }

    /// A change file of a later format stops the pull (a typed error naming it, nothing applied, the cursor kept)
    /// rather than being skipped: a skipped file is never fetched again, so an upgraded peer would never see it.
    @Test func aChangeFileOfALaterFormatStopsThePullWithoutSkippingIt() async throws {
        let dir = try TemporaryDirectory("folder-remote-later-format")
        let folder = try dir.directory("share")
        let options = SyncOptions(remote: folder, containerIdentifier: "library")
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: try SyncRemotes.remote(for: options), options: options)
        let b = try Replica(dir.path("b.lmdb"), type: "lmdb", remote: try SyncRemotes.remote(for: options), options: options)
        try await b.sync()
        let id = try a.insert("Author", ["name": "shared"])
        try await a.sync()
        let later = ChangeFileName(peer: UUID(), sequence: 1)
        let file = folder.appendingPathComponent("library/changes/\(later.description)")
        try Data("storesync-changes\t3\t\(later.peer.uuidString)\t1\t1\nE\n".utf8).write(to: file)
        await #expect { try await b.sync() } throws: { error in
            guard case SyncError.remote(_, let reason) = error else { return false }
            return reason.contains(later.description) && reason.contains("format 3")
        }
        #expect(try b.value(id, "name") == nil, "nothing of the pull was applied")
        // Once the later version's file is readable (here: gone), the same pull brings everything it held back.
        try FileManager.default.removeItem(at: file)
        try await b.sync()
        #expect(try b.value(id, "name") == .string("shared"))
    }
}
