import Foundation
@_spi(BackendKit) import StoreAPI

extension RecordCodec {
    /// Appends a stored record to `page` (a page of `entity`'s records), checking it as ``decode(_:primaryKey:layout:)``
    /// checks it, and holding the same values a decoded record would: the stored form is the page form, so values
    /// are copied as they are, except a decimal whose text is not the canonical one and a URI that is not plain
    /// text (both rewritten as a decoded value would write them).
    static func append(
        _ bytes: UnsafeRawBufferPointer, primaryKey: Int64, entity: Entity, entityID: UInt32, to page: inout RecordPage
    ) throws {
        var r = ByteReader(bytes)
        let v = try r.byte()
        guard v == version else { throw ByteReader.Malformed(reason: "unknown record format version \(v)") }
        guard try r.varint() == UInt64(entityID) else { throw ByteReader.Malformed(reason: "a record of another entity") }
        let globalID = try r.uuid()
        let attributeCount = try r.varint()
        guard attributeCount == UInt64(entity.attributes.count) else {
            throw ByteReader.Malformed(reason: "\(attributeCount) attribute values for \(entity.name), which has \(entity.attributes.count)")
        }
        page.beginRecord(primaryKey: primaryKey, globalID: globalID)
        // The values are copied in runs as long as they stand (usually all of a record's at once): appending each
        // value's few bytes on its own cost more than checking it.
        var run = r.offset
        for _ in 0..<entity.attributes.count {
            let start = r.offset
            guard let rewritten = try checkValue(&r) else { continue }
            if start > run { page.appendEncodedValue(UnsafeRawBufferPointer(rebasing: r.buffer[run..<start])) }
            page.append(rewritten)
            run = r.offset
        }
        if r.offset > run { page.appendEncodedValue(UnsafeRawBufferPointer(rebasing: r.buffer[run..<r.offset])) }
        page.endValues()
        let relationshipCount = try r.varint()
        guard relationshipCount == UInt64(entity.relationships.count) else {
            throw ByteReader.Malformed(reason: "\(relationshipCount) relationship values for \(entity.name), which has \(entity.relationships.count)")
        }
        let linksStart = r.offset
        for _ in 0..<entity.relationships.count {
            switch try r.byte() {
            case 0: continue
            case 1: _ = try r.signed()
            case 2:
                let n = try r.varint()
                guard n <= UInt64(bytes.count - r.offset) else { throw ByteReader.Malformed(reason: "to-many count \(n) runs past the end") }
                for _ in 0..<n { _ = try r.signed() }
            case let t: throw ByteReader.Malformed(reason: "unknown relationship tag \(t)")
            }
        }
        guard r.isAtEnd else { throw ByteReader.Malformed(reason: "\(bytes.count - r.offset) unexpected bytes after the record") }
        page.appendEncodedLinks(UnsafeRawBufferPointer(rebasing: bytes[linksStart..<r.offset]))
        page.endLinks()
    }

    /// Checks one stored value as ``LMDBValueCodec/decode(from:)`` does and reads past it; returns the value to
    /// append instead of its bytes when those are not the page form a decoded value would have (a decimal whose
    /// text is not the canonical one, a URI that is not plain text), `nil` when its bytes stand.
    private static func checkValue(_ r: inout ByteReader) throws -> StoreValue? {
        let raw = try r.byte()
        guard let tag = LMDBValueCodec.Tag(rawValue: raw) else { throw ByteReader.Malformed(reason: "unknown value tag \(raw)") }
        switch tag {
        case .null, .boolFalse, .boolTrue: break
        case .integer16:
            let v = try r.signed()
            guard Int16(exactly: v) != nil else { throw ByteReader.Malformed(reason: "16-bit integer out of range: \(v)") }
        case .integer32:
            let v = try r.signed()
            guard Int32(exactly: v) != nil else { throw ByteReader.Malformed(reason: "32-bit integer out of range: \(v)") }
        case .integer64: _ = try r.signed()
        case .double, .date: _ = try r.fixed64()
        case .float: _ = try r.fixed32()
        case .uuid: _ = try r.uuid()
        case .binary: _ = try r.lengthPrefixed()
        case .string:
            let text = try r.lengthPrefixed()
            guard UTF8Bytes.isValid(text) else {
                throw ByteReader.Malformed(reason: "invalid UTF-8 in a string ending at byte \(r.offset)")
            }
        case .decimal:
            let text = try r.lengthPrefixed()
            guard let (d, isCanonical) = DecimalText.decimal(utf8: text) else {
                throw ByteReader.Malformed(reason: "unreadable decimal \(String(reflecting: String(decoding: text, as: UTF8.self)))")
            }
            if !isCanonical { return .decimal(d) }
        case .uri:
            let text = try r.lengthPrefixed()
            if !PlainURIText.isPlain(text) {
                let s = String(decoding: text, as: UTF8.self)
                guard Array(s.utf8).elementsEqual(text), let u = URL(string: s) else {
                    throw ByteReader.Malformed(reason: "unreadable URI \(String(reflecting: s))")
                }
                return .uri(u)
            }
        }
        return nil
    }
}
