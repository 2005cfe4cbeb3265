import Foundation
import StoreAPI

/// What `databaseInfo` holds.
struct XMLDatabaseInfo {
    var uuid: String?
    var nextObjectID: String?
    /// The top-level entries of Core Data's metadata property list.
    var plist: [String: MetadataValue] = [:]
    /// Our ``StoreMetadata`` JSON; `nil` in Core Data's own files.
    var storeMetadataJSON: String?
    var formatVersion: Int?
    var storeMetadataLine = 0
}

/// Reads an XML store, streaming: the document is walked once with a pull reader and records are delivered as
/// their `object` elements end (our stores), or after the whole file was seen (Core Data's, whose schema must be
/// inferred from every object first).
struct XMLStoreReader {
    let url: URL

    /// Every element: metadata, records, history.
    func read(_ body: (AtomicStoreElement) throws -> Void) throws {
        try readBody { r, info in
            if info.storeMetadataJSON != nil {
                try OwnStoreBodyReader(reader: r, metadata: try decodeMetadata(info, reader: r)).read(body)
            } else {
                try CoreDataStoreImporter(reader: r, info: info).read(body)
            }
        }
    }

    /// Every record's entity and key, in file order, without decoding values (a Core Data XML store, whose records
    /// are inferred from the whole file, is read whole).
    func readKeys(_ body: (String, Int64) throws -> Void) throws {
        try readBody { r, info in
            if info.storeMetadataJSON != nil {
                try OwnStoreBodyReader(reader: r, metadata: try decodeMetadata(info, reader: r)).readKeys(body)
            } else {
                try CoreDataStoreImporter(reader: r, info: info).read { if case .record(let record) = $0 { try body(record.entity, record.primaryKey) } }
            }
        }
    }

    /// Every history transaction, without decoding records.
    func readHistory(_ body: (HistoryTransaction) throws -> Void) throws {
        try readBody { r, info in
            if info.storeMetadataJSON != nil {
                try OwnStoreBodyReader(reader: r, metadata: try decodeMetadata(info, reader: r)).readHistory(body)
            } else {
                try CoreDataStoreImporter(reader: r, info: info).read { if case .history(let t) = $0 { try body(t) } }
            }
        }
    }

    /// Opens the file, checks the document down to its `<databaseInfo>`, and reads the rest with `body`.
    private func readBody(_ body: (LibXMLReader, XMLDatabaseInfo) throws -> Void) throws {
        var st = stat()
        guard stat(url.path, &st) == 0 else { throw StoreError.storeNotFound(url) }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw StoreError.corruptStore(url, reason: "not a regular file (a directory, device or pipe), so not an XML store")
        }
        let r = try LibXMLReader(fileAt: url)
        guard try r.moveToRoot() else { throw r.corrupt("the file holds no XML elements") }
        guard r.name == "database" else { throw r.corrupt("the root element is <\(r.name)>, not <database>") }
        if r.declaresEntities {
            throw r.corrupt("the document type declares entities, which stores never do (refused unread)")
        }
        r.dropEmptyDocumentType()
        guard !r.isEmptyElement, try r.nextChildElement(parentDepth: 0) else {
            throw r.corrupt("<database> holds no <databaseInfo>")
        }
        guard r.name == "databaseInfo" else {
            throw r.corrupt("<\(r.name)> where <databaseInfo> must come first in <database>")
        }
        try body(r, try readDatabaseInfo(r))
        try r.expectEnd()
    }

    private func readDatabaseInfo(_ r: LibXMLReader) throws -> XMLDatabaseInfo {
        var info = XMLDatabaseInfo()
        guard !r.isEmptyElement else { return info }
        while try r.nextChildElement(parentDepth: 1) {
            switch r.name {
            case "UUID": info.uuid = try r.readText().trimmingCharacters(in: .whitespacesAndNewlines)
            case "nextObjectID": info.nextObjectID = try r.readText().trimmingCharacters(in: .whitespacesAndNewlines)
            case "metadata": info.plist = try XMLPlistReader.readMetadata(r)
            case "storeMetadata":
                guard info.storeMetadataJSON == nil else { throw r.corrupt("<databaseInfo> holds two <storeMetadata>") }
                info.storeMetadataLine = r.line
                if let f = r.attribute("format"), f != XMLStoreFormat.metadataFormat {
                    throw r.corrupt("<storeMetadata> has unknown format '\(f)'")
                }
                if let v = r.attribute("formatVersion") {
                    guard let n = Int(v) else { throw r.corrupt("<storeMetadata> has invalid formatVersion '\(v)'") }
                    info.formatVersion = n
                }
                info.storeMetadataJSON = try XMLHistoryCoding.readEscapableText(r)
            default:
                try r.skipElement()  // `version` and anything a later Core Data may add
            }
        }
        return info
    }

    private func decodeMetadata(_ info: XMLDatabaseInfo, reader r: LibXMLReader) throws -> StoreMetadata {
        if let v = info.formatVersion, v > XMLStoreFormat.formatVersion {
            throw r.corrupt("written in XML store format \(v); this version reads up to \(XMLStoreFormat.formatVersion)",
                            line: info.storeMetadataLine)
        }
        do {
            return try StoreMetadata.decode(Data((info.storeMetadataJSON ?? "").utf8), url: url)
        } catch let StoreError.corruptStore(_, reason) {
            throw r.corrupt("<storeMetadata>: \(reason)", line: info.storeMetadataLine)
        }
    }
}

