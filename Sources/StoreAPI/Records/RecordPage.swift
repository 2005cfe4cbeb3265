import Foundation

/// A page of one entity's records in one compact byte form: the way a transfer moves records between two stores
/// that both support it (``PageScanningStore`` and ``PageInsertingStore``), so that no value becomes a Swift
/// object on the way — strings, data, decimals and URIs stay bytes from the source's rows to the destination's.
///
/// A page holds, per record, its primary key and global ID, its attribute values (aligned with
/// ``Entity/attributes``) and its relationship values (aligned with ``Entity/relationships``). It is built in two
/// passes, as a store reading rows first and related keys afterwards needs: every record's values with
/// ``beginRecord(primaryKey:globalID:)``, the `append…` value methods and ``endValues()``; then every record's
/// relationships, in the same record order, with ``appendToOne(_:)`` / ``appendToMany(_:)-([Int64])`` and ``endLinks()``.
///
/// ## Value form
/// Each value is a tag byte (``Tag``) and a payload: integers as zig-zag varints; doubles, dates (their
/// `timeIntervalSinceReferenceDate`) and floats as the little-endian IEEE bit pattern (NaN payloads and `-0`
/// kept); strings, URIs (their `absoluteString`) and decimals (``DecimalText``'s canonical text) as a varint
/// length and UTF-8; binary values as a varint length and the bytes; UUIDs as their 16 bytes. Relationship
/// values: `0` a nil to-one, `1` and a zig-zag key a to-one, `2`, a varint count and zig-zag keys a to-many.
/// (This is also the form the LMDB backend stores a record's values in, so it writes a page without
/// re-encoding it.)
///
/// A page is validated by whoever reads it: ``records(in:)`` checks every value against the form and the
/// entity's layout.
@_spi(BackendKit) public struct RecordPage: Sendable {
    /// The value tags of the page form.
    ///
    /// `null` 0, `integer16` 1, `integer32` 2, `integer64` 3, `decimal` 4, `double` 5, `float` 6, `string` 7,
    /// `boolFalse` 8, `boolTrue` 9, `date` 10, `binary` 11, `uuid` 12, `uri` 13 (a Boolean's tag is its value).
    public enum Tag: UInt8, Sendable {
        case null = 0, integer16, integer32, integer64, decimal, double, float, string, boolFalse, boolTrue, date,
            binary, uuid, uri
    }

    /// The entity every record of the page is an instance of (exactly, not a sub-entity).
    public let entity: String
    /// The records' primary keys, in page order.
    public var primaryKeys: [Int64] { keys }
    /// The records' global IDs, in page order.
    public var globalIDs: [UUID] { ids }
    @usableFromInline var keys: [Int64] = []
    @usableFromInline var ids: [UUID] = []
    // The storage is inlinable so that a store's row loop appends to it directly.
    @usableFromInline var valueBytes: [UInt8] = []
    /// Where each record's values end in `valueBytes`.
    @usableFromInline var valueEnds: [Int] = []
    @usableFromInline var linkBytes: [UInt8] = []
    /// Where each record's relationship values end in `linkBytes`.
    @usableFromInline var linkEnds: [Int] = []

    /// An empty page for records of `entity`, with room for `capacity` records of about `bytesPerRecord` bytes.
    public init(entity: String, capacity: Int = 0, bytesPerRecord: Int = 64) {
        self.entity = entity
        keys.reserveCapacity(capacity)
        ids.reserveCapacity(capacity)
        valueEnds.reserveCapacity(capacity)
        linkEnds.reserveCapacity(capacity)
        valueBytes.reserveCapacity(capacity * bytesPerRecord)
        linkBytes.reserveCapacity(capacity * 4)
    }

    /// The number of records.
    public var count: Int { keys.count }

    /// The bytes of every record's values and relationship values together.
    public var encodedByteCount: Int { valueBytes.count + linkBytes.count }

    /// Whether the page holds no record.
    public var isEmpty: Bool { keys.isEmpty }

