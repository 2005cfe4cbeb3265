import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// Inserting a ``RecordPage`` (see ``PageInsertingStore``).
///
/// In a bulk load, each record of the page goes through the same save as a record would — its links, ordered
/// positions, join rows, entity columns, kept global ID and `Z_MAX` — as a shell holding only its key, global ID and
/// relationships, while its attribute values are bound into the row's INSERT straight from the page's bytes: no
/// string, data or value array is made per value. The values are checked as they are bound, against the attribute
/// types; a page that does not fit throws and the caller's transaction rolls it back.
///
/// Outside a bulk load, and for entities whose values may go to external files, the page becomes its records (its
/// values checked against the attribute types first, which a save of records leaves to the context).
extension CoreDataRowWriter {
    func insert(_ page: RecordPage, pending: inout CoreDataPendingLinks) throws {
        guard !page.isEmpty else { return }
        guard let p = plan.entities[page.entity] else {
            _ = try schema.requireEntity(page.entity)
            throw StoreError.unsupported("\(url.path): entity \(page.entity) has no table in this store")
        }
        let entity = p.entity
        guard isBulkLoad, !p.hasExternalStorage else {
            try checkTypes(page, entity)
            return try save(StoreChanges(inserted: page.records(in: schema)), pending: &pending)
        }
        if rowsAreIndependent(p) { return try insertIndependentRows(page, p, pending: &pending) }
        let toMany = entity.relationships.map(\.isToMany)
        var shells: [Record] = []
        shells.reserveCapacity(page.count)
        for i in 0..<page.count {
            let relationships = try page.withEncodedRecord(at: i) { _, links in
                var reader = RecordPage.LinkReader(links)
                var out: [RelationshipValue] = []
                out.reserveCapacity(toMany.count)
                for (k, isToMany) in toMany.enumerated() {
                    guard let v = reader.next(), v.isToMany == isToMany else {
                        throw malformed(page, i, "the value of \(entity.name).\(entity.relationships[k].name)")
                    }
                    out.append(v)
                }
                guard reader.isAtEnd else { throw malformed(page, i, "the relationship values") }
                return out
            }
            shells.append(Record(entity: entity.name, primaryKey: page.primaryKeys[i], globalID: page.globalIDs[i],
                                 attributes: [], relationships: relationships))
        }
        try save(StoreChanges(inserted: shells), pending: &pending, page: page)
    }

    /// Binds record `index`'s attribute values into `p`'s insert `s`, as `encode` would write the values they decode
    /// to, refusing one that does not fit its attribute as the page's decoding or the column would.
    static func bindPageValues(
        _ page: RecordPage, at index: Int, _ p: CoreDataWritePlan.EntityPlan, to s: OpaquePointer, url: URL
    ) throws(StoreError) {
        let failure: StoreError? = page.withEncodedRecord(at: index) { values, _ in
            bindValues(values, of: page, at: index, p, to: s, url: url, borrowing: false)
        }
        if let failure { throw failure }
    }

    /// Binds `values`, record `index`'s encoded attribute values, as ``bindPageValues(_:at:_:to:url:)`` does; the
    /// error when one does not fit. `borrowing`: text and data are bound where they lie (`SQLITE_STATIC`), not
    /// copied — for a caller that runs the statement while `values` is still borrowed, and rebinds or clears every
    /// parameter before the bytes go. `parameterOffset`: how far the row's parameters are from the first, in a
    /// statement inserting several rows.
    static func bindValues(
        _ values: UnsafeRawBufferPointer, of page: RecordPage, at index: Int, _ p: CoreDataWritePlan.EntityPlan,
        to s: OpaquePointer, url: URL, borrowing: Bool, parameterOffset: Int32 = 0
    ) -> StoreError? {
        let attributes = p.entity.attributes
        let parameters = p.attributeParameters
        var reader = RecordPage.ValueReader(values)
        for i in attributes.indices {
            guard let value = reader.next() else {
                return malformed(page, index, "the value of \(p.entity.name).\(attributes[i].name)", url: url)
            }
            let parameter = parameters[i] == 0 ? 0 : parameters[i] + parameterOffset
            if let error = Self.bind(value, attributes, i, entity: p.entity.name, to: s, at: parameter, borrowing: borrowing) {
                return error
            }
        }
        return reader.isAtEnd ? nil : malformed(page, index, "more values than \(p.entity.name) has attributes", url: url)
    }

