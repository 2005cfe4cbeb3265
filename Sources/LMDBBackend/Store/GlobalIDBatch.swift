import CLMDB
import Foundation
import StoreAPI

/// The global-ID index entries of one save, collected while its records are written and stored together at the
/// end, in key order.
///
/// Global IDs are random UUIDs, so entering them as the records come would descend the index tree to a random leaf
/// for each, dirtying a different page nearly every time. In key order, consecutive entries land on the page the
/// cursor is already on, and the entries of a new store (or any that sort after the stored ones) are appended.
/// Entries are plain values (no reference counting), and sorting is a radix pass on the leading bits of the UUID,
/// which random UUIDs spread evenly, followed by small sorts of each bucket.
struct GlobalIDBatch {
    /// One entry: the UUID as two big-endian halves (their order is the byte order liblmdb sorts keys by), and
    /// what it points to.
    struct Entry {
        let high: UInt64
        let low: UInt64
        let primaryKey: Int64
        let entityID: UInt32

        init(_ id: UUID, entityID: UInt32, primaryKey: Int64) {
            (high, low) = withUnsafeBytes(of: id.uuid) {
                (UInt64(bigEndian: $0.loadUnaligned(as: UInt64.self)),
                 UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
            }
            self.entityID = entityID
            self.primaryKey = primaryKey
        }

        /// The 16 key bytes.
        func withKey<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
            try withUnsafeBytes(of: (high.bigEndian, low.bigEndian), body)
        }

        var uuid: UUID {
            withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { raw in
                var t: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
                withUnsafeMutableBytes(of: &t) { $0.copyMemory(from: raw) }
                return UUID(uuid: t)
            }
        }

        @inline(__always) static func < (a: Entry, b: Entry) -> Bool {
            a.high != b.high ? a.high < b.high : a.low < b.low
        }
    }

    private(set) var entries: [Entry] = []
    /// During a bulk load: the runs already sorted and set aside, merged into the index when the load finishes
    /// (see ``GlobalIDRuns``).
    var spilled: GlobalIDRuns?
    /// Where ``sort()`` scatters the entries; kept, so a bulk load's runs reuse one pair of buffers (allocating
    /// megabytes per run left the heap fragmented and growing).
    private var spare: [Entry] = []

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    /// Adds another batch's entries after this one's.
    mutating func append(contentsOf other: GlobalIDBatch) { entries.append(contentsOf: other.entries) }

    /// Drops the entries after the first `count` (a retried transaction puts back what it added).
    mutating func truncate(to count: Int) {
        if entries.count > count { entries.removeSubrange(count...) }
    }

    mutating func reserve(_ n: Int) { entries.reserveCapacity(n) }

    /// Empties the batch, keeping its buffer for the next run.
    mutating func removeAll() { entries.removeAll(keepingCapacity: true) }

    mutating func append(_ id: UUID, entityID: UInt32, primaryKey: Int64) {
        entries.append(Entry(id, entityID: entityID, primaryKey: primaryKey))
    }

    /// The entries in key order (equal keys keep their order, so a later entry for the same UUID comes later).
    ///
    /// Two radix passes on the leading bits of the UUID: the first spreads the entries over at most 2,048
    /// buckets (few enough that every bucket's write position stays in cache), the second orders each bucket —
    /// small enough to be in cache itself — by the next bits, and insertion sort finishes the handful of entries
    /// that share a sub-bucket. Entries that share long prefixes (UUIDs that are not random) end up in crowded
    /// sub-buckets, which get an ordinary stable sort.
    func sorted() -> [Entry] {
        var copy = self
        copy.sort()
        return copy.entries
    }

    /// Puts ``entries`` in key order (see ``sorted()``), reusing the batch's buffers.
    mutating func sort() {
        let n = entries.count
        guard n > 64 else {
            entries = Self.stableSorted(entries[...])
            return
        }
        let topBits = min(11, Self.log2(n) - 3)
        let topShift = UInt64(64 - topBits)
        var starts = [Int](repeating: 0, count: (1 << topBits) + 1)
        for e in entries { starts[Int(truncatingIfNeeded: e.high >> topShift) + 1] += 1 }
        for b in 1..<starts.count { starts[b] += starts[b - 1] }
        var next = starts
        if spare.count > n {
            spare.removeLast(spare.count - n)
        } else {
            spare.append(contentsOf: repeatElement(Entry(high: 0, low: 0), count: n - spare.count))
        }
        spare.withUnsafeMutableBufferPointer { out in
            for e in entries {
                let b = Int(truncatingIfNeeded: e.high >> topShift)
                out[next[b]] = e
                next[b] += 1
            }
        }
        var largest = 0
        for b in 0..<(1 << topBits) { largest = max(largest, starts[b + 1] - starts[b]) }
        var scratch = [Entry](repeating: Entry(high: 0, low: 0), count: largest)
        var subStarts = [Int](repeating: 0, count: (1 << 12) + 1)
        spare.withUnsafeMutableBufferPointer { all in
            scratch.withUnsafeMutableBufferPointer { scratch in
                for b in 0..<(1 << topBits) {
                    let range = starts[b]..<starts[b + 1]
                    if range.count <= 16 {
                        Self.insertionSort(all, range)
                        continue
                    }
                    let subBits = min(12, Self.log2(range.count) + 1)
                    let subShift = UInt64(64 - topBits - subBits)
                    let mask = UInt64(1 << subBits) - 1
                    for i in 0...(1 << subBits) { subStarts[i] = 0 }
                    for i in range { subStarts[Int(truncatingIfNeeded: (all[i].high >> subShift) & mask) + 1] += 1 }
                    for i in 1...(1 << subBits) { subStarts[i] += subStarts[i - 1] }
                    var subNext = Array(subStarts[0..<(1 << subBits)])
                    for i in range {
                        let s = Int(truncatingIfNeeded: (all[i].high >> subShift) & mask)
                        scratch[subNext[s]] = all[i]
                        subNext[s] += 1
                    }
                    for s in 0..<(1 << subBits) {
                        let sub = subStarts[s]..<subStarts[s + 1]
                        if sub.count <= 16 {
                            Self.insertionSort(scratch, sub)
                        } else {
                            // Not random after all (many UUIDs share a prefix): an ordinary sort.
                            let sortedSub = Self.stableSorted(ArraySlice(scratch[sub]))
                            for (i, e) in zip(sub, sortedSub) { scratch[i] = e }
                        }
                    }
                    for (i, j) in zip(range, 0..<range.count) { all[i] = scratch[j] }
                }
            }
        }
        swap(&entries, &spare)
    }

