import Foundation
@_spi(BackendKit) import StoreAPI

/// The binary form of a ``Record``, the value stored under its primary key in its hierarchy's database:
///
/// ```
/// u8      record format version (1)
/// varint  entity ID (see LMDBLayout.entityIDs)
/// 16      global ID
/// varint  attribute count, then each value in LMDBValueCodec form, aligned with Entity.attributes
/// varint  relationship count, then each: 0 = to-one nil · 1 = to-one + zig-zag key · 2 = to-many + count + keys
/// ```
///
/// To-many keys are kept in the order given, so ordered relationships keep their order.
enum RecordCodec {
    static let version: UInt8 = 1

    /// Writes `record` as an instance of `info`'s entity. Returns `false`, having checked every value on the way,
    /// when the record does not fit the entity (value counts, an attribute value of another type, a to-one value
    /// for a to-many relationship or the reverse); the save then reports exactly what is wrong.
    ///
    /// The record is read in place through `record`, so a bulk save does not copy (and reference-count) every
    /// record it writes.
    static func encode(_ record: UnsafePointer<Record>, _ info: LMDBEntityInfo, into w: inout RawWriter) -> Bool {
        w.byte(version)
        w.varint(UInt64(info.id))
        w.uuid(record.pointee.globalID)
        let fits = record.pointee.attributes.withUnsafeBufferPointer { values in
            info.acceptedTags.withUnsafeBufferPointer { accepted in
                guard values.count == accepted.count else { return false }
                w.varint(UInt64(values.count))
                var fits = true
                for i in values.indices {
                    let tag = LMDBValueCodec.encode(values[i], into: &w)
                    fits = fits && accepted[i] & (1 << UInt16(tag)) != 0
                }
                return fits
            }
        }
        guard fits, record.pointee.relationships.count == info.toMany.count else { return false }
        w.varint(UInt64(record.pointee.relationships.count))
        for (rel, isToMany) in zip(record.pointee.relationships, info.toMany) {
            switch rel {
            case .toOne(nil) where !isToMany: w.byte(0)
            case .toOne(let k?) where !isToMany: w.byte(1); w.signed(k)
            case .toMany(let ks) where isToMany:
                w.byte(2)
                w.varint(UInt64(ks.count))
                for k in ks { w.signed(k) }
            default: return false
            }
        }
        return true
    }

    /// Writes a record whose attribute values and relationship values are already in their stored form — a
    /// ``RecordPage``'s, whose value form is this codec's (``LMDBValueCodec``) by design. The caller has checked them.
    static func encode(
        globalID: UUID, _ info: LMDBEntityInfo, values: UnsafeRawBufferPointer, links: UnsafeRawBufferPointer,
        into w: inout RawWriter
    ) {
        w.byte(version)
        w.varint(UInt64(info.id))
        w.uuid(globalID)
        w.varint(UInt64(info.acceptedTags.count))
        w.raw(values)
        w.varint(UInt64(info.toMany.count))
        w.raw(links)
    }

    /// The entity ID of an encoded record, read without decoding the rest (for filtering scans by entity).
    static func entityID(of bytes: UnsafeRawBufferPointer) -> UInt32? {
        var r = ByteReader(bytes)
        guard (try? r.byte()) == version, let id = try? r.varint(), id <= UInt64(UInt32.max) else { return nil }
        return UInt32(id)
    }

    /// Decodes a stored record. Throws ``ByteReader/Malformed`` naming what is wrong.
    static func decode(_ bytes: UnsafeRawBufferPointer, primaryKey: Int64, layout: LMDBLayout) throws -> Record {
        var record = blank
        try decode(bytes, primaryKey: primaryKey, layout: layout, reading: nil, into: &record)
        return record
    }

    /// A record to decode into, of no entity (a generated UUID would cost a random number per record).
    static let blank = Record(entity: "", primaryKey: 0, globalID: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
                              attributes: [], relationships: [])