    /// Calls `body` with record `index`'s attribute values and relationship values, each in the page form,
    /// without copying them.
    @inlinable
    public func withEncodedRecord<T>(
        at index: Int, _ body: (_ values: UnsafeRawBufferPointer, _ links: UnsafeRawBufferPointer) throws -> T
    ) rethrows -> T {
        let valueStart = index == 0 ? 0 : valueEnds[index - 1]
        let linkStart = index == 0 ? 0 : linkEnds[index - 1]
        return try valueBytes.withUnsafeBytes { values in
            try linkBytes.withUnsafeBytes { links in
                try body(UnsafeRawBufferPointer(rebasing: values[valueStart..<valueEnds[index]]),
                         UnsafeRawBufferPointer(rebasing: links[linkStart..<linkEnds[index]]))
            }
        }
    }

    /// Calls `body` with every record's encoded values, borrowed together for the whole call without copying them:
    /// for a writer that binds several records' bytes into one statement, which needs them all at once.
    ///
    /// The buffers ``EncodedRecords`` hands out are valid only until `body` returns.
    @inlinable
    public func withEncodedRecords<T>(_ body: (_ records: EncodedRecords) throws -> T) rethrows -> T {
        try valueBytes.withUnsafeBytes { values in
            try linkBytes.withUnsafeBytes { links in
                try body(EncodedRecords(values: values, valueEnds: valueEnds, links: links, linkEnds: linkEnds))
            }
        }
    }

    /// Every record of a page in the page form, borrowed by ``withEncodedRecords(_:)``.
    public struct EncodedRecords {
        @usableFromInline let valueBytes: UnsafeRawBufferPointer
        @usableFromInline let valueEnds: [Int]
        @usableFromInline let linkBytes: UnsafeRawBufferPointer
        @usableFromInline let linkEnds: [Int]

        @inlinable
        init(values: UnsafeRawBufferPointer, valueEnds: [Int], links: UnsafeRawBufferPointer, linkEnds: [Int]) {
            valueBytes = values
            self.valueEnds = valueEnds
            linkBytes = links
            self.linkEnds = linkEnds
        }

        /// Record `index`'s attribute values, as ``RecordPage/withEncodedRecord(at:_:)`` passes them.
        @inlinable
        public func values(at index: Int) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(rebasing: valueBytes[(index == 0 ? 0 : valueEnds[index - 1])..<valueEnds[index]])
        }

