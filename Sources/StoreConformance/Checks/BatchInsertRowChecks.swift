import Foundation
import StoreAPI
import Testing

/// An error a batch's row closure throws, to see it come out of the batch unchanged.
struct RowProducerFailure: Error, Equatable {
    let row: Int
}

extension ConformanceSuite {
    /// ``StoreContext/insertBatch(_:count:globalIDs:into:row:)``, with history tracking off and (when the backend
    /// has it) on — stores that take pages insert untracked batches of entities without uniqueness constraints as
    /// pages, the others as records; both must store what inserting the same values as objects stores, and both
    /// must refuse a bad row, or a throwing closure, with nothing written, even when the bad row comes pages after
    /// the first.
    func checkBatchInsertRows(_ h: Harness) throws {
        var trackings = [false]
        if backend.capabilities.contains(.history) { trackings.append(true) }
        for tracking in trackings {
            let url = h.storeURL("batch-rows-\(tracking)")
            let (c, _) = try h.coordinator(url, options: StoreOptions(historyTracking: tracking))
            let ctx = c.newContext()
            let samples = Self.edgeSamples() + [
                // Values converted to their attributes' types on the way in.
                ["i16": .integer64(12), "i32": .double(-3), "dbl": .integer32(3), "flt": .double(0.5), "dec": .integer64(42),
                 "flag": .integer16(1), "label": .null],
            ]
            // The same values three ways: as objects (the reference), as dictionaries, as rows set in a closure.
            let objects = try samples.map { try ctx.insert("Sample", $0) }
            try ctx.save()
            let fromDictionaries = try ctx.insertBatch("Sample", samples)
            let fromRows = try ctx.insertBatch("Sample", count: samples.count) { i, row in
                // In the order the attributes are declared, backwards: the order of setting does not matter.
                for (name, value) in samples[i].sorted(by: { $0.key > $1.key }) { try row.set(name, value) }
            }
            #expect(fromRows.count == samples.count && Set(fromRows.map(\.primaryKey)).count == samples.count)
            // Read back through a context of their own, so every value comes from the store.
            let reader = c.newContext()
            for (i, object) in objects.enumerated() {
                let want = try reader.object(with: object.objectID).attributeValues()
                for id in [fromDictionaries[i], fromRows[i]] {
                    let got = try reader.object(with: id).attributeValues()
                    #expect(got == want, "row \(i) (tracking \(tracking)): \(got) vs \(want)")
                }
            }

            // Setting a value again replaces it; global IDs given are kept.
            let gid = UUID()
            let replaced = try ctx.insertBatch("Sample", count: 1, globalIDs: [gid]) { _, row in
                try row.set("str", "first")
                try row.set("str", "second")
            }
            let replacedObject = try ctx.object(with: replaced[0])
            #expect(try replacedObject.value(forKey: "str") == .string("second"))
            #expect(replacedObject.globalID == gid)

            try checkBatchRowsRefused(h, ctx, tracking: tracking)
            try h.close(c)
        }
    }

    /// Bad rows, found in the first row or pages after it, and a closure that throws: the batch fails with the
    /// row's error and nothing is written.
    private func checkBatchRowsRefused(_ h: Harness, _ ctx: StoreContext, tracking: Bool) throws {
        let before = try ctx.count(FetchRequest(entity: "Sample"))
        // More rows than one page of a batch holds (4 096), so a late failure comes after pages were inserted.
        let rows = 9_000
        func expectRefused(_ what: String, _ check: (any Error) -> Bool, failingAt bad: Int, _ set: (Int, inout BatchInsertRow) throws -> Void) {
            do {
                try ctx.insertBatch("Sample", count: rows) { i, row in
                    if i == bad { try set(i, &row) } else { try row.set("i32", .integer32(Int32(i))) }
                }
                Issue.record("\(what) (tracking \(tracking)): the batch should have been refused")
            } catch {
                #expect(check(error), "\(what) (tracking \(tracking)): got \(error)")
            }
        }
        for bad in [0, rows - 1] {
            expectRefused("unknown attribute", { if case StoreError.unknownProperty(_, "colour") = $0 { true } else { false } }, failingAt: bad) { _, row in
                try row.set("colour", "red")
            }
            expectRefused("wrong type", { if case StoreError.typeMismatch(_, "i32", _, _) = $0 { true } else { false } }, failingAt: bad) { _, row in
                try row.set("i32", .string("seven"))
            }
            expectRefused("missing required value", { if case StoreError.missingValue(_, "count", _) = $0 { true } else { false } }, failingAt: bad) { _, row in
                try row.set("count", .null)
            }
            expectRefused("the closure's own error", { ($0 as? RowProducerFailure) == RowProducerFailure(row: bad) }, failingAt: bad) { i, _ in
                throw RowProducerFailure(row: i)
            }
        }
        #expect(try ctx.count(FetchRequest(entity: "Sample")) == before, "refused batches wrote nothing (tracking \(tracking))")

        do {
            try ctx.insertBatch("Sample", count: -1) { _, _ in }
            Issue.record("a negative count should have been refused")
        } catch let error as StoreError {
            if case .invalidArgument = error {} else { Issue.record("a negative count: got \(error)") }
        }
        do {
            try ctx.insertBatch("Sample", count: 2, globalIDs: [UUID()]) { _, _ in }
            Issue.record("global IDs that do not match the count should have been refused")
        } catch let error as StoreError {
            if case .invalidArgument = error {} else { Issue.record("global IDs that do not match: got \(error)") }
        }
        #expect(try ctx.insertBatch("Sample", count: 0) { _, _ in Issue.record("no row is asked for") }.isEmpty)

        // The whole batch lands when every row is good, one record per row.
        let ids = try ctx.insertBatch("Sample", count: rows) { i, row in try row.set("i32", .integer32(Int32(i))) }
        #expect(try ctx.count(FetchRequest(entity: "Sample")) == before + rows)
        #expect(try ctx.object(with: ids[rows - 1]).value(forKey: "i32") == .integer32(Int32(rows - 1)))
        #expect(try ctx.object(with: ids[4_096]).value(forKey: "count") == .integer32(7), "defaults on later pages too")
    }
}