    /// Binds one page value at `parameter` (none when `0`: the attribute has no column, its value is only checked);
    /// the error when it does not fit `attribute`.
    private static func bind(
        _ value: RecordPage.BorrowedValue, _ attributes: [AttributeDescription], _ i: Int, entity: String,
        to s: OpaquePointer?, at parameter: Int32, borrowing: Bool = false
    ) -> StoreError? {
        // The attribute is passed by array and index: copying its description per value costs more than binding it.
        let type = attributes[i].type
        func mismatch(_ tag: RecordPage.Tag) -> StoreError {
            .typeMismatch(entity: entity, property: attributes[i].name, expected: type, got: tag.typeName)
        }
        func unreadable(_ what: String) -> StoreError {
            .io(nil, operation: "saving \(entity).\(attributes[i].name)", reason: "the page holds \(what)")
        }
        // SQLITE_TRANSIENT: SQLite copies the bytes before the bind call returns.
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        // The page's own bytes (text, data) may stay where they are when the caller says so; a copy made here may not.
        let pageBytes: sqlite3_destructor_type? = borrowing ? nil : transient  // nil: SQLITE_STATIC
        let rc: Int32
        switch value {
        case .null:
            rc = parameter == 0 ? SQLITE_OK : sqlite3_bind_null(s, parameter)
        case .integer(let v, let tag):
            guard tag == .integer16 && type == .integer16 || tag == .integer32 && type == .integer32
                || tag == .integer64 && type == .integer64
            else { return mismatch(tag) }
            rc = parameter == 0 ? SQLITE_OK : sqlite3_bind_int64(s, parameter, v)
        case .boolean(let v):
            guard type == .boolean else { return mismatch(v ? .boolTrue : .boolFalse) }
            rc = parameter == 0 ? SQLITE_OK : sqlite3_bind_int64(s, parameter, v ? 1 : 0)
        case .double(let v, let tag):
            guard tag == .double && type == .double || tag == .date && type == .date else { return mismatch(tag) }
            rc = parameter == 0 ? SQLITE_OK : sqlite3_bind_double(s, parameter, v)
        case .float(let v):
            guard type == .float else { return mismatch(.float) }
            rc = parameter == 0 ? SQLITE_OK : sqlite3_bind_double(s, parameter, Double(v))
        case .uuid(let v):
            guard type == .uuid else { return mismatch(.uuid) }
            var u = v.uuid
            rc = parameter == 0 ? SQLITE_OK : withUnsafeBytes(of: &u) { b in
                sqlite3_bind_blob64(s, parameter, b.baseAddress, UInt64(b.count), transient)
            }
        case .bytes(let bytes, let tag):
            switch (type, tag) {
            case (.binary, .binary), (.transformable, .binary):
                guard parameter != 0 else { return nil }
                // A zero-length blob, not NULL: a page's bytes of an empty value have no base address.
                rc = bytes.isEmpty ? sqlite3_bind_zeroblob(s, parameter, 0)
                    : sqlite3_bind_blob64(s, parameter, bytes.baseAddress, UInt64(bytes.count), pageBytes)
            case (.string, .string):
                guard UTF8Bytes.isValid(bytes) else { return unreadable("text that is not UTF-8") }
                rc = parameter == 0 ? SQLITE_OK : bindText(bytes, s, parameter, pageBytes)
            case (.uri, .uri):
                if PlainURIText.isPlain(bytes) {
                    rc = parameter == 0 ? SQLITE_OK : bindText(bytes, s, parameter, pageBytes)
                } else {
                    guard let text = String(validating: bytes, as: UTF8.self), let u = URL(string: text) else {
                        return unreadable("a URI that is not one")
                    }
                    var absolute = u.absoluteString
                    rc = parameter == 0 ? SQLITE_OK : absolute.withUTF8 { bindText(UnsafeRawBufferPointer($0), s, parameter) }
                }
            case (.decimal, .decimal):
                // As `encode` writes a decimal: the double its canonical text spells.
                guard let real = CoreDataDecimalReal.real(utf8: bytes) else { return unreadable("a decimal that is not one") }
                rc = parameter == 0 ? SQLITE_OK : sqlite3_bind_double(s, parameter, real)
            default:
                return mismatch(tag)
            }
        }
        return rc == SQLITE_OK ? nil : unreadable("a value SQLite did not bind (code \(rc))")
    }

    private static func bindText(
        _ bytes: UnsafeRawBufferPointer, _ s: OpaquePointer?, _ parameter: Int32,
        _ destructor: sqlite3_destructor_type? = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    ) -> Int32 {
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        // An empty string, not NULL: an empty value's bytes have no base address.
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return sqlite3_bind_text(s, parameter, "", 0, transient) }
        return sqlite3_bind_text64(s, parameter, base.assumingMemoryBound(to: CChar.self), UInt64(bytes.count), destructor,
                                 UInt8(SQLITE_UTF8))
    }

    /// Refuses a page whose values do not fit their attributes' types before it becomes records.
    private func checkTypes(_ page: RecordPage, _ entity: Entity) throws {
        for i in 0..<page.count {
            let failure: StoreError? = page.withEncodedRecord(at: i) { values, _ in
                var reader = RecordPage.ValueReader(values)
                for i in entity.attributes.indices {
                    guard let value = reader.next() else { return nil }  // `records(in:)` reports it
                    if let error = Self.bind(value, entity.attributes, i, entity: entity.name, to: nil, at: 0) {
                        return error
                    }
                }
                return nil
            }
            if let failure { throw failure }
        }
    }

    private func malformed(_ page: RecordPage, _ index: Int, _ what: String) -> StoreError {
        Self.malformed(page, index, what, url: url)
    }

    private static func malformed(_ page: RecordPage, _ index: Int, _ what: String, url: URL) -> StoreError {
        .io(url, operation: "inserting a page of \(page.entity) records",
            reason: "record \(page.primaryKeys[index]): \(what) is malformed")
    }
}

extension RelationshipValue {
    /// Whether the value is a to-many's list of keys.
    var isToMany: Bool { if case .toMany = self { true } else { false } }
}
