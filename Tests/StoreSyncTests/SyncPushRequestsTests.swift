import Foundation
import StoreAPI
@testable import StoreSync
import StoreTestSupport
import Testing

/// A push of more change files than one request holds sends a request while it makes the next one's files: the
/// files keep their order and names, each record is pushed once, and a name found taken mid-push (a backup restored
/// in place) moves the rest of the push to a new peer identity without losing or repeating a record.
@Suite("Sync push requests")
struct SyncPushRequestsTests {
    static let schema: Schema = {
        do {
            return try Schema(entities: [
                EntityDescription(name: "Item", attributes: [
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "count", type: .integer64),
                ]),
            ])
        } catch {
            preconditionFailure("the push request test schema is invalid: \(error)")
        }
    }()

    /// Records for more files than one request holds, and one more.
    static let records = SyncSession.recordsPerFile * SyncSession.filesPerRequest + 1

    private func insert(_ r: Replica, _ count: Int, _ label: String) throws {
        let c = r.context()
        for i in 0..<count { try c.insert("Item", ["name": .string("\(label) \(i)"), "count": .integer64(Int64(i))]) }
        try c.save()
    }

    @Test func aNameTakenMidPushMovesTheRestToANewPeerAndLosesNothing() async throws {
        let dir = try TemporaryDirectory("sync-push-requests")
        let remote = InMemoryRemote()
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote, schema: Self.schema)
        try insert(a, 1, "first")
        try await a.sync()
        let backup = try a.coordinator.backupStore(a.loaded, to: dir.path("nightly.sqlite"))
        try insert(a, 1, "after the backup")
        try await a.sync()
        // Restored in place: its next file name (sequence 2) is taken, found in the first request of a push of more
        // files than one request holds.
        let restored = try a.coordinator.restoreStore(a.loaded, fromBackupAt: backup.url)
        try a.adopt(restored)
        try insert(a, Self.records, "after the restore")
        let report = try await a.sync()
        #expect(report.becameNewPeer)
        #expect(report.pushedRecords == Self.records, "each record pushed once")
        #expect(report.pushedFiles == SyncSession.filesPerRequest + 1)
        // Every file on the remote is a whole change file, its peer's sequences without a gap.
        var sequences: [UUID: [Int64]] = [:]
        var pushed = 0
        for name in try await remote.list(after: nil).names {
            let batch = try #require(ChangeBatch.decode(try await remote.fetch(name)))
            #expect(batch.peer == name.peer && batch.sequence == name.sequence)
            sequences[name.peer, default: []].append(name.sequence)
            pushed += batch.changes.count
        }
        #expect(pushed == Self.records + 2)
        for (_, list) in sequences { #expect(list == Array(1...Int64(list.count))) }
        let b = try Replica(dir.path("b.sqlite"), type: "sqlite", remote: remote, schema: Self.schema)
        try await b.sync()
        try await a.sync()
        #expect(try b.count("Item") == Self.records + 2)
        #expect(try a.differences(from: b).isIdentical)
    }
}
