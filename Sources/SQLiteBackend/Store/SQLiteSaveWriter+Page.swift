import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

extension SQLiteSaveWriter {
    /// Inserts a page's records during a bulk load, as ``apply(_:)`` inserts the same records: each value bound
    /// from the page's bytes after the checks ``SQLiteValueCodec/bind(_:type:to:at:entity:property:)`` makes (and the
    /// page's own: integer ranges, UTF-8, decimal and URI text), the foreign keys from its relationship values and
    /// the join rows written as a bulk load writes them. Outside a bulk load the page is applied as records.
    mutating func insert(_ page: RecordPage) throws {
        guard isBulkLoad else { return try apply(StoreChanges(inserted: try page.records(in: layout.schema))) }
        guard !page.isEmpty else { return }
        let el = try entityLayout(page.entity)
        let entity = el.entity
        guard el.isComplete else {
            throw StoreError.corruptStore(url, reason: "the layout has no column for a property of \(entity.name)")
        }
        var i = 0
        // As in `apply`: a refused run goes in one by one, without a batch tried again from each of its records.
        var singlyUntil = 0
        while i < page.count {
            if i >= singlyUntil {
                switch try insertBatch(of: page, el, from: i) {
                case .inserted(let next):
                    i = next
                    continue
                case .refused(let end): singlyUntil = end
                case .notABatch: break
                }
            }
            try insertRow(of: page, el, at: i)
            i += 1
        }
        let url = self.url
        try addJoinRows(el, 0..<page.count, primaryKey: { page.primaryKeys[$0] }) { i, k in
            try page.withEncodedRecord(at: i) { _, links in
                var linkReader = RecordPage.LinkReader(links)
                for _ in 0..<k { _ = linkReader.skip() }
                guard case .toMany(let keys) = linkReader.next() else {
                    throw Self.shapeError(url, RecordKey(entity: entity.name, primaryKey: page.primaryKeys[i]),
                                          entity.relationships[k].name, expected: "to-many")
                }
                return keys
            }
        }
        try moveKeyAllocators()
    }

    /// Inserts the page's records from `start` with one statement (``EntityLayout/insertBatchSQL``), as
    /// ``insertBatch(of:from:)`` inserts records.
    private mutating func insertBatch(of page: RecordPage, _ el: EntityLayout, from start: Int) throws -> BatchOutcome {
        let end = start + el.insertBatchRows
        guard el.insertBatchRows > 1, end <= page.count else { return .notABatch }
        // Nothing of `self` in the closure: a mutating method's closure would copy the writer for it.
        let (url, connection) = (self.url, self.connection)
        let inserted: Bool = try connection.withStatement(el.insertBatchSQL, clearingBindings: false) { s in
            do {
                for i in start..<end {
                    try Self.bind(page, at: i, el, to: s, from: Int32(i - start) * el.insertParameterCount + 1, url: url)
                }
            } catch {
                return false
            }
            return try Self.stepBatch(s, connection, "inserting \(page.entity) \(page.primaryKeys[start]) and the \(end - start - 1) records after it")
        }
        guard inserted else { return .refused(end: end) }
        for i in start..<end { noteInserted(page.primaryKeys[i], root: el.root) }
        return .inserted(next: end)
    }

    /// Inserts the page's record at `i` alone.
    private mutating func insertRow(of page: RecordPage, _ el: EntityLayout, at i: Int) throws {
        let url = self.url
        let rc: Int32 = try connection.withStatement(el.insertSQL, clearingBindings: false) { s in
            try Self.bind(page, at: i, el, to: s, from: 1, url: url)
            return sqlite3_step(s.handle)
        }
        guard rc == SQLITE_DONE else {
            throw try constraintError(rc, try page.record(at: i, of: el.entity), el, table(el), insert: true)
        }
        noteInserted(page.primaryKeys[i], root: el.root)
    }

