import Foundation

/// Turns the rows of a batch insert (``StoreContext/insertBatch(_:_:globalIDs:into:)`` and
/// ``StoreContext/insertBatch(_:count:globalIDs:into:row:)``) into records of a ``RecordPage``, checking each as
/// ``Entity/attributeValues(_:)`` and the context's validation check an inserted record, with the same errors in the
/// same order.
///
/// A row's values are encoded as they are set (in whatever order: a dictionary hands them out in its own), into a
/// scratch buffer, and then copied into the page in attribute order, with the page form of each default for the
/// attributes the row leaves out. No `[StoreValue]` is made per row and no value is copied into one: for a batch of
/// a million rows that is a million arrays and several million reference-count operations on values spread all
/// over the heap that do not happen.
///
/// The bytes are exactly those ``RecordPage/append(_:)-(StoreValue)`` appends for the same values. A row goes
/// ``beginRow()``, ``set(_:_:)`` for each value, ``finishRow(primaryKey:globalID:to:objectID:)``.
struct PageRowEncoder {
    let entity: Entity
    /// The page form of every attribute's default, one after the other, and where each one ends.
    private let blankBytes: [UInt8]
    private let blankEnds: [Int]
    /// The page form of an empty value of every relationship (nil to-one, empty to-many).
    private let blankLinks: [UInt8]
    /// Attributes whose value may not be nil.
    private let required: [Int]
    /// The first relationship that may not be empty: every batch row leaves it empty, so every row fails.
    private let requiredRelationship: String?

    /// Raw memory that frees itself (a struct cannot); used only through the pointers kept below.
    private final class RawMemory {
        let start: UnsafeMutableRawPointer
        init(byteCount: Int) { start = UnsafeMutableRawPointer.allocate(byteCount: max(8, byteCount), alignment: 8) }
        deinit { start.deallocate() }
    }

    private var scratchMemory: RawMemory
    private let spansMemory: RawMemory
    /// Scratch bytes: the current row's values as they were encoded, then the row assembled in attribute order.
    private var scratch: UnsafeMutableRawPointer
    private var capacity: Int
    private var used = 0
    /// Per attribute `i`, where its value starts (`spans[2i]`, -1 for the default) and ends in `scratch`.
    private let spans: UnsafeMutablePointer<Int>

    init(entity: Entity) {
        self.entity = entity
        var blanks = RecordPage(entity: entity.name)
        var ends: [Int] = []
        for value in entity.blankAttributes {
            blanks.append(value)
            ends.append(blanks.valueBytes.count)
        }
        blankBytes = blanks.valueBytes
        blankEnds = ends
        for r in entity.relationships {
            if r.isToMany { blanks.appendToMany([]) } else { blanks.appendToOne(nil) }
        }
        blankLinks = blanks.linkBytes
        required = entity.attributes.indices.filter { !entity.attributes[$0].isOptional }
        requiredRelationship = entity.relationships.first { !$0.isOptional }?.name
        capacity = 1024
        scratchMemory = RawMemory(byteCount: capacity)
        scratch = scratchMemory.start
        spansMemory = RawMemory(byteCount: 2 * MemoryLayout<Int>.stride * entity.attributes.count)
        spans = spansMemory.start.bindMemory(to: Int.self, capacity: 2 * entity.attributes.count)
    }

    /// Starts a row: every attribute at its default until ``set(_:_:)`` gives it a value.
    mutating func beginRow() {
        used = 0
        for i in 0..<blankEnds.count { spans[2 * i] = -1 }
    }

    /// Gives attribute `name` of the current row `value` (converted to the attribute's type, as
    /// ``Entity/attributeValues(_:)`` converts it). Setting an attribute again replaces its value.
    @inline(__always)
    mutating func set(_ name: String, _ value: StoreValue) throws {
        guard let i = entity.attributePosition(name) else {
            throw StoreError.unknownProperty(entity: entity.name, property: name)
        }
        let type = entity.attributeTypes[i]
        spans[2 * i] = used
        if encode(value, as: type) {
            // Stored as it is: it fits the attribute.
        } else if let converted = value.coerced(to: type), encode(converted, as: type) {
            // Stored converted.
        } else {
            throw StoreError.typeMismatch(entity: entity.name, property: name, expected: type, got: value.type?.rawValue ?? "nil")
        }
        spans[2 * i + 1] = used
    }

