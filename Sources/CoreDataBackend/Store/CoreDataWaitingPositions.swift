import Foundation

/// In a bulk load, the positions of ordered to-many members whose owner's list arrived before their rows, by the
/// member's key: two bytes per key, the position divided by ``CoreDataRowWriter/orderSpacing``.
///
/// A transfer saves a store entity by entity, so the members of every ordered list usually arrive after their owner,
/// and all of their positions wait at once. Kept by key they cost two bytes each and no hashing, and nothing spills
/// to ``CoreDataSpilledPositions`` (a statement to keep a position and one to read it, per member). Keys from 1 up to
/// ``keyLimit`` and positions of lists of up to 65,535 members are kept here; any other position is kept by
/// ``CoreDataPendingLinks`` as before.
struct CoreDataWaitingPositions {
    /// The highest key kept by default: the slots of a sparse table stay bounded.
    static let defaultKeyLimit: Int64 = 1 << 22

    /// The highest key kept (tests lower it, so that positions go to the map and the temporary table too).
    var keyLimit = Self.defaultKeyLimit

    /// Keys per chunk of slots (128 KiB of them).
    private static let chunkBits = 16

    /// One order column: member `k`'s position over the spacing is slot `k & mask` of chunk `k >> chunkBits`, `0`
    /// when none waits. Chunks are made as keys reach them, each at its full size: one array grown to the highest
    /// key would be copied as it grows, and old and new copies together take three times what the slots need.
    private struct Column {
        let table: String
        let order: String
        var chunks: [[UInt16]] = []
    }

    private var columns: [Column] = []

    /// Keeps `position` for `member` in `order` of `table`; `false`, keeping nothing, when it does not fit here.
    mutating func set(_ position: Int64, member: Int64, table: String, order: String) -> Bool {
        let spacing = CoreDataRowWriter.orderSpacing
        guard member > 0, member <= keyLimit, position > 0, position % spacing == 0,
            position / spacing <= Int64(UInt16.max)
        else { return false }
        let c: Int
        if let known = column(table: table, order: order) {
            c = known
        } else {
            c = columns.count
            columns.append(Column(table: table, order: order))
        }
        let k = Int(member)
        let chunk = k >> Self.chunkBits
        while columns[c].chunks.count <= chunk { columns[c].chunks.append([]) }
        if columns[c].chunks[chunk].isEmpty {
            columns[c].chunks[chunk] = [UInt16](repeating: 0, count: 1 << Self.chunkBits)
        }
        columns[c].chunks[chunk][k & ((1 << Self.chunkBits) - 1)] = UInt16(position / spacing)
        return true
    }

    /// The position kept for `member` in `order` of `table`, removed; `nil` when none is.
    mutating func take(member: Int64, table: String, order: String) -> Int64? {
        guard !columns.isEmpty, member > 0, let c = column(table: table, order: order) else { return nil }
        let k = Int(member)
        let chunk = k >> Self.chunkBits
        guard chunk < columns[c].chunks.count, !columns[c].chunks[chunk].isEmpty else { return nil }
        let at = k & ((1 << Self.chunkBits) - 1)
        let slot = columns[c].chunks[chunk][at]
        guard slot != 0 else { return nil }
        columns[c].chunks[chunk][at] = 0
        return Int64(slot) * CoreDataRowWriter.orderSpacing
    }

    /// Forgets everything kept (the load is over, or a later position went elsewhere for every member).
    mutating func removeAll() { columns = [] }

    var isEmpty: Bool { columns.isEmpty }

    /// A linear search: a store has few ordered relationships, and comparing names that are usually the same string
    /// is cheaper than hashing them for every member.
    private func column(table: String, order: String) -> Int? {
        columns.firstIndex { $0.table == table && $0.order == order }
    }
}
