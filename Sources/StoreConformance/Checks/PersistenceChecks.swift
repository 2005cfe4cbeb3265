import Foundation
import StoreAPI
import Testing

extension ConformanceSuite {
    /// Every record of every entity, raw from the store, by global ID.
    static func dump(_ store: any PersistentStore, schema: Schema) throws -> [UUID: Record] {
        var out: [UUID: Record] = [:]
        for e in schema.entities where !e.isAbstract {
            var after: Int64? = nil
            var scanned: [Int64] = []
            while true {
                let page = try store.scan(entity: e.name, after: after, limit: 7)
                for r in page { out[r.globalID] = r }
                scanned += page.map(\.primaryKey)
                guard let last = page.last, page.count == 7 else { break }
                after = last.primaryKey
            }
            // Keys alone, paged differently: the same keys in the same order.
            var keys: [Int64] = []
            after = nil
            while true {
                let page = try store.scanKeys(entity: e.name, after: after, limit: 5)
                keys += page
                guard let last = page.last, page.count == 5 else { break }
                after = last
            }
            #expect(keys == scanned, "scanKeys lists the keys scan returns, for \(e.name)")
        }
        return out
    }

    func checkPersistence(_ h: Harness) throws {
        let url = h.storeURL()
        let (c, store) = try h.coordinator(url)
        let ctx = c.newContext()
        try Self.populateCatalog(ctx)
        for values in Self.edgeSamples().prefix(3) { try ctx.insert("Sample", values) }
        try ctx.save()
        let before = try Self.dump(store.store, schema: h.schema)
        #expect(before.count == 21 + 4 + 3 + 3, "scan pages through every record of every entity")
        let ids = Dictionary(uniqueKeysWithValues: try ctx.fetch(FetchRequest(entity: "Work")).map { ($0.globalID, $0.objectID) })
        try h.close(c)

        let (c2, s2) = try h.coordinator(url)
        let after = try Self.dump(s2.store, schema: h.schema)
        #expect(after.count == before.count)
        for (gid, record) in before {
            let entity = try #require(h.schema.entity(named: record.entity))
            let reread = try #require(after[gid], "record \(record.key) is missing after reopen")
            #expect(h.sameRecord(reread, record, in: entity), "record \(record.key) changed across close and reopen")
        }
        // Object IDs are permanent: the same ID finds the same record after reopen.
        let r = c2.newContext()
        for (gid, oid) in ids {
            #expect(try r.object(with: oid).globalID == gid)
            let uri = oid.uriRepresentation
            #expect(ObjectID(uri: uri) == oid)
        }
        // Keys allocated after reopen never collide with existing ones, nor with deleted ones.
        let fresh = try r.insert("Tag", ["name": "new"])
        #expect(!after.values.contains { $0.entity == "Tag" && $0.primaryKey == fresh.objectID.primaryKey })
        try r.save()
        let deletedKey = fresh.objectID.primaryKey
        try r.delete(fresh)
        try r.save()
        try h.close(c2)
        let (c3, _) = try h.coordinator(url)
        let r3 = c3.newContext()
        let later = try r3.insert("Tag", ["name": "later"])
        #expect(later.objectID.primaryKey > deletedKey, "a deleted record's key must never be handed out again")
        try r3.save()
        try h.close(c3)
    }

    func checkAtomicSave(_ h: Harness) throws {
        let url = h.storeURL()
        let (c, store) = try h.coordinator(url)
        let ctx = c.newContext()
        let existing = try ctx.insert("Tag", ["name": "existing"])
        try ctx.save()
        let tag = try #require(h.schema.entity(named: "Tag"))
        let first = try store.store.allocatePrimaryKeys(root: "Tag", count: 2)
        let good = tag.newRecord(primaryKey: first)
        var clash = tag.newRecord(primaryKey: existing.objectID.primaryKey)
        clash.attributes[0] = "clash"
        #expect(throws: (any Error).self, "inserting a record over an existing key must fail") {
            try store.store.save(StoreChanges(inserted: [good, clash]))
        }
        var ghost = tag.newRecord(primaryKey: first + 1)
        ghost.attributes[0] = "ghost"
        #expect(throws: (any Error).self, "updating a record that does not exist must fail") {
            try store.store.save(StoreChanges(inserted: [good], updated: [ghost]))
        }
        #expect(try store.store.records(withKeys: [first], root: "Tag").isEmpty, "a failed save must write nothing")
        #expect(try store.store.count(FetchRequest(entity: "Tag")) == 1)
        #expect(try store.store.fetch(FetchRequest(entity: "Tag")).first?.attributes[0] == "existing")
        try h.close(c)
    }

    func checkHistory(_ h: Harness) throws {
        let url = h.storeURL()
        let options = StoreOptions(historyTracking: true)
        let (c, store) = try h.coordinator(url, options: options)
        let ctx = c.newContext()
        ctx.author = "tester"
        ctx.name = "editor"
        let t1 = try ctx.insert("Tag", ["name": "one"])
        let t2 = try ctx.insert("Tag", ["name": "two"])
        try ctx.save()
        try t1.setValue("uno", forKey: "name")
        try ctx.save()
        ctx.author = nil
        ctx.name = nil
        try ctx.delete(t2)
        try ctx.save()
        let history = try store.store.history(after: nil)
        try #require(history.count == 3)
        #expect(history[0].token < history[1].token && history[1].token < history[2].token)
        #expect(history[0].author == "tester" && history[2].author == nil)
        #expect(history[0].contextName == "editor" && history[2].contextName == nil)
        #expect(history.allSatisfy { $0.processName == ProcessInfo.processInfo.processName },
                "every save names the process that made it")
        #expect(history[0].changes.map(\.kind) == [.insert, .insert])
        #expect(Set(history[0].changes.map(\.globalID)) == [t1.globalID, t2.globalID])
        #expect(history[1].changes.count == 1 && history[1].changes[0].kind == .update)
        #expect(history[1].changes[0].changedKeys == ["name"])
        #expect(history[2].changes.first?.kind == .delete)
        #expect(history[2].changes.first?.globalID == t2.globalID, "the tombstone holds the global ID")
        #expect(history[2].changes.first?.tombstone["name"] == "two", "the tombstone holds the unique values")
        #expect(try store.store.history(after: history[0].token).map(\.token) == [history[1].token, history[2].token])
        try h.close(c)

        if isPersistentBackend {
            let (c2, s2) = try h.coordinator(url, options: options)
            #expect(try s2.store.history(after: nil) == history, "history survives a reopen")
            try h.close(c2)
        }
    }

    var isPersistentBackend: Bool { backend.capabilities.contains(.persistent) }
}