/// Reads the objects and history of a store written by this framework, whose schema is in its metadata.
///
/// This is the hot path of every load, so names are compared as C strings (element and attribute names against
/// static strings, property names against the schema's, trying the next one in write order first) and keys and
/// UUIDs are parsed from bytes.
struct OwnStoreBodyReader {
    let reader: LibXMLReader
    let metadata: StoreMetadata
    private let names: Names

    /// The format's element and attribute names, interned in the reader's dictionary.
    private struct Names {
        let object, history, attribute, relationship, name, type, enc, pk, gid: LibXMLReader.InternedName
        init(_ r: LibXMLReader) {
            object = r.intern("object")
            history = r.intern("history")
            attribute = r.intern("attribute")
            relationship = r.intern("relationship")
            name = r.intern("name")
            type = r.intern("type")
            enc = r.intern("enc")
            pk = r.intern("pk")
            gid = r.intern("gid")
        }
    }

    init(reader: LibXMLReader, metadata: StoreMetadata) {
        self.reader = reader
        self.metadata = metadata
        names = Names(reader)
    }

    private struct EntityPlan {
        let entity: Entity
        let rootIndex: Int
        let typeNames: [[UInt8]]
        let attributeNames: [[UInt8]]
        let relationshipNames: [[UInt8]]
        /// A record's starting values: every attribute nil, every relationship empty.
        let emptyAttributes: [StoreValue]
        let emptyRelationships: [RelationshipValue]
    }

    private static func cString(_ s: String) -> [UInt8] { Array(s.utf8) + [0] }

    /// What a read does with each `<object>`: decode it, report only its entity and key, or skip it.
    enum Objects { case decode, keysOnly, skip }

    /// Every element: metadata, records, history.
    func read(_ body: (AtomicStoreElement) throws -> Void) throws {
        try body(.metadata(metadata))
        try read(objects: .decode, record: { try body(.record($0)) }, key: { _, _ in }, decodesHistory: true, history: { try body(.history($0)) })
    }

    /// Every record's entity and key, in file order; values and history are skipped, not decoded.
    func readKeys(_ body: (String, Int64) throws -> Void) throws {
        try read(objects: .keysOnly, record: { _ in }, key: body, decodesHistory: false, history: { _ in })
    }

    /// Every history transaction; records are skipped, not decoded.
    func readHistory(_ body: (HistoryTransaction) throws -> Void) throws {
        try read(objects: .skip, record: { _ in }, key: { _, _ in }, decodesHistory: true, history: body)
    }

