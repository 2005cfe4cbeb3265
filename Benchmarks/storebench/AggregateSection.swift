import Foundation
import GRDB
import StoreAPI
import StoreModels

/// Aggregates on the typed layer beside GRDB running the same SQL: a sum per group over every record (the
/// typed section's 10-integer record; `i3` has ten values), and the same through the untyped context.
enum AggregateSection {
    /// Returns false when the two sides disagree.
    static func run(count: Int, runs: Int) throws -> Bool {
        let dir = try Measure.temporaryDirectory("aggregate")
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = try TypedSection.openTyped(dir.appendingPathComponent("typed-aggregate.sqlite"))
        let models = (0..<count).map { TypedItem($0, of: count) }
        try blocking { try await db.write { tx in for m in models { try tx.insert(m) } } }
        let pool = try TypedSection.openGRDB(dir.appendingPathComponent("grdb-aggregate.sqlite"))
        let records = (0..<count).map { GRDBItem($0, of: count) }
        try blocking { try await pool.write { db in for rec in records { try rec.insert(db) } } }

        var ok = true
        var typed: [Double] = [], untyped: [Double] = [], grdb: [Double] = []
        for _ in 0..<runs {
            let (ours, t) = try Measure.cpu { try blocking { try await db.read { try $0.sum(\TypedItem.i1, groupedBy: \.i3) } } }
            typed.append(t)
            let (rows, u) = try Measure.cpu {
                try db.coordinator.newContext().aggregate(AggregateRequest(entity: "TypedItem", groupBy: ["i3"], aggregates: [.sum("i1")]))
            }
            untyped.append(u)
            let (theirs, g) = try Measure.cpu {
                try blocking {
                    try await pool.read { db in
                        try Row.fetchAll(db, sql: "SELECT i3, SUM(i1) FROM item GROUP BY i3 ORDER BY i3").map { ($0[0] as Int, $0[1] as Int) }
                    }
                }
            }
            grdb.append(g)
            ok = ours.map(\.key) == theirs.map(\.0) && ours.map(\.value) == theirs.map(\.1) && rows.count == theirs.count && ok
        }
        Report.print([
            BenchRow(name: "typed sum grouped by a column", count: count, ours: typed.min() ?? 0, reference: grdb.min(),
                     referenceName: "GRDB, the same GROUP BY"),
            BenchRow(name: "context aggregate, the same", count: count, ours: untyped.min() ?? 0, reference: grdb.min(),
                     referenceName: "GRDB, the same GROUP BY"),
        ], title: "aggregates beside GRDB \(TypedSection.grdbVersion), sqlite")
        try db.close()
        try pool.close()
        if !ok { print("aggregate section: our sums differ from GRDB's") }
        return ok
    }
}