        /// Record `index`'s relationship values, as ``RecordPage/withEncodedRecord(at:_:)`` passes them.
        @inlinable
        public func links(at index: Int) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(rebasing: linkBytes[(index == 0 ? 0 : linkEnds[index - 1])..<linkEnds[index]])
        }
    }

    // MARK: Building: values

    /// Starts the next record; its values follow, then ``endValues()``.
    @inlinable
    public mutating func beginRecord(primaryKey: Int64, globalID: UUID) {
        keys.append(primaryKey)
        ids.append(globalID)
    }

    /// Ends the current record's values.
    @inlinable
    public mutating func endValues() {
        valueEnds.append(valueBytes.count)
    }

    /// Appends a nil value.
    @inlinable
    public mutating func appendNull() { valueBytes.append(Tag.null.rawValue) }

    /// Appends an integer with the tag of its width (``Tag/integer16``, ``Tag/integer32`` or ``Tag/integer64``).
    @inlinable
    public mutating func appendInteger(_ value: Int64, tag: Tag) {
        valueBytes.append(tag.rawValue)
        Self.appendSigned(value, to: &valueBytes)
    }

    /// Appends a Boolean.
    @inlinable
    public mutating func appendBoolean(_ value: Bool) {
        valueBytes.append(value ? Tag.boolTrue.rawValue : Tag.boolFalse.rawValue)
    }

    /// Appends a double (``Tag/double``) or a date's `timeIntervalSinceReferenceDate` (``Tag/date``), bit-exactly.
    @inlinable
    public mutating func appendDouble(_ value: Double, tag: Tag) {
        valueBytes.append(tag.rawValue)
        Self.appendFixed(value.bitPattern, to: &valueBytes)
    }

    /// Appends a float, bit-exactly.
    @inlinable
    public mutating func appendFloat(_ value: Float) {
        valueBytes.append(Tag.float.rawValue)
        Self.appendFixed(value.bitPattern, to: &valueBytes)
    }

    /// Appends a UUID.
    @inlinable
    public mutating func appendUUID(_ value: UUID) {
        valueBytes.append(Tag.uuid.rawValue)
        withUnsafeBytes(of: value.uuid) { valueBytes.append(contentsOf: $0) }
    }

    /// Appends bytes with a length: UTF-8 for ``Tag/string``, ``Tag/uri`` and ``Tag/decimal`` (which must already
    /// be valid UTF-8, a URI's `absoluteString` and a decimal's canonical text), anything for ``Tag/binary``.
    @inlinable
    public mutating func appendBytes(_ bytes: UnsafeRawBufferPointer, tag: Tag) {
        valueBytes.append(tag.rawValue)
        Self.appendVarint(UInt64(bytes.count), to: &valueBytes)
        valueBytes.append(contentsOf: bytes)
    }

    /// Appends one value already in the page form (its tag and payload), as a store whose own form is the page
    /// form copies it. The caller has checked it: a page is only as good as what its producer appends.
    @inlinable
    public mutating func appendEncodedValue(_ bytes: UnsafeRawBufferPointer) {
        valueBytes.append(contentsOf: bytes)
    }

    /// Appends the current record's relationship values, all of them, already in the page form (checked by the
    /// caller, as for ``appendEncodedValue(_:)``).
    @inlinable
    public mutating func appendEncodedLinks(_ bytes: UnsafeRawBufferPointer) {
        linkBytes.append(contentsOf: bytes)
    }

    /// Appends any value in its page form.
    public mutating func append(_ value: StoreValue) {
        switch value {
        case .null: appendNull()
        case .integer16(let v): appendInteger(Int64(v), tag: .integer16)
        case .integer32(let v): appendInteger(Int64(v), tag: .integer32)
        case .integer64(let v): appendInteger(v, tag: .integer64)
        case .decimal(let v): appendText(DecimalText.string(for: v), tag: .decimal)
        case .double(let v): appendDouble(v, tag: .double)
        case .float(let v): appendFloat(v)
        case .string(let v): appendText(v, tag: .string)
        case .boolean(let v): appendBoolean(v)
        case .date(let v): appendDouble(v.timeIntervalSinceReferenceDate, tag: .date)
        case .binary(let v): v.withUnsafeBytes { appendBytes($0, tag: .binary) }
        case .uuid(let v): appendUUID(v)
        case .uri(let v): appendText(v.absoluteString, tag: .uri)
        }
    }

    private mutating func appendText(_ text: String, tag: Tag) {
        var text = text
        text.withUTF8 { appendBytes(UnsafeRawBufferPointer($0), tag: tag) }
    }

    // MARK: Building: relationships

    /// Appends a to-one value to the current record's relationships (records in the order their values were
    /// appended).
    @inlinable
    public mutating func appendToOne(_ key: Int64?) {
        if let key {
            linkBytes.append(1)
            Self.appendSigned(key, to: &linkBytes)
        } else {
            linkBytes.append(0)
        }
    }

    /// Appends a to-many value, its keys in order.
    @inlinable
    public mutating func appendToMany(_ keys: UnsafeBufferPointer<Int64>) {
        linkBytes.append(2)
        Self.appendVarint(UInt64(keys.count), to: &linkBytes)
        for k in keys { Self.appendSigned(k, to: &linkBytes) }
    }

    /// Appends a to-many value, its keys in order.
    @inlinable
    public mutating func appendToMany(_ keys: ArraySlice<Int64>) {
        keys.withUnsafeBufferPointer { appendToMany($0) }
    }

    /// Appends a to-many value, its keys in order.
    @inlinable
    public mutating func appendToMany(_ keys: [Int64]) {
        keys.withUnsafeBufferPointer { appendToMany($0) }
    }

    /// Ends the current record's relationships.
    @inlinable
    public mutating func endLinks() {
        linkEnds.append(linkBytes.count)
    }

    /// Appends a whole record, values and relationships (for a page built from records; the two passes then
    /// coincide).
    public mutating func append(_ record: Record) {
        beginRecord(primaryKey: record.primaryKey, globalID: record.globalID)
        for v in record.attributes { append(v) }
        endValues()
        for r in record.relationships {
            switch r {
            case .toOne(let k): appendToOne(k)
            case .toMany(let ks): appendToMany(ks)
            }
        }
        endLinks()
    }

    // MARK: Encoding primitives

    @inlinable @inline(__always) static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(truncatingIfNeeded: v))
    }

    @inlinable @inline(__always) static func appendSigned(_ value: Int64, to bytes: inout [UInt8]) {
        appendVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)), to: &bytes)
    }

    @inlinable @inline(__always) static func appendFixed<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
}