    /// The `<database>` element's children after its info: objects handled as `objects` says, history decoded or
    /// skipped.
    private func read(objects: Objects, record: (Record) throws -> Void, key: (String, Int64) throws -> Void,
                      decodesHistory: Bool, history: (HistoryTransaction) throws -> Void) throws {
        let r = reader
        let schema = metadata.schema
        var rootIndex: [String: Int] = [:]
        for (i, e) in schema.rootEntities.enumerated() { rootIndex[e.name] = i }
        var plans: [String: EntityPlan] = [:]
        for e in schema.entities {
            plans[e.name] = EntityPlan(
                entity: e, rootIndex: rootIndex[e.rootName] ?? 0,
                typeNames: e.attributes.map { Self.cString(XMLStoreFormat.typeName($0.type)) },
                attributeNames: e.attributes.map { Self.cString($0.name) },
                relationshipNames: e.relationships.map { Self.cString($0.name) },
                emptyAttributes: Array(repeating: .null, count: e.attributes.count),
                emptyRelationships: e.relationships.map { $0.isToMany ? .toMany([]) : .toOne(nil) })
        }
        // Which keys were seen, to refuse a key used twice: a bitmap for dense keys, so it stays small for a large
        // store (a `Set<Int64>` grew with the store and was most of what a conversion from XML grew by).
        var keys = [KeySet](repeating: KeySet(), count: rootIndex.count)
        var seenHistory = false
        var plan: EntityPlan?
        var planName: [UInt8] = []
        while try r.nextChildElement(parentDepth: 0) {
            if r.nameIs(names.object) {
                guard !seenHistory else { throw r.corrupt("<object> after <history>: objects must come first") }
                var pk: Int64?
                var gid: UUID?
                var typeFound = false
                var badValue: String?
                try r.forEachAttribute { name, value in
                    if LibXMLReader.equals(name, names.type) {
                        typeFound = true
                        if plan == nil || !LibXMLReader.equals(value, planName) {
                            let type = String(cString: value)
                            guard let p = plans[type] else { throw r.corrupt("<object> of unknown entity '\(type)'") }
                            plan = p
                            planName = Self.cString(type)
                        }
                    } else if LibXMLReader.equals(name, names.pk) {
                        pk = XMLBytes.int64(cString: value)
                        if pk == nil { badValue = "pk '\(String(cString: value))'" }
                    } else if LibXMLReader.equals(name, names.gid) {
                        gid = XMLBytes.uuid(cString: value) ?? UUID(uuidString: String(cString: value))
                        if gid == nil { badValue = "gid '\(String(cString: value))'" }
                    }
                }
                guard typeFound, let plan else { throw r.corrupt("<object> without a type") }
                guard !plan.entity.isAbstract else { throw r.corrupt("<object> of abstract entity '\(plan.entity.name)'") }
                if let badValue { throw r.corrupt("<object> of \(plan.entity.name) with invalid \(badValue)") }
                guard let pk else { throw r.corrupt("<object> of \(plan.entity.name) without a pk") }
                guard let gid else { throw r.corrupt("<object> \(plan.entity.name)/p\(pk) without a gid") }
                guard keys[plan.rootIndex].insert(pk) else {
                    throw r.corrupt("primary key \(pk) is used twice in \(plan.entity.rootName)")
                }
                switch objects {
                case .decode: try record(try readObject(plan, pk: pk, gid: gid))
                case .keysOnly:
                    try r.skipElement()
                    try key(plan.entity.name, pk)
                case .skip: try r.skipElement()
                }
            } else if r.nameIs(names.history) {
                guard !seenHistory else { throw r.corrupt("a second <history>") }
                seenHistory = true
                if decodesHistory { try XMLHistoryCoding.read(r, history) } else { try r.skipElement() }
            } else {
                throw r.corrupt("unexpected <\(r.name)> in <database>")
            }
        }
    }

    /// The index of the property whose name is at `p`: `guess` if it matches, else a lookup.
    private static func index(of p: UnsafePointer<UInt8>, in names: [[UInt8]], guess: Int, lookup: (String) -> Int?) -> Int? {
        if guess < names.count, LibXMLReader.equals(p, names[guess]) { return guess }
        return lookup(String(cString: p))
    }

