import CLMDB
import Foundation
@_spi(BackendKit) import StoreAPI

/// Reads records inside one transaction: point lookups, key-ordered scans and uniqueness-index lookups. Damaged
/// values become ``StoreError/corruptStore(_:reason:)`` naming the record.
///
/// It is `@unchecked Sendable` only so ``PredicateEvaluator``'s resolver can capture it; it is used on the
/// transaction's own thread, inside the call that owns the transaction.
struct LMDBRecordReader: @unchecked Sendable {
    let txn: LMDBTransaction
    let env: LMDBEnvironment
    let layout: LMDBLayout
    /// The data file, named in errors.
    let file: URL

    func recordsDatabase(_ root: String) -> MDB_dbi? { env.database(DatabaseName.records(root)) }

    func decode(_ bytes: UnsafeRawBufferPointer, primaryKey: Int64, root: String) throws -> Record {
        do {
            return try RecordCodec.decode(bytes, primaryKey: primaryKey, layout: layout)
        } catch let m as ByteReader.Malformed {
            throw StoreError.corruptStore(file, reason: "record \(root)/p\(primaryKey): \(m.reason)")
        }
    }

    /// Decodes into `probe` only the values `reading` names (see ``RecordCodec``'s partial decode).
    func decode(_ bytes: UnsafeRawBufferPointer, primaryKey: Int64, root: String, reading: PartialRead, into probe: inout Record) throws {
        do {
            try RecordCodec.decode(bytes, primaryKey: primaryKey, layout: layout, reading: reading, into: &probe)
        } catch let m as ByteReader.Malformed {
            throw StoreError.corruptStore(file, reason: "record \(root)/p\(primaryKey): \(m.reason)")
        }
    }

    /// The record with `primaryKey` in hierarchy `root`, or `nil`.
    func record(_ primaryKey: Int64, root: String) throws -> Record? {
        guard let dbi = recordsDatabase(root) else { return nil }
        return try OrderedKey.with(primaryKey) { key in
            guard let bytes = try txn.get(dbi, key) else { return nil }
            return try decode(bytes, primaryKey: primaryKey, root: root)
        }
    }

    /// Whether a record with the key is stored, without decoding it.
    func exists(_ primaryKey: Int64, root: String) throws -> Bool {
        guard let dbi = recordsDatabase(root) else { return false }
        return try OrderedKey.with(primaryKey) { key in try txn.get(dbi, key) != nil }
    }

    /// The records with the given keys, in the order asked; missing keys are left out.
    func records(_ keys: [Int64], root: String) throws -> [Record] {
        guard let dbi = recordsDatabase(root) else { return [] }
        var out: [Record] = []
        out.reserveCapacity(keys.count)
        for pk in keys {
            let found: Record? = try OrderedKey.with(pk) { key in
                guard let bytes = try txn.get(dbi, key) else { return nil }
                return try decode(bytes, primaryKey: pk, root: root)
            }
            if let found { out.append(found) }
        }
        return out
    }

    /// The entity name of the record with `primaryKey` in `root`, read without decoding the record.
    func entityName(_ primaryKey: Int64, root: String) throws -> String? {
        guard let dbi = recordsDatabase(root) else { return nil }
        return try OrderedKey.with(primaryKey) { key in
            guard let bytes = try txn.get(dbi, key), let id = RecordCodec.entityID(of: bytes) else { return nil }
            return layout.entity(id: id)?.name
        }
    }

    /// Calls `body` with the records of `root` in key order, after `after` when given, restricted to `entityIDs`
    /// when given (other records are skipped without being decoded), until `body` returns `false`.
    func scan(root: String, entityIDs: Set<UInt32>?, after: Int64? = nil, _ body: (Record) throws -> Bool) throws {
        try walk(root: root, entityIDs: entityIDs, after: after) { pk, value in
            try body(try decode(value, primaryKey: pk, root: root))
        }
    }

    /// Calls `body` with the records of `root` among `entityIDs` that `predicate` matches (all when `nil`), in key
    /// order, until `body` returns `false`. Each record is decoded only as far as the predicate reads
    /// (``FetchPredicate/keyPathRoots``) to be tested, and whole only when it matches: a selective filter over a
    /// large entity then never makes the strings, data and URIs of the records it passes over.
    ///
    /// With `decodingMatches` `false` the matches are not decoded either: `body` gets the partial record the
    /// predicate was tested on, valid only during the call (for counting).
    func scan(root: String, entityIDs: Set<UInt32>, matching predicate: PreparedPredicate?, decodingMatches: Bool = true,
              _ body: (Record) throws -> Bool) throws {
        guard let predicate else { return try scan(root: root, entityIDs: entityIDs, body) }
        let partial = PartialRead(names: predicate.predicate.keyPathRoots, layout: layout, entityIDs: entityIDs)
        var probe = RecordCodec.blank
        try walk(root: root, entityIDs: entityIDs, after: nil) { pk, value in
            try decode(value, primaryKey: pk, root: root, reading: partial, into: &probe)
            guard try predicate.matches(probe) else { return true }
            return try body(decodingMatches ? try decode(value, primaryKey: pk, root: root) : probe)
        }
    }

