import Foundation

extension RecordPage {
    /// The records of the page, decoded and checked against `schema`'s entity: a page that does not hold exactly
    /// one well-formed value per attribute and relationship (of the right kind) throws ``StoreError/io(_:operation:reason:)``.
    public func records(in schema: Schema) throws -> [Record] {
        let entity = try schema.requireEntity(self.entity)
        return try (0..<count).map { try record(at: $0, of: entity) }
    }

    /// Record `index` of the page, decoded.
    public func record(at index: Int, of entity: Entity) throws -> Record {
        try withEncodedRecord(at: index) { values, links in
            var r = PageByteReader(values)
            var attributes: [StoreValue] = []
            attributes.reserveCapacity(entity.attributes.count)
            for a in entity.attributes {
                guard let v = r.value() else { throw malformed(index, "the value of \(entity.name).\(a.name)") }
                attributes.append(v)
            }
            guard r.isAtEnd else { throw malformed(index, "more values than \(entity.name) has attributes") }
            var l = PageByteReader(links)
            var relationships: [RelationshipValue] = []
            relationships.reserveCapacity(entity.relationships.count)
            for rel in entity.relationships {
                guard let v = l.relationship(), v.isToMany == rel.isToMany else {
                    throw malformed(index, "the value of \(entity.name).\(rel.name)")
                }
                relationships.append(v)
            }
            guard l.isAtEnd else { throw malformed(index, "more relationship values than \(entity.name) has relationships") }
            return Record(entity: entity.name, primaryKey: primaryKeys[index], globalID: globalIDs[index],
                          attributes: attributes, relationships: relationships)
        }
    }

    private func malformed(_ index: Int, _ what: String) -> StoreError {
        .io(nil, operation: "reading a page of \(entity) records", reason: "record \(primaryKeys[index]): \(what) is malformed")
    }

    /// Walks `values` (one record's attribute values in the page form) and returns whether they are exactly
    /// `count` well-formed values whose tags `accepts(position, tag)` all accepts — the check a store makes before
    /// writing a page's bytes as they are.
    @inlinable
    public static func checkValues(
        _ values: UnsafeRawBufferPointer, count: Int, accepts: (_ position: Int, _ tag: UInt8) -> Bool
    ) -> Bool {
        var r = PageByteReader(values)
        for position in 0..<count {
            guard let tag = r.skipValue(), accepts(position, tag) else { return false }
        }
        return r.isAtEnd
    }

    /// Walks `links` (one record's relationship values) and returns whether they are exactly one well-formed
    /// value per entry of `toMany`, to-many where it says so and to-one elsewhere.
    @inlinable
    public static func checkLinks(_ links: UnsafeRawBufferPointer, toMany: [Bool]) -> Bool {
        var r = PageByteReader(links)
        for isToMany in toMany {
            guard let kind = r.byte() else { return false }
            switch kind {
            case 0 where !isToMany: continue
            case 1 where !isToMany: guard r.varint() != nil else { return false }
            case 2 where isToMany:
                guard let n = r.varint(), n <= UInt64(r.remaining) else { return false }
                for _ in 0..<n { guard r.varint() != nil else { return false } }
            default: return false
            }
        }
        return r.isAtEnd
    }
}

extension RelationshipValue {
    var isToMany: Bool { if case .toMany = self { true } else { false } }
}

/// Reads the page form; every read returns `nil` past the end or on a malformed value.
@usableFromInline
struct PageByteReader {
    @usableFromInline let bytes: UnsafeRawBufferPointer
    @usableFromInline var offset = 0

    @inlinable init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    @inlinable var isAtEnd: Bool { offset == bytes.count }
    @inlinable var remaining: Int { bytes.count - offset }

    @inlinable mutating func byte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    @inlinable mutating func varint() -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while let b = byte() {
            guard shift < 64 else { return nil }
            value |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }

    @inlinable mutating func signed() -> Int64? {
        guard let z = varint() else { return nil }
        return Int64(bitPattern: (z >> 1) ^ (0 &- (z & 1)))
    }

    @inlinable mutating func take(_ n: Int) -> UnsafeRawBufferPointer? {
        guard n >= 0, n <= remaining else { return nil }
        defer { offset += n }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + n)])
    }

    @inlinable mutating func lengthPrefixed() -> UnsafeRawBufferPointer? {
        guard let n = varint(), n <= UInt64(remaining) else { return nil }
        return take(Int(n))
    }

    @inlinable mutating func fixed64() -> UInt64? {
        take(8).map { $0.loadUnaligned(as: UInt64.self).littleEndian }
    }

    @inlinable mutating func fixed32() -> UInt32? {
        take(4).map { $0.loadUnaligned(as: UInt32.self).littleEndian }
    }

    /// Skips one value and returns its tag, or `nil` when it is malformed.
    @inlinable mutating func skipValue() -> UInt8? {
        guard let raw = byte(), let tag = RecordPage.Tag(rawValue: raw) else { return nil }
        switch tag {
        case .null, .boolFalse, .boolTrue: return raw
        case .integer16, .integer32, .integer64: return varint() == nil ? nil : raw
        case .double, .date: return take(8) == nil ? nil : raw
        case .float: return take(4) == nil ? nil : raw
        case .uuid: return take(16) == nil ? nil : raw
        case .decimal, .string, .binary, .uri: return lengthPrefixed() == nil ? nil : raw
        }
    }

    mutating func text() -> String? {
        lengthPrefixed().flatMap { String(validating: $0, as: UTF8.self) }
    }

    /// Decodes one value, checking it (integer widths, UTF-8, decimal and URI text).
    mutating func value() -> StoreValue? {
        guard let raw = byte(), let tag = RecordPage.Tag(rawValue: raw) else { return nil }
        switch tag {
        case .null: return .null
        case .integer16: return signed().flatMap { Int16(exactly: $0) }.map { .integer16($0) }
        case .integer32: return signed().flatMap { Int32(exactly: $0) }.map { .integer32($0) }
        case .integer64: return signed().map { .integer64($0) }
        case .decimal: return text().flatMap { DecimalText.decimal(from: $0) }.map { .decimal($0) }
        case .double: return fixed64().map { .double(Double(bitPattern: $0)) }
        case .float: return fixed32().map { .float(Float(bitPattern: $0)) }
        case .string: return text().map { .string($0) }
        case .boolFalse: return .boolean(false)
        case .boolTrue: return .boolean(true)
        case .date: return fixed64().map { .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: $0))) }
        case .binary: return lengthPrefixed().map { .binary(Data($0)) }
        case .uuid:
            return take(16).map { b in
                .uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                                  b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
            }
        case .uri: return text().flatMap { URL(string: $0) }.map { .uri($0) }
        }
    }

    mutating func relationship() -> RelationshipValue? {
        switch byte() {
        case 0: return .toOne(nil)
        case 1: return signed().map { .toOne($0) }
        case 2:
            guard let n = varint(), n <= UInt64(remaining) else { return nil }
            var keys: [Int64] = []
            keys.reserveCapacity(Int(n))
            for _ in 0..<n {
                guard let k = signed() else { return nil }
                keys.append(k)
            }
            return .toMany(keys)
        default: return nil
        }
    }
}