    /// Checks the current row's required values and appends it to `page` as a record (every relationship
    /// empty).
    ///
    /// - Throws: ``StoreError/missingValue(entity:property:object:)``, naming `objectID()`, for a required
    ///   attribute left nil or a required relationship (which a batch row cannot set). Nothing is appended then.
    mutating func finishRow(primaryKey: Int64, globalID: UUID, to page: inout RecordPage, objectID: () -> ObjectID) throws {
        let count = blankEnds.count
        for i in required {
            let start = spans[2 * i]
            let tag = start < 0 ? blankBytes[blankStart(i)] : scratch.load(fromByteOffset: start, as: UInt8.self)
            if tag == RecordPage.Tag.null.rawValue {
                throw StoreError.missingValue(entity: entity.name, property: entity.attributes[i].name, object: objectID())
            }
        }
        if let requiredRelationship {
            throw StoreError.missingValue(entity: entity.name, property: requiredRelationship, object: objectID())
        }
        // The row in attribute order, after what was encoded; then into the page in one copy.
        let rowStart = used
        reserve(2 * rowStart + blankBytes.count)
        blankBytes.withUnsafeBytes { blanks in
            for i in 0..<count {
                let start = spans[2 * i]
                if start < 0 {
                    put(UnsafeRawBufferPointer(rebasing: blanks[blankStart(i)..<blankEnds[i]]))
                } else {
                    let length = spans[2 * i + 1] - start
                    (scratch + used).copyMemory(from: scratch + start, byteCount: length)
                    used += length
                }
            }
        }
        page.beginRecord(primaryKey: primaryKey, globalID: globalID)
        page.appendEncodedValue(UnsafeRawBufferPointer(start: scratch + rowStart, count: used - rowStart))
        page.endValues()
        if !blankLinks.isEmpty { blankLinks.withUnsafeBytes { page.appendEncodedLinks($0) } }
        page.endLinks()
    }

    @inline(__always) private func blankStart(_ i: Int) -> Int { i == 0 ? 0 : blankEnds[i - 1] }

    // MARK: Encoding (the page form, as RecordPage.append writes it)

    /// Encodes `value` when it fits an attribute of `type` (what ``StoreValue/fits(_:)`` says, decided by the
    /// same switch that encodes); returns false, encoding nothing, when it does not.
    @inline(__always)
    private mutating func encode(_ value: StoreValue, as type: AttributeType) -> Bool {
        switch value {
        case .null: tag(.null)
        case .integer16(let v):
            guard type == .integer16 else { return false }
            integer(Int64(v), .integer16)
        case .integer32(let v):
            guard type == .integer32 else { return false }
            integer(Int64(v), .integer32)
        case .integer64(let v):
            guard type == .integer64 else { return false }
            integer(v, .integer64)
        case .decimal(let v):
            guard type == .decimal else { return false }
            text(DecimalText.string(for: v), .decimal)
        case .double(let v):
            guard type == .double else { return false }
            fixed(v.bitPattern, .double)
        case .float(let v):
            guard type == .float else { return false }
            reserve(used + 5)
            tag(.float)
            scratch.storeBytes(of: v.bitPattern.littleEndian, toByteOffset: used, as: UInt32.self)
            used += 4
        case .string(let v):
            guard type == .string else { return false }
            text(v, .string)
        case .boolean(let v):
            guard type == .boolean else { return false }
            tag(v ? .boolTrue : .boolFalse)
        case .date(let v):
            guard type == .date else { return false }
            fixed(v.timeIntervalSinceReferenceDate.bitPattern, .date)
        case .binary(let v):
            guard type == .binary || type == .transformable else { return false }
            v.withUnsafeBytes { bytes($0, .binary) }
        case .uuid(let v):
            guard type == .uuid else { return false }
            reserve(used + 17)
            tag(.uuid)
            withUnsafeBytes(of: v.uuid) { put($0) }
        case .uri(let v):
            guard type == .uri else { return false }
            text(v.absoluteString, .uri)
        }
        return true
    }

    @inline(__always) private mutating func reserve(_ bytes: Int) {
        guard bytes > capacity else { return }
        var grown = capacity
        while grown < bytes { grown *= 2 }
        let larger = RawMemory(byteCount: grown)
        larger.start.copyMemory(from: scratch, byteCount: used)
        scratchMemory = larger
        scratch = larger.start
        capacity = grown
    }

    @inline(__always) private mutating func tag(_ t: RecordPage.Tag) {
        reserve(used + 1)
        scratch.storeBytes(of: t.rawValue, toByteOffset: used, as: UInt8.self)
        used += 1
    }

    @inline(__always) private mutating func varint(_ value: UInt64) {
        reserve(used + 10)
        var v = value
        while v >= 0x80 {
            scratch.storeBytes(of: UInt8(truncatingIfNeeded: v) | 0x80, toByteOffset: used, as: UInt8.self)
            used += 1
            v >>= 7
        }
        scratch.storeBytes(of: UInt8(truncatingIfNeeded: v), toByteOffset: used, as: UInt8.self)
        used += 1
    }

    @inline(__always) private mutating func integer(_ value: Int64, _ t: RecordPage.Tag) {
        tag(t)
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    @inline(__always) private mutating func fixed(_ bits: UInt64, _ t: RecordPage.Tag) {
        reserve(used + 9)
        tag(t)
        scratch.storeBytes(of: bits.littleEndian, toByteOffset: used, as: UInt64.self)
        used += 8
    }

    @inline(__always) private mutating func put(_ raw: UnsafeRawBufferPointer) {
        guard let base = raw.baseAddress, raw.count > 0 else { return }
        reserve(used + raw.count)
        (scratch + used).copyMemory(from: base, byteCount: raw.count)
        used += raw.count
    }

    private mutating func bytes(_ raw: UnsafeRawBufferPointer, _ t: RecordPage.Tag) {
        reserve(used + 11 + raw.count)
        tag(t)
        varint(UInt64(raw.count))
        put(raw)
    }

    private mutating func text(_ s: String, _ t: RecordPage.Tag) {
        var s = s
        s.withUTF8 { bytes(UnsafeRawBufferPointer($0), t) }
    }
}