    /// Calls `body` with the keys and stored bytes ``scan(root:entityIDs:after:_:)`` would decode.
    func scanRaw(root: String, entityIDs: Set<UInt32>?, after: Int64? = nil, _ body: (Int64, UnsafeRawBufferPointer) throws -> Bool) throws {
        try walk(root: root, entityIDs: entityIDs, after: after, body)
    }

    /// Calls `body` with the keys ``scan(root:entityIDs:after:_:)`` would visit, decoding no record.
    func scanKeys(root: String, entityIDs: Set<UInt32>?, after: Int64? = nil, _ body: (Int64) throws -> Bool) throws {
        try walk(root: root, entityIDs: entityIDs, after: after) { pk, _ in try body(pk) }
    }

    /// The records database of `root` in key order from after `after`, with each key and encoded record of the
    /// entities in `entityIDs` (all when `nil`), until `body` returns `false`.
    private func walk(root: String, entityIDs: Set<UInt32>?, after: Int64?,
                      _ body: (Int64, UnsafeRawBufferPointer) throws -> Bool) throws {
        guard let dbi = recordsDatabase(root) else { return }
        // Map pages read, so a long scan (a conversion reading the store) does not keep them all resident.
        var footprint = MapFootprint()
        defer { env.releaseResidentPages(after: footprint.take()) }
        try txn.withCursor(dbi) { cursor in
            let start: (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)?
            if let after {
                guard after < .max else { return }
                start = try OrderedKey.with(after + 1) { try cursor.seek(atLeast: $0) }
            } else {
                start = try cursor.move(MDB_FIRST)
            }
            try cursor.forEach(from: start) { key, value in
                if footprint.enter(value) { env.releaseResidentPages(after: footprint.take()) }
                guard let pk = OrderedKey.decode(key) else {
                    throw StoreError.corruptStore(file, reason: "a key of \(root) is \(key.count) bytes, not 8")
                }
                if let entityIDs {
                    guard let id = RecordCodec.entityID(of: value) else {
                        throw StoreError.corruptStore(file, reason: "record \(root)/p\(pk) has no readable entity")
                    }
                    if !entityIDs.contains(id) { return true }
                }
                return try body(pk, value)
            }
        }
    }

    /// Counts the records of `root` restricted to `entityIDs`, without decoding them.
    func count(root: String, entityIDs: Set<UInt32>) throws -> Int {
        guard let dbi = recordsDatabase(root) else { return 0 }
        var n = 0
        var footprint = MapFootprint()
        defer { env.releaseResidentPages(after: footprint.take()) }
        try txn.withCursor(dbi) { cursor in
            try cursor.forEach(from: try cursor.move(MDB_FIRST)) { key, value in
                if footprint.enter(value) { env.releaseResidentPages(after: footprint.take()) }
                if let id = RecordCodec.entityID(of: value), entityIDs.contains(id) { n += 1 }
                return true
            }
        }
        return n
    }

    /// The primary key stored under an index key, or `nil`.
    func indexedKey(_ index: UniqueIndex, key: [UInt8]) throws -> Int64? {
        guard let dbi = env.database(index.databaseName) else { return nil }
        return try key.withUnsafeBytes { k in
            guard let v = try txn.get(dbi, k) else { return nil }
            guard let pk = OrderedKey.decode(v) else {
                throw StoreError.corruptStore(file, reason: "an entry of index \(index.databaseName) is \(v.count) bytes, not 8")
            }
            return pk
        }
    }

    /// The largest primary key in `root`, or `nil` when it has no records.
    func lastKey(root: String) throws -> Int64? {
        guard let dbi = recordsDatabase(root) else { return nil }
        return try txn.withCursor(dbi) { cursor in
            try cursor.move(MDB_LAST).flatMap { OrderedKey.decode($0.key) }
        }
    }
}

/// How much of the map a walk has made resident, counted the way the kernel maps it.
///
/// A read fault on a file mapping maps more than the page read: its neighbours already in the page cache
/// ("fault-around", 64 KiB), and on recent kernels a whole large folio of the page cache — up to 2 MiB for one
/// touched page, whatever `madvise` says. A store's pages are not in key order in the file either. Counting bytes
/// read undercounted a scan's resident pages by far, so the footprint
/// counts every 2 MiB region of the map a walk enters as 2 MiB (and a value beyond a page, on overflow pages, as
/// its length): an upper bound whatever the page cache holds.
struct MapFootprint {
    /// The largest a single read fault maps: a PMD-sized folio.
    static let regionShift = 21
    /// What is worth handing to ``LMDBEnvironment/releaseResidentPages(after:)`` at once (it takes a lock-free
    /// add, but not one per record).
    static let reportBytes = 1 << 20

    private var lastRegion = -1
    private var bytes = 0

    /// Notes a value read from the map; `true` when enough has piled up to report.
    mutating func enter(_ value: UnsafeRawBufferPointer) -> Bool {
        let region = Int(bitPattern: value.baseAddress) >> Self.regionShift
        if region != lastRegion {
            lastRegion = region
            bytes += 1 << Self.regionShift
        }
        if value.count > 4096 { bytes += value.count }
        return bytes >= Self.reportBytes
    }

    /// The bytes noted since the last call.
    mutating func take() -> Int {
        defer { bytes = 0 }
        return bytes
    }
}
