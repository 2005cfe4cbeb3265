import Foundation
import StoreAPI

/// Context inserts and fetch-by-ID on the SQLite backend beside raw C prepared statements.
enum SQLiteSection {
    /// Returns false when a sanity check fails (the benchmark then exits non-zero).
    static func run(count: Int) throws -> Bool {
        let dir = try Measure.temporaryDirectory("sqlite")
        defer { try? FileManager.default.removeItem(at: dir) }
        let description = StoreDescription(url: dir.appendingPathComponent("ours.sqlite"), type: "sqlite")
        let rawURL = dir.appendingPathComponent("raw.sqlite")

        let inputs = BenchData.Inputs(count: count)
        let rawInsert = try RawSQLite.insert(at: rawURL, count: count, inputs: inputs)
        let rawIndexed = try RawSQLite.insert(at: dir.appendingPathComponent("raw-indexed.sqlite"), count: count, inputs: inputs,
                                              uniqueRef: true)
        let (oursInsert, sample) = try ContextBench.insert(into: description, count: count, inputs: inputs)
        let oursFetch = try ContextBench.fetchByID(description, ids: sample)
        let (oursBatch, batchStored) = try ContextBench.insertBatch(
            into: StoreDescription(url: dir.appendingPathComponent("batch.sqlite"), type: "sqlite"), count: count, inputs: inputs)
        let (oursRows, rowsStored) = try ContextBench.insertBatchRows(
            into: StoreDescription(url: dir.appendingPathComponent("batch-rows.sqlite"), type: "sqlite"), count: count, inputs: inputs)
        let rawFetch = try RawSQLite.fetch(at: rawURL, rowids: (0..<sample.count).map { Int64($0 * max(1, count / 100_000) + 1) })

        // Sanity: the store holds what was inserted.
        let check = StoreCoordinator(schema: try BenchData.schema())
        try check.addStore(description)
        let stored = try check.newContext().count(FetchRequest(entity: "Item"))
        for s in check.stores { try check.removeStore(s) }

        Report.print([
            BenchRow(name: "sqlite: insert through context", count: count, ours: oursInsert, reference: rawInsert,
                     referenceName: "sqlite3 C prepared INSERT, 1 txn"),
            BenchRow(name: "sqlite: insert through context", count: count, ours: oursInsert, reference: rawIndexed,
                     referenceName: "same + UNIQUE index on the UUID", note: "the store indexes every global ID"),
            BenchRow(name: "sqlite: batch insert through context", count: count, ours: oursBatch, reference: rawIndexed,
                     referenceName: "prepared INSERT + UNIQUE UUID, 1 txn", note: "insertBatch: 1 save, no objects"),
            BenchRow(name: "sqlite: batch insert, rows from a closure", count: count, ours: oursRows, reference: rawIndexed,
                     referenceName: "prepared INSERT + UNIQUE UUID, 1 txn", note: "insertBatch(count:row:): no row dictionaries"),
            BenchRow(name: "sqlite: fetch by object ID", count: sample.count, ours: oursFetch, reference: rawFetch,
                     referenceName: "sqlite3 C SELECT by rowid"),
        ], title: "SQLite, \(count) records")
        if rowsStored != count {
            print("error: the store of batch rows holds \(rowsStored) items, expected \(count)")
            return false
        }
        if batchStored != count {
            print("error: the batch-inserted store holds \(batchStored) items, expected \(count)")
            return false
        }
        if stored != count {
            print("error: the store holds \(stored) items, expected \(count)")
            return false
        }
        return true
    }
}