    /// Decodes a stored record into `record`, or with `reading` only the values it names: the others are skipped
    /// and left `nil` (attributes) or an empty to-one (relationships) — a record fit only for testing a predicate
    /// that reads no more than those. The record's structure is checked either way.
    ///
    /// `record` is reused: a scan testing every record against a predicate decodes each into the same one, whose
    /// value arrays are then only written, not made and freed for every record.
    static func decode(_ bytes: UnsafeRawBufferPointer, primaryKey: Int64, layout: LMDBLayout, reading: PartialRead?,
                       into record: inout Record) throws {
        var r = ByteReader(bytes)
        let v = try r.byte()
        guard v == version else { throw ByteReader.Malformed(reason: "unknown record format version \(v)") }
        let id = try r.varint()
        guard id <= UInt64(UInt32.max), let entity = layout.entity(id: UInt32(id)) else {
            throw ByteReader.Malformed(reason: "unknown entity ID \(id)")
        }
        let globalID = try r.uuid()
        let attributeCount = try r.varint()
        guard attributeCount == UInt64(entity.attributes.count) else {
            throw ByteReader.Malformed(reason: "\(attributeCount) attribute values for \(entity.name), which has \(entity.attributes.count)")
        }
        let wanted = reading?.values(of: UInt32(id))
        if record.entity != entity.name || wanted == nil {
            // A skipped value must read nil, and a record of another entity has other values: start from nil.
            record.entity = entity.name
            record.attributes = Array(repeating: .null, count: entity.attributes.count)
            record.relationships = Array(repeating: .toOne(nil), count: entity.relationships.count)
        }
        record.primaryKey = primaryKey
        record.globalID = globalID
        for i in 0..<entity.attributes.count {
            if let wanted, !wanted.attributes[i] {
                try LMDBValueCodec.skip(from: &r)
            } else {
                record.attributes[i] = try LMDBValueCodec.decode(from: &r)
            }
        }
        let relationshipCount = try r.varint()
        guard relationshipCount == UInt64(entity.relationships.count) else {
            throw ByteReader.Malformed(reason: "\(relationshipCount) relationship values for \(entity.name), which has \(entity.relationships.count)")
        }
        for i in 0..<entity.relationships.count {
            let read = wanted.map { $0.relationships[i] } ?? true
            switch try r.byte() {
            case 0:
                if read { record.relationships[i] = .toOne(nil) }
            case 1:
                let key = try r.signed()
                if read { record.relationships[i] = .toOne(key) }
            case 2:
                let n = try r.varint()
                // Each key takes at least one byte, which bounds the count by what is left.
                guard n <= UInt64(bytes.count - r.offset) else { throw ByteReader.Malformed(reason: "to-many count \(n) runs past the end") }
                guard read else {
                    for _ in 0..<n { _ = try r.varint() }
                    continue
                }
                var keys: [Int64] = []
                keys.reserveCapacity(Int(n))
                for _ in 0..<n { keys.append(try r.signed()) }
                record.relationships[i] = .toMany(keys)
            case let t: throw ByteReader.Malformed(reason: "unknown relationship tag \(t)")
            }
        }
        guard r.isAtEnd else { throw ByteReader.Malformed(reason: "\(bytes.count - r.offset) unexpected bytes after the record") }
    }

    /// The key of a uniqueness index for `values`, or `nil` when one is nil (like SQL `UNIQUE`, a constraint with an
    /// empty value cannot conflict, so it is not indexed). Keys longer than liblmdb allows are replaced by `0xFF` +
    /// their SHA-256 (no value tag is `0xFF`, so the two kinds never collide).
    static func indexKey(_ values: [StoreValue]) -> [UInt8]? {
        if values.contains(where: \.isNull) { return nil }
        var w = ByteWriter(capacity: 64)
        w.encode { raw in for v in values { LMDBValueCodec.encode(v, into: &raw) } }
        let bytes = w.bytes
        if bytes.count <= 480 { return bytes }
        return [0xFF] + StoreDigest.sha256(bytes)
    }
}

/// The values a partial decode reads, per entity: those a predicate's key paths start with
/// (``FetchPredicate/keyPathRoots``).
struct PartialRead {
    struct Values {
        let attributes: [Bool]
        let relationships: [Bool]
    }
    private let byEntity: [UInt32: Values]

    /// Reads, for each entity in `entityIDs`, the attributes and relationships named in `names`.
    init(names: Set<String>, layout: LMDBLayout, entityIDs: Set<UInt32>) {
        var byEntity: [UInt32: Values] = [:]
        for id in entityIDs {
            guard let entity = layout.entity(id: id) else { continue }
            byEntity[id] = Values(attributes: entity.attributes.map { names.contains($0.name) },
                                  relationships: entity.relationships.map { names.contains($0.name) })
        }
        self.byEntity = byEntity
    }

    /// What to read of a record of entity `id`; `nil` (read everything) for an entity not planned for.
    func values(of id: UInt32) -> Values? { byEntity[id] }
}