    private func readObject(_ plan: EntityPlan, pk: Int64, gid: UUID) throws -> Record {
        let r = reader
        let entity = plan.entity
        var record = Record(entity: entity.name, primaryKey: pk, globalID: gid, attributes: plan.emptyAttributes,
                            relationships: plan.emptyRelationships)
        guard !r.isEmptyElement else { return record }
        var seenAttributes = SeenSet(count: entity.attributes.count)
        var seenRelationships = SeenSet(count: entity.relationships.count)
        var nextAttribute = 0
        var nextRelationship = 0
        let depth = r.depth
        while try r.nextChildElement(parentDepth: depth) {
            if r.nameIs(names.attribute) {
                var index: Int?
                var unknownName: String?
                var typeName = ""
                var typeChecked: Int?
                var escaped = false
                var badEncoding: String?
                try r.forEachAttribute { name, value in
                    if LibXMLReader.equals(name, names.name) {
                        index = Self.index(of: value, in: plan.attributeNames, guess: nextAttribute) { entity.attributeIndex($0) }
                        if index == nil { unknownName = String(cString: value) }
                    } else if LibXMLReader.equals(name, names.type) {
                        // `name` comes first in our files: compare in place, make a string only otherwise.
                        if let i = index, LibXMLReader.equals(value, plan.typeNames[i]) {
                            typeChecked = i
                        } else {
                            typeName = String(cString: value)
                        }
                    } else if LibXMLReader.equals(name, names.enc) {
                        escaped = LibXMLReader.equals(value, "escaped")
                        if !escaped { badEncoding = String(cString: value) }
                    }
                }
                if let unknownName { throw r.corrupt("entity \(entity.name) has no attribute '\(unknownName)'") }
                guard let i = index else { throw r.corrupt("<attribute> without a name in \(entity.name)/p\(pk)") }
                let name = entity.attributes[i].name
                guard seenAttributes.insert(i) else { throw r.corrupt("attribute '\(name)' appears twice in \(entity.name)/p\(pk)") }
                nextAttribute = i + 1
                guard typeChecked == i || typeName.utf8.elementsEqual(plan.typeNames[i].dropLast()) else {
                    if XMLStoreFormat.attributeType(named: typeName) == nil {
                        throw r.corrupt("unknown attribute type '\(typeName)' for '\(entity.name).\(name)'")
                    }
                    throw r.corrupt("attribute '\(entity.name).\(name)' is stored as '\(typeName)', the schema says '\(XMLStoreFormat.typeName(entity.attributes[i].type))'")
                }
                if let badEncoding { throw r.corrupt("unknown text encoding enc=\"\(badEncoding)\"") }
                let type = entity.attributes[i].type
                var invalid = ""
                let value: StoreValue? = try r.readTextBytes { bytes in
                    let v: StoreValue?
                    if escaped {
                        v = type == .string ? XMLTextEscaping.unescape(String(decoding: bytes, as: UTF8.self)).map { .string($0) } : nil
                    } else {
                        v = XMLValueText.value(from: bytes, type: type)
                    }
                    if v == nil { invalid = String(decoding: bytes.prefix(60), as: UTF8.self) }
                    return v
                }
                guard let value else {
                    throw r.corrupt("'\(Self.excerpt(invalid))' is not a valid \(XMLStoreFormat.typeName(type))\(escaped ? " (escaped)" : "") for '\(entity.name).\(name)'")
                }
                record.attributes[i] = value
            } else if r.nameIs(names.relationship) {
                var index: Int?
                var unknownName: String?
                try r.forEachAttribute { name, value in
                    if LibXMLReader.equals(name, names.name) {
                        index = Self.index(of: value, in: plan.relationshipNames, guess: nextRelationship) { entity.relationshipIndex($0) }
                        if index == nil { unknownName = String(cString: value) }
                    }
                }
                if let unknownName { throw r.corrupt("entity \(entity.name) has no relationship '\(unknownName)'") }
                guard let i = index else { throw r.corrupt("<relationship> without a name in \(entity.name)/p\(pk)") }
                let name = entity.relationships[i].name
                guard seenRelationships.insert(i) else { throw r.corrupt("relationship '\(name)' appears twice in \(entity.name)/p\(pk)") }
                nextRelationship = i + 1
                let keys: [Int64]? = try r.readTextBytes { bytes in
                    var keys: [Int64] = []
                    for part in bytes.split(whereSeparator: { $0 == 0x20 || $0 == 0x0A || $0 == 0x09 || $0 == 0x0D }) {
                        guard let k = XMLBytes.int64(part) else { return nil }
                        keys.append(k)
                    }
                    return keys
                }
                guard let keys else { throw r.corrupt("relationship '\(entity.name).\(name)' holds something other than primary keys") }
                if entity.relationships[i].isToMany {
                    record.relationships[i] = .toMany(keys)
                } else {
                    guard keys.count <= 1 else { throw r.corrupt("to-one relationship '\(entity.name).\(name)' holds \(keys.count) keys") }
                    record.relationships[i] = .toOne(keys.first)
                }
            } else {
                throw r.corrupt("unexpected <\(r.name)> in <object>")
            }
        }
        return record
    }

    static func excerpt(_ s: String) -> String { s.count > 40 ? String(s.prefix(40)) + "…" : s }
}

/// Which properties of one object were seen: a bit mask for up to 64, an array beyond (no allocation per object
/// in the common case).
private struct SeenSet {
    private var bits: UInt64 = 0
    private var overflow: [Bool]

    init(count: Int) { overflow = count > 64 ? [Bool](repeating: false, count: count) : [] }

    /// Marks `i`; `false` if it was already marked.
    mutating func insert(_ i: Int) -> Bool {
        if overflow.isEmpty {
            let mask: UInt64 = 1 << UInt64(i)
            defer { bits |= mask }
            return bits & mask == 0
        }
        defer { overflow[i] = true }
        return !overflow[i]
    }
}