    /// ⌊log₂ n⌋ for n ≥ 1.
    private static func log2(_ n: Int) -> Int { Int.bitWidth - n.leadingZeroBitCount - 1 }

    /// Insertion sort of a short range; stable.
    private static func insertionSort(_ a: UnsafeMutableBufferPointer<Entry>, _ range: Range<Int>) {
        guard range.count > 1 else { return }
        for i in (range.lowerBound + 1)..<range.upperBound {
            let e = a[i]
            var j = i
            while j > range.lowerBound && e < a[j - 1] {
                a[j] = a[j - 1]
                j -= 1
            }
            a[j] = e
        }
    }

    /// A stable sort (ties in their original order).
    private static func stableSorted(_ slice: ArraySlice<Entry>) -> [Entry] {
        slice.enumerated().sorted { x, y in
            x.element < y.element || (!(y.element < x.element) && x.offset < y.offset)
        }.map(\.element)
    }

    /// Writes the entries in key order through one cursor. A UUID already in the index is rewritten when it
    /// belongs to the same record (an update), and refused when it names another record. Random UUIDs land on
    /// every leaf page of the index: the pages are released from this process as the writes go
    /// (``LMDBEnvironment/releaseResidentPages(after:)``).
    func write(_ txn: LMDBTransaction, _ dbi: MDB_dbi, layout: LMDBLayout, storeURL: URL, env: LMDBEnvironment) throws {
        guard !entries.isEmpty else { return }
        try Self.write(sorted()[...], txn, dbi, layout: layout, storeURL: storeURL, env: env)
    }

    /// Writes entries already in key order (see ``write(_:_:layout:storeURL:env:)``).
    static func write(_ ordered: ArraySlice<Entry>, _ txn: LMDBTransaction, _ dbi: MDB_dbi, layout: LMDBLayout, storeURL: URL,
                      env: LMDBEnvironment) throws {
        guard !ordered.isEmpty else { return }
        try txn.withCursor(dbi) { cursor in
            // The largest stored key: entries above it are appended.
            var last: Entry? = try cursor.move(MDB_LAST).map { k in
                k.key.count == 16
                    ? Entry(high: UInt64(bigEndian: k.key.loadUnaligned(as: UInt64.self)),
                            low: UInt64(bigEndian: k.key.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
                    : Entry(high: .max, low: .max)
            }
            for item in ordered {
                env.releaseResidentPages(after: 4096)
                var value = GlobalIDEntry.Bytes(entityID: item.entityID, primaryKey: item.primaryKey)
                let appending = last.map { $0 < item } ?? true
                let added = try item.withKey { key in
                    try value.withBytes { try cursor.put(key, $0, flags: UInt32(appending ? MDB_APPEND : MDB_NOOVERWRITE)) }
                }
                if added {
                    if appending { last = item }
                    continue
                }
                try item.withKey { key in
                    if let v = try txn.get(dbi, key), let e = GlobalIDEntry.decode(v, layout: layout) {
                        let mine = layout.entity(id: item.entityID)
                        if e.entity.rootName != mine?.rootName || e.primaryKey != item.primaryKey {
                            let name = mine?.name ?? "entity \(item.entityID)"
                            throw StoreError.io(storeURL, operation: "saving \(name)/p\(item.primaryKey)", reason: "global ID \(item.uuid.uuidString) already belongs to \(e.entity.name)/p\(e.primaryKey)")
                        }
                    }
                    _ = try value.withBytes { try cursor.put(key, $0, flags: 0) }
                }
            }
        }
    }
}

extension GlobalIDBatch.Entry {
    /// A bare key, for comparisons.
    fileprivate init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
        self.primaryKey = 0
        self.entityID = 0
    }
}