    /// Binds the parameters of the row of the page's record at `i` in ``EntityLayout/insertSQL``, the first at
    /// `first`, from the page's bytes.
    private static func bind(_ page: RecordPage, at i: Int, _ el: EntityLayout, to s: Statement, from first: Int32, url: URL) throws {
        let entity = el.entity
        let pk = page.primaryKeys[i]
        let key = RecordKey(entity: entity.name, primaryKey: pk)
        try page.withEncodedRecord(at: i) { values, links in
            s.bind(first, pk)
            s.bind(first + 1, el.code)
            var gid = page.globalIDs[i].uuid
            try withUnsafeBytes(of: &gid) { try s.bind(first + 2, bytes: $0) }
            var index = first + 3
            var reader = RecordPage.ValueReader(values)
            // Each attribute's type from the layout, as `apply` binds them: no attribute description is copied.
            let reads = el.attributeReads
            for k in reads.indices {
                guard let value = reader.next() else {
                    throw Self.malformed(url, key, "the value of \(entity.attributes[k].name)")
                }
                try SQLiteValueCodec.bind(value, type: reads[k].type, to: s, at: index, entity: entity.name,
                                          property: entity.attributes[k].name)
                index += 1
            }
            guard reader.isAtEnd else { throw Self.malformed(url, key, "the attribute values") }
            var linkReader = RecordPage.LinkReader(links)
            for (k, storage) in el.relationships.enumerated() {
                guard case .foreignKey = storage else {
                    guard linkReader.skip() else { throw Self.malformed(url, key, "the relationship values") }
                    continue
                }
                guard case .toOne(let related) = linkReader.next() else {
                    throw Self.shapeError(url, key, entity.relationships[k].name, expected: "to-one")
                }
                if let related { s.bind(index, related) } else { s.bindNull(index) }
                index += 1
            }
            guard linkReader.isAtEnd else { throw Self.malformed(url, key, "the relationship values") }
        }
    }

    static func malformed(_ url: URL, _ key: RecordKey, _ what: String) -> StoreError {
        .io(url, operation: "saving \(key)", reason: "\(what) of the page are malformed")
    }
}

extension SQLiteValueCodec {
    /// Binds a page's value for an attribute of `type`: the same values, and the same refusals, as binding the
    /// ``StoreValue`` it decodes to — checked without making it.
    static func bind(
        _ value: RecordPage.BorrowedValue, type: AttributeType, to s: Statement, at index: Int32, entity: String, property: String
    ) throws {
        func mismatch(_ tag: RecordPage.Tag) -> StoreError {
            .typeMismatch(entity: entity, property: property, expected: type, got: tag.typeName)
        }
        func unreadable(_ what: String) -> StoreError {
            .io(nil, operation: "saving \(entity).\(property)", reason: "the page holds \(what)")
        }
        switch value {
        case .null:
            s.bindNull(index)
        case .integer(let v, let tag):
            guard tag == .integer16 && type == .integer16 || tag == .integer32 && type == .integer32
                || tag == .integer64 && type == .integer64
            else { throw mismatch(tag) }
            s.bind(index, v)
        case .boolean(let v):
            guard type == .boolean else { throw mismatch(v ? .boolTrue : .boolFalse) }
            s.bind(index, Int64(v ? 1 : 0))
        case .double(let v, let tag):
            guard tag == .double && type == .double || tag == .date && type == .date else { throw mismatch(tag) }
            try bindReal(v, to: s, at: index)
        case .float(let v):
            guard type == .float else { throw mismatch(.float) }
            try bind(StoreValue.float(v), type: type, to: s, at: index, entity: entity, property: property)
        case .uuid(let v):
            guard type == .uuid else { throw mismatch(.uuid) }
            var u = v.uuid
            try withUnsafeBytes(of: &u) { try s.bind(index, bytes: $0) }
        case .bytes(let bytes, let tag):
            switch (type, tag) {
            case (.binary, .binary), (.transformable, .binary):
                try s.bind(index, bytes: bytes)
            case (.string, .string):
                guard UTF8Bytes.isValid(bytes) else { throw unreadable("text that is not UTF-8") }
                try s.bindText(index, bytes: bytes)
            case (.uri, .uri):
                if PlainURIText.isPlain(bytes) {
                    try s.bindText(index, bytes: bytes)
                } else {
                    guard let text = String(validating: bytes, as: UTF8.self), let u = URL(string: text) else {
                        throw unreadable("a URI that is not one")
                    }
                    try bind(StoreValue.uri(u), type: type, to: s, at: index, entity: entity, property: property)
                }
            case (.decimal, .decimal):
                guard let (d, isCanonical) = DecimalText.decimal(utf8: bytes) else { throw unreadable("a decimal that is not one") }
                if isCanonical { try s.bindText(index, bytes: bytes) } else { try s.bind(index, decimalText(d)) }
            default:
                throw mismatch(tag)
            }
        }
    }
}
