import Foundation

/// In a bulk load, the `Z_ENT` of each row inserted into a hierarchy whose records a to-one with an entity column
/// (`Z<n>_<REL>`) points at, so that the rows pointing at them get it without a query per row.
///
/// One byte per key: the position of the row's entity number among the hierarchy's (a hierarchy has few entities).
/// Keys from 1 up to ``keyLimit`` are kept; a row beyond it, or not inserted by the load, is looked up in the table.
/// An update or delete in the load may change or remove a row, so either empties the whole map.
struct CoreDataLoadedEntities {
    fileprivate struct Hierarchy {
        var numbers: [Int64] = []
        /// `numbers[byKey[k] - 1]` is key `k`'s, `0` when not known.
        var byKey: [UInt8] = []
    }

    /// The highest key kept: a map of a sparse hierarchy stays bounded.
    static let keyLimit: Int64 = 1 << 22

    private var hierarchies: [String: Hierarchy] = [:]

    /// Keeps `number` as the entity number of `keys` of `root`.
    mutating func insert(_ keys: [Int64], number: Int64, root: String) {
        guard let highest = keys.max(), let lowest = keys.min(), lowest > 0 else { return }
        var h = hierarchies.removeValue(forKey: root) ?? Hierarchy()
        defer { hierarchies[root] = h }
        let slot: Int
        if let known = h.numbers.firstIndex(of: number) {
            slot = known + 1
        } else {
            guard h.numbers.count < Int(UInt8.max) else { return }
            h.numbers.append(number)
            slot = h.numbers.count
        }
        let top = Int(min(highest, Self.keyLimit))
        if h.byKey.count <= top { h.byKey.append(contentsOf: repeatElement(0, count: top + 1 - h.byKey.count)) }
        for k in keys where k <= Self.keyLimit { h.byKey[Int(k)] = UInt8(slot) }
    }

    /// The entity number kept for record `key` of `root`, `nil` when none is.
    func number(root: String, key: Int64) -> Int64? {
        numbers(root: root).number(key: key)
    }

    /// What is kept of `root`, for looking up the keys of many rows with one lookup of the hierarchy (a copy: what
    /// is inserted afterwards is not in it).
    func numbers(root: String) -> Numbers { Numbers(hierarchy: hierarchies[root]) }

    /// The entity numbers kept of one hierarchy (see ``numbers(root:)``).
    struct Numbers {
        fileprivate let hierarchy: Hierarchy?

        /// The entity number kept for record `key`, `nil` when none is.
        func number(key: Int64) -> Int64? {
            guard key > 0, key <= CoreDataLoadedEntities.keyLimit, let h = hierarchy, Int(key) < h.byKey.count else { return nil }
            let slot = Int(h.byKey[Int(key)])
            return slot == 0 ? nil : h.numbers[slot - 1]
        }
    }

    mutating func removeAll() { hierarchies = [:] }

    var isEmpty: Bool { hierarchies.isEmpty }
}
