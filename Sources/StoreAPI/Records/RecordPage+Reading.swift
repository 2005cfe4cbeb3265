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

    @inlinable @inline(__always) mutating func byte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    @inlinable @inline(__always) mutating func varint() -> UInt64? {
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

    @inlinable @inline(__always) mutating func take(_ n: Int) -> UnsafeRawBufferPointer? {
        guard n >= 0, n <= remaining else { return nil }
        defer { offset += n }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + n)])
    }

    @inlinable @inline(__always) mutating func lengthPrefixed() -> UnsafeRawBufferPointer? {
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
    @usableFromInline mutating func skipValue() -> UInt8? {
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

    @usableFromInline mutating func relationship() -> RelationshipValue? {
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

    /// ``relationship()`` into `value`, whose to-many array (when it holds one) takes the keys in the storage it
    /// has; `false`, leaving `value` a to-one, when the value is malformed.
    @usableFromInline mutating func relationship(into value: inout RelationshipValue) -> Bool {
        var keys: [Int64] = []
        if case .toMany(let held) = value {
            keys = held
            // The only reference now: emptied in place, not copied.
            value = .toOne(nil)
            keys.removeAll(keepingCapacity: true)
        }
        value = .toOne(nil)
        switch byte() {
        case 0: return true
        case 1:
            guard let k = signed() else { return false }
            value = .toOne(k)
            return true
        case 2:
            guard let n = varint(), n <= UInt64(remaining) else { return false }
            keys.reserveCapacity(Int(n))
            for _ in 0..<n {
                guard let k = signed() else { return false }
                keys.append(k)
            }
            value = .toMany(keys)
            return true
        default: return false
        }
    }
}

extension RecordPage {
    /// One value of a page, read in place: text and bytes are borrowed from the page and valid while the record
    /// is being read (see ``withEncodedRecord(at:_:)``).
    public enum BorrowedValue {
        /// No value.
        case null
        /// An integer, within the range of its tag (``Tag/integer16``, ``Tag/integer32`` or ``Tag/integer64``).
        case integer(Int64, Tag)
        /// A Boolean.
        case boolean(Bool)
        /// A double (``Tag/double``) or a date's `timeIntervalSinceReferenceDate` (``Tag/date``).
        case double(Double, Tag)
        /// A float.
        case float(Float)
        /// UTF-8 text (``Tag/string``, ``Tag/uri``, ``Tag/decimal``; not yet checked) or binary data (``Tag/binary``).
        case bytes(UnsafeRawBufferPointer, Tag)
        /// A UUID.
        case uuid(UUID)
    }

    /// Reads one record's attribute values (from ``withEncodedRecord(at:_:)``) one at a time, without copying.
    public struct ValueReader {
        @usableFromInline var reader: PageByteReader

        /// A reader of `values`.
        @inlinable public init(_ values: UnsafeRawBufferPointer) { reader = PageByteReader(values) }

        /// Whether every value has been read.
        @inlinable public var isAtEnd: Bool { reader.isAtEnd }

        /// The next value, or `nil` at the end or when it is malformed.
        @inlinable
        public mutating func next() -> BorrowedValue? {
            guard let raw = reader.byte(), let tag = Tag(rawValue: raw) else { return nil }
            switch tag {
            case .null: return .null
            case .boolFalse: return .boolean(false)
            case .boolTrue: return .boolean(true)
            case .integer16: return reader.signed().flatMap { Int16(exactly: $0) != nil ? .integer($0, tag) : nil }
            case .integer32: return reader.signed().flatMap { Int32(exactly: $0) != nil ? .integer($0, tag) : nil }
            case .integer64: return reader.signed().map { .integer($0, tag) }
            case .double, .date: return reader.fixed64().map { .double(Double(bitPattern: $0), tag) }
            case .float: return reader.fixed32().map { .float(Float(bitPattern: $0)) }
            case .decimal, .string, .binary, .uri: return reader.lengthPrefixed().map { .bytes($0, tag) }
            case .uuid:
                return reader.take(16).map { b in
                    .uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                                      b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
                }
            }
        }
    }

    /// Reads one record's relationship values (from ``withEncodedRecord(at:_:)``) one at a time.
    public struct LinkReader {
        @usableFromInline var reader: PageByteReader

        /// A reader of `links`.
        @inlinable public init(_ links: UnsafeRawBufferPointer) { reader = PageByteReader(links) }

        /// Whether every value has been read.
        @inlinable public var isAtEnd: Bool { reader.isAtEnd }

        /// The next relationship value, or `nil` at the end or when it is malformed.
        public mutating func next() -> RelationshipValue? { reader.relationship() }

        /// Reads the next relationship value into `value`, the same value ``next()`` returns, reusing the storage
        /// of the to-many list `value` holds (a reader of many records' links need not allocate a list per record);
        /// `false` at the end or when the value is malformed.
        public mutating func next(into value: inout RelationshipValue) -> Bool { reader.relationship(into: &value) }

        /// Skips the next relationship value; `false` at the end or when it is malformed.
        @inlinable
        public mutating func skip() -> Bool {
            switch reader.byte() {
            case 0: return true
            case 1: return reader.varint() != nil
            case 2:
                guard let n = reader.varint(), n <= UInt64(reader.remaining) else { return false }
                for _ in 0..<n { guard reader.varint() != nil else { return false } }
                return true
            default: return false
            }
        }
    }
}

extension RecordPage.Tag {
    /// The name of the attribute type whose values this tag writes (what a type mismatch reports).
    public var typeName: String {
        switch self {
        case .null: "nil"
        case .integer16: AttributeType.integer16.rawValue
        case .integer32: AttributeType.integer32.rawValue
        case .integer64: AttributeType.integer64.rawValue
        case .decimal: AttributeType.decimal.rawValue
        case .double: AttributeType.double.rawValue
        case .float: AttributeType.float.rawValue
        case .string: AttributeType.string.rawValue
        case .boolFalse, .boolTrue: AttributeType.boolean.rawValue
        case .date: AttributeType.date.rawValue
        case .binary: AttributeType.binary.rawValue
        case .uuid: AttributeType.uuid.rawValue
        case .uri: AttributeType.uri.rawValue
        }
    }
}
