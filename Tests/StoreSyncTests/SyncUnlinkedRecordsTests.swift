import Foundation
import StoreAPI
@testable import StoreSync
import StoreTestSupport
import Testing

/// Records of an entity nothing links to (notes beside the library's books): a pull inserts them without objects,
/// in the same one save as the linked records it brings; later updates and deletes of them sync both ways.
@Suite("Sync of unlinked records")
struct SyncUnlinkedRecordsTests {
    /// The library schema and `Note`, which has no relationship and is the destination of none.
    static let schema: Schema = {
        do {
            return try Schema(entities: SyncFixtures.schema.entities.map(\.definition) + [
                EntityDescription(name: "Note", attributes: [
                    AttributeDescription(name: "text", type: .string),
                    AttributeDescription(name: "rank", type: .integer64),
                    AttributeDescription(name: "weight", type: .double),
                ]),
            ])
        } catch {
            preconditionFailure("the unlinked-records schema is invalid: \(error)")
        }
    }()

    private func note(_ r: Replica, _ id: UUID, in c: StoreContext) throws -> ManagedObject? {
        try c.fetch(FetchRequest(entity: "Note")).first { $0.globalID == id }
    }

    /// Value `key` of the note, `nil` when the replica holds no such note.
    private func value(_ r: Replica, _ id: UUID, _ key: String) throws -> StoreValue? {
        let c = r.context()
        return try note(r, id, in: c)?.value(forKey: key)
    }

    @Test(arguments: SyncFixtures.remoteKinds)
    func unlinkedRecordsArriveInThePullsOneSaveAndLaterChangesSync(kind: RemoteKind) async throws {
        let dir = try TemporaryDirectory()
        let remote = try kind.make(container: "unlinked")
        let a = try Replica(dir.url.appendingPathComponent("a.sqlite"), type: "sqlite", remote: remote, schema: Self.schema)
        let context = a.context()
        var notes: [UUID] = []
        for i in 0..<300 {
            let values: [String: StoreValue] = ["text": .string("note \(i)\t\"x\"\n"), "rank": .integer64(Int64(i)), "weight": .double(Double(i) / 4)]
            notes.append(try context.insert("Note", i % 7 == 0 ? ["text": .string("sparse \(i)")] : values).globalID)
        }
        let author = try context.insert("Author", ["name": "Le Guin"])
        let book = try context.insert("Book", ["title": "The Dispossessed"])
        try book.setObject(author, forKey: "author")
        try context.save()
        // One note deleted before the other peer ever sees it: it never arrives there.
        try context.delete(try #require(try note(a, notes[1], in: context)))
        try context.save()
        try await a.sync()

        let b = try Replica(dir.url.appendingPathComponent("b.sqlite"), type: "sqlite", remote: remote, schema: Self.schema)
        let before = try b.loaded.store.history(after: nil).last?.token
        let pulled = try await b.sync()
        #expect(pulled.insertedRecords == 299 + 2)
        let saves = try b.loaded.store.history(after: before).filter { $0.author == SyncEngine.historyAuthor }
        #expect(saves.count == 1, "the pull is one save")
        #expect(Set(saves.first?.changes.filter { $0.entity == "Note" && $0.kind == .insert }.map(\.globalID) ?? [])
                == Set(notes).subtracting([notes[1]]), "the save's history lists every note it inserted")
        #expect(try b.count("Note") == 299)
        #expect(try value(b, notes[1], "text") == nil)
        #expect(try value(b, notes[2], "text") == .string("note 2\t\"x\"\n"))
        #expect(try value(b, notes[7], "rank") == .null, "values never set stay unset")
        #expect(try b.differences(from: a).isIdentical)
        let idle = try await b.sync()
        #expect(idle.pulledFiles == 0 && idle.pushedFiles == 0, "nothing of the pull is pushed back")

        // Changed on b, changed and deleted on a: each side's changes reach the other.
        let cb = b.context()
        try #require(try note(b, notes[3], in: cb)).setValue(.string("edited on b"), forKey: "text")
        try cb.delete(try #require(try note(b, notes[4], in: cb)))
        try cb.save()
        let ca = a.context()
        try #require(try note(a, notes[5], in: ca)).setValue(.integer64(-5), forKey: "rank")
        try ca.delete(try #require(try note(a, notes[6], in: ca)))
        let late = try ca.insert("Note", ["text": "late"]).globalID
        try ca.save()
        try await b.sync()
        try await a.sync()
        try await b.sync()
        #expect(try value(a, notes[3], "text") == .string("edited on b"))
        #expect(try value(a, notes[4], "text") == nil)
        #expect(try value(b, notes[5], "rank") == .integer64(-5))
        #expect(try value(b, notes[6], "text") == nil)
        #expect(try value(b, late, "text") == .string("late"))
        #expect(try a.count("Note") == 298 && b.count("Note") == 298)
        #expect(try b.differences(from: a).isIdentical)
    }
}
