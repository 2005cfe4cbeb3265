import Foundation
import StoreAPI
import Testing

extension ConformanceSuite {
    /// ``StoreContext/insertBatch(_:_:globalIDs:into:)``: rows land in one save with their defaults and global IDs,
    /// every kind of bad row fails the whole batch with nothing written, and the context's own work is untouched.
    func checkBatchInsert(_ h: Harness) throws {
        let url = h.storeURL()
        let tracking = backend.capabilities.contains(.history)
        let (c, store) = try h.coordinator(url, options: StoreOptions(historyTracking: tracking))
        let ctx = c.newContext()
        try ctx.insert("Tag", ["name": "stored"])
        try ctx.save()
        let tokenBefore = tracking ? try store.store.history(after: nil).last?.token : nil

        // An unsaved insert of the context's own stays pending through the batch.
        let pending = try ctx.insert("Tag", ["name": "pending"])
        let gids = [UUID(), UUID(), UUID()]
        let ids = try ctx.insertBatch("Tag", [["name": "a"], ["name": "b"], [:]], globalIDs: gids)
        #expect(ids.count == 3 && Set(ids.map(\.primaryKey)).count == 3, "one distinct key per row")
        #expect(ctx.hasChanges && pending.hasChanges, "the batch leaves the context's unsaved changes alone")
        for (i, id) in ids.enumerated() {
            let o = try ctx.object(with: id)
            #expect(o.globalID == gids[i], "row \(i) keeps its global ID")
            #expect(try o.value(forKey: "name") == [StoreValue.string("a"), .string("b"), .null][i])
        }
        try ctx.save()
        #expect(!ids.contains(pending.objectID), "a context insert never gets a batch's key")
        let samples = try ctx.insertBatch("Sample", [["str": "x", "i64": .integer64(.max)], ["dbl": .double(-0.0)]])
        let first = try ctx.object(with: samples[0])
        #expect(try first.value(forKey: "label") == .string("default label"), "left-out attributes take their defaults")
        #expect(try first.value(forKey: "count") == .integer32(7))
        #expect(try first.value(forKey: "i64") == .integer64(.max))

        // Rows inserted by batch link like any record afterwards.
        let author = try #require(try ctx.insertBatch("Author", [["name": "Batch", "country": "NZ"]]).first)
        let book = try ctx.insert("Book", ["title": "Linked", "isbn": "b-1"])
        try book.setObject(try ctx.object(with: author), forKey: "author")
        try ctx.save()
        #expect(try ctx.object(with: author).objects(forKey: "works").map(\.objectID) == [book.objectID])

        // Bad batches: each throws its typed error and writes nothing.
        let tagsBefore = try ctx.count(FetchRequest(entity: "Tag"))
        func expectRefused(_ what: String, _ check: (StoreError) -> Bool, _ body: () throws -> Void) {
            do {
                try body()
                Issue.record("\(what): the batch should have been refused")
            } catch let error as StoreError {
                #expect(check(error), "\(what): got \(error)")
            } catch {
                Issue.record("\(what): not a StoreError: \(error)")
            }
        }
        expectRefused("duplicate inside the batch", { if case .uniquenessViolation = $0 { true } else { false } }) {
            try ctx.insertBatch("Tag", [["name": "dup"], ["name": "other"], ["name": "dup"]])
        }
        expectRefused("conflict with a stored record", { if case .uniquenessViolation = $0 { true } else { false } }) {
            try ctx.insertBatch("Tag", [["name": "fresh"], ["name": "stored"]])
        }
        expectRefused("compound conflict", { if case .uniquenessViolation = $0 { true } else { false } }) {
            try ctx.insertBatch("Author", [["name": "Batch", "country": "NZ"]])
        }
        expectRefused("unknown attribute", { if case .unknownProperty(_, "colour") = $0 { true } else { false } }) {
            try ctx.insertBatch("Tag", [["name": "ok"], ["colour": "red"]])
        }
        expectRefused("wrong type", { if case .typeMismatch(_, "name", _, _) = $0 { true } else { false } }) {
            try ctx.insertBatch("Tag", [["name": .boolean(true)]])
        }
        expectRefused("missing required value", { if case .missingValue(_, "name", _) = $0 { true } else { false } }) {
            try ctx.insertBatch("Author", [["name": "Fine"], ["country": "AU"]])
        }
        expectRefused("abstract entity", { if case .abstractEntity = $0 { true } else { false } }) {
            try ctx.insertBatch("Work", [["title": "x"]])
        }
        expectRefused("global IDs that do not match the rows", { if case .invalidArgument = $0 { true } else { false } }) {
            try ctx.insertBatch("Tag", [["name": "g1"], ["name": "g2"]], globalIDs: [UUID()])
        }
        #expect(try ctx.count(FetchRequest(entity: "Tag")) == tagsBefore, "refused batches wrote nothing")
        #expect(try ctx.insertBatch("Tag", []).isEmpty)

        if tracking {
            let batch = try store.store.history(after: tokenBefore).first { t in t.changes.contains { $0.primaryKey == ids[0].primaryKey } }
            let recorded = try #require(batch, "the batch is a history transaction")
            #expect(recorded.changes.filter { $0.kind == .insert }.map(\.globalID) == gids)
        }
        if h.isPersistent {
            try h.close(c)
            let (reopened, _) = try h.coordinator(url, options: StoreOptions(historyTracking: tracking))
            let r = reopened.newContext()
            #expect(try r.object(with: ids[1]).value(forKey: "name") == .string("b"), "batch rows survive a reopen")
            try h.close(reopened)
        } else {
            try h.close(c)
        }
        try checkBatchInsertRows(h)
    }
}
