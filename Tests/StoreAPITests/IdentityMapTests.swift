import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// A context's identity map: one object per record while someone holds it, released when nobody does, and objects
/// that outlive their context (or were forgotten by it) fail cleanly instead of reaching back into it.
@Suite struct IdentityMapTests {
    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string, isOptional: true)]),
        ])
    }

    /// A coordinator over one in-memory store holding `count` saved notes; returns their IDs.
    static func populated(_ count: Int) throws -> (StoreCoordinator, [ObjectID]) {
        let coordinator = StoreCoordinator(schema: try schema())
        try coordinator.addStore(StoreDescription(url: nil, type: "memory"))
        let context = coordinator.newContext()
        let ids = try (0..<count).map { try context.insert("Note", ["text": .string("note \($0)")]).objectID }
        try context.save()
        return (coordinator, ids)
    }

    @Test func sameObjectWhileHeldFreshOneAfterRelease() throws {
        let (coordinator, ids) = try Self.populated(3)
        let context = coordinator.newContext()
        weak var released: ManagedObject?
        do {
            let a = try context.object(with: ids[0])
            #expect(try context.object(with: ids[0]) === a)
            released = a
        }
        #expect(released == nil, "a clean object nobody holds is not kept alive by its context")
        let again = try context.object(with: ids[0])
        #expect(try again.value(forKey: "text") == .string("note 0"))
        #expect(try context.object(with: ids[0]) === again)
    }

    @Test func changedObjectsStayAliveUntilSaved() throws {
        let (coordinator, ids) = try Self.populated(1)
        let context = coordinator.newContext()
        weak var probe: ManagedObject?
        do {
            let o = try context.object(with: ids[0])
            try o.setValue(.string("changed"), forKey: "text")
            probe = o
        }
        #expect(probe != nil, "an object with unsaved changes is held by its context")
        #expect(try context.object(with: ids[0]).value(forKey: "text") == .string("changed"))
        try context.save()
        #expect(probe == nil, "once saved, nothing holds it")
        let reader = coordinator.newContext()
        #expect(try reader.object(with: ids[0]).value(forKey: "text") == .string("changed"))
    }

    @Test func objectOutlivingItsContextThrows() throws {
        let (coordinator, ids) = try Self.populated(2)
        var context: StoreContext? = coordinator.newContext()
        let clean = try #require(try context?.object(with: ids[0]))
        let inserted = try #require(try context?.insert("Note", ["text": "unsaved"]))
        let deleted = try #require(try context?.object(with: ids[1]))
        try context?.delete(deleted)
        try context?.save()
        context = nil
        for o in [clean, inserted, deleted] {
            #expect(throws: StoreError.self) { try o.value(forKey: "text") }
            #expect(throws: StoreError.self) { try o.setValue(.string("x"), forKey: "text") }
        }
    }

    @Test func objectsFromBeforeAResetDoNotDisplaceNewerOnes() throws {
        let (coordinator, ids) = try Self.populated(1)
        let context = coordinator.newContext()
        var old: ManagedObject? = try context.object(with: ids[0])
        context.reset()
        let newer = try context.object(with: ids[0])
        #expect(newer !== old)
        #expect(throws: StoreError.self) { try old?.value(forKey: "text") }
        old = nil  // its release must not take the newer object's entry
        #expect(try context.object(with: ids[0]) === newer)
    }

    @Test func rolledBackAndDeletedInsertsAreForgotten() throws {
        let (coordinator, _) = try Self.populated(0)
        let context = coordinator.newContext()
        let rolledBack = try context.insert("Note", ["text": "a"])
        context.rollback()
        let deletedUnsaved = try context.insert("Note", ["text": "b"])
        try context.delete(deletedUnsaved)
        for o in [rolledBack, deletedUnsaved] {
            #expect(throws: StoreError.self) { try o.value(forKey: "text") }
        }
        #expect(!context.hasChanges)
        try context.save()
        #expect(try context.count(FetchRequest(entity: "Note")) == 0)
    }

    @Test func manyFetchedObjectsAreReleasedAsTheyGo() throws {
        let (coordinator, ids) = try Self.populated(2_000)
        let context = coordinator.newContext()
        weak var first: ManagedObject?
        for (i, id) in ids.enumerated() {
            let o = try context.object(with: id)
            if i == 0 { first = o }
            #expect(try o.value(forKey: "text") == .string("note \(i)"))
        }
        #expect(first == nil)
        let all = try context.fetch(FetchRequest(entity: "Note"))
        #expect(all.count == ids.count)
        #expect(try context.object(with: ids[0]) === all.first { $0.objectID == ids[0] })
    }

    /// Objects of two stores and two hierarchies are taken and let go in a random order, thousands of times: every
    /// object still held is the one the context hands out for its ID, and every one let go is gone. (The map is an
    /// open-addressed table whose deletions move later entries back; a wrong move loses an entry, and the context
    /// then hands out a second object for the same record.)
    @Test func randomTakesAndReleasesKeepOneObjectPerRecord() throws {
        let schema = try Schema(entities: [
            EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string, isOptional: true)]),
            EntityDescription(name: "Tag", attributes: [AttributeDescription(name: "text", type: .string, isOptional: true)]),
        ])
        let coordinator = StoreCoordinator(schema: schema)
        let stores = try (0..<2).map { _ in try coordinator.addStore(StoreDescription(url: nil, type: "memory")) }
        let writer = coordinator.newContext()
        var ids: [ObjectID] = []
        for store in stores {
            for entity in ["Note", "Tag"] {
                for i in 0..<700 { ids.append(try writer.insert(entity, ["text": .string("\(entity) \(i)")], into: store).objectID) }
            }
        }
        try writer.save()

        let context = coordinator.newContext()
        var held: [Int: ManagedObject] = [:]
        var random = SeededGenerator(seed: 0x1D_E47)  // SplitMix64, so a failing sequence can be replayed
        for step in 0..<20_000 {
            let i = Int(random.next() % UInt64(ids.count))
            if held[i] != nil, random.next() % 2 == 0 {
                held[i] = nil  // released: the context's entry goes with it
            } else {
                let o = try context.object(with: ids[i])
                if let h = held[i] { #expect(o === h, "step \(step): a second object for \(ids[i])") }
                held[i] = o
            }
            if step % 997 == 0 {
                for (j, o) in held { #expect(try context.object(with: ids[j]) === o) }
            }
        }
        for (j, o) in held {
            #expect(try context.object(with: ids[j]) === o)
            #expect(try o.value(forKey: "text") == .string("\(ids[j].entity) \((j % 1400) % 700)"))
        }
    }
}
