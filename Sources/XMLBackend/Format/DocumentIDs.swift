import Foundation
import StoreAPI

/// The document ids (`z…`) of a written store's objects, computed from primary keys instead of stored in a table.
///
/// `idrefs` may name objects written later, so every id must be known before the first object is written. A table
/// from primary key to id grew with the store and made a conversion's memory depend on its size; here an object's
/// id is `primaryKey × roots + root + 1` — unique across hierarchies, no table — and what is kept per hierarchy is
/// only which keys exist (a bit per key for dense keys), so `idrefs` never name an object that is not in the file.
struct DocumentIDs {
    let rootCount: Int
    private(set) var present: [KeySet]
    /// One more than the largest id handed out (`nextObjectID` in `databaseInfo`).
    private(set) var next = 1

    init(rootCount: Int) {
        self.rootCount = max(1, rootCount)
        present = Array(repeating: KeySet(), count: self.rootCount)
    }

    /// The id of the record `primaryKey` in hierarchy `root`, or `nil` when it does not fit in 64 bits.
    func id(root: Int, primaryKey: Int64) -> Int? {
        let scaled = Int(primaryKey).multipliedReportingOverflow(by: rootCount)
        let id = scaled.partialValue.addingReportingOverflow(root + 1)
        return scaled.overflow || id.overflow ? nil : id.partialValue
    }

    /// Records that `primaryKey` exists in `root`; `false` when it was recorded already.
    mutating func insert(root: Int, primaryKey: Int64) -> Bool {
        guard present[root].insert(primaryKey) else { return false }
        if let id = id(root: root, primaryKey: primaryKey), id >= next { next = id &+ 1 }
        return true
    }

    func contains(root: Int, primaryKey: Int64) -> Bool { present[root].contains(primaryKey) }
}

/// A set of primary keys: a bitmap for the dense, non-negative keys stores hand out, a hash set for the rest
/// (negative keys, or keys far beyond how many there are, which would make the bitmap mostly empty).
struct KeySet {
    private var bits: [UInt64] = []
    private var others: Set<Int64> = []
    private var count = 0

    /// Adds `key`; `false` when it was there already.
    mutating func insert(_ key: Int64) -> Bool {
        if key >= 0 && key < Int64(max(1 << 20, 64 * (count + 1))) {
            let word = Int(key >> 6)
            if word >= bits.count { bits.append(contentsOf: repeatElement(0, count: max(word + 1 - bits.count, bits.count))) }
            let mask = UInt64(1) << UInt64(key & 63)
            guard bits[word] & mask == 0 else { return false }
            bits[word] |= mask
        } else {
            guard others.insert(key).inserted else { return false }
        }
        count += 1
        return true
    }

    func contains(_ key: Int64) -> Bool {
        if key >= 0 {
            let word = Int(key >> 6)
            if word < bits.count, bits[word] & (UInt64(1) << UInt64(key & 63)) != 0 { return true }
        }
        return !others.isEmpty && others.contains(key)
    }
}
