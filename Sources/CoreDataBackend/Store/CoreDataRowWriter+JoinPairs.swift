import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// A bulk load's rows of an unordered many-to-many, gathered from a page's records by the side of the join table
/// that writes them (``CoreDataRowWriter/writesJoinRows(_:owner:members:_:_:pending:)``) and inserted many pairs to
/// a statement.
extension CoreDataRowWriter {
    /// Inserts the pairs (owner, member, flattened) this side of the unordered join `link` writes, as
    /// ``writeMembers(_:_:_:_:isInsert:inserted:pending:joinStatement:highest:)`` inserts them for each owner, in
    /// statements of ``CoreDataWritePlan/JoinLink/bulkBatchPairs`` pairs; with `all` the last, shorter, statement
    /// is padded with repeats of its last pair (which add nothing: the pair is there), else those pairs are left in
    /// `pairs` for later.
    func insertJoinPairs(
        _ link: CoreDataWritePlan.JoinLink, _ pairs: inout [Int64], all: Bool, pending: inout CoreDataPendingLinks
    ) throws {
        let size = CoreDataWritePlan.JoinLink.bulkBatchPairs
        let count = pairs.count / 2
        var at = 0
        while at < count, all || count - at >= size {
            let real = min(size, count - at)
            let statement = try db.statement(link.bulkBatchUpsertSQL)
            let inserted = try db.runBatch(statement, sql: link.bulkBatchUpsertSQL) { s in
                for j in 0..<size {
                    let pair = at + min(j, real - 1)
                    let parameter = Int32(2 * j + 1)
                    guard sqlite3_bind_int64(s, parameter, pairs[2 * pair]) == SQLITE_OK,
                        sqlite3_bind_int64(s, parameter + 1, pairs[2 * pair + 1]) == SQLITE_OK
                    else { return false }
                }
                return true
            }
            let written: Int
            if let inserted {
                written = inserted
            } else {
                // Refused as a whole: pair by pair, for the error of the owner at fault.
                written = try insertJoinPairsOneByOne(link, pairs, at..<(at + real))
            }
            // Each pair either went in as a new row or met one there already (and did nothing); only when every
            // one went in are the table's rows still exactly the pairs counted.
            if written == real, pending.rewrittenJoins.isEmpty || !pending.rewrittenJoins.contains(link.table) {
                let table = CoreDataPendingLinks.JoinTable(link.table)
                // Out of the map while pairs are added: one lookup per statement, not one per pair.
                var sum = pending.writtenJoins.removeValue(forKey: table) ?? PairSetChecksum()
                for pair in at..<(at + real) { sum.add(pairs[2 * pair + 1], pairs[2 * pair]) }
                pending.writtenJoins[table] = sum
            } else {
                pending.rewrittenJoins.insert(link.table)
            }
            at += real
        }
        pairs.removeFirst(2 * at)
    }

    /// Inserts the pairs in `range` a statement each, a refused one naming its owner; returns how many went in.
    private func insertJoinPairsOneByOne(_ link: CoreDataWritePlan.JoinLink, _ pairs: [Int64], _ range: Range<Int>) throws -> Int {
        var written = 0
        for pair in range {
            written += try refusingDuplicates(table: link.table, pk: pairs[2 * pair]) { () throws(StoreError) in
                try db.run(link.bulkUpsertSQL, rows: 1) { _, bind in
                    bind(1, pairs[2 * pair])
                    bind(2, pairs[2 * pair + 1])
                }
            }
        }
        return written
    }
}
