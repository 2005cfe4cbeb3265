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

    func read(_ body: (AtomicStoreElement) throws -> Void) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw StoreError.storeNotFound(url)
        }
        guard !isDirectory.boolValue else { throw StoreError.corruptStore(url, reason: "a directory, not an XML store file") }
        let r = try LibXMLReader(fileAt: url)
        guard try r.moveToRoot() else { throw r.corrupt("the file holds no XML elements") }
        guard r.name == "database" else { throw r.corrupt("the root element is <\(r.name)>, not <database>") }
        guard !r.isEmptyElement, try r.nextChildElement(parentDepth: 0) else {
            throw r.corrupt("<database> holds no <databaseInfo>")
        }
        guard r.name == "databaseInfo" else {
            throw r.corrupt("<\(r.name)> where <databaseInfo> must come first in <database>")
        }
        let info = try readDatabaseInfo(r)
        if info.storeMetadataJSON != nil {
            try OwnStoreBodyReader(reader: r, metadata: try decodeMetadata(info, reader: r)).read(body)
        } else {
            try CoreDataStoreImporter(reader: r, info: info).read(body)
        }
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
struct OwnStoreBodyReader {
    let reader: LibXMLReader
    let metadata: StoreMetadata

    private struct EntityPlan {
        let entity: Entity
        let rootIndex: Int
        let typeNames: [String]
    }

    func read(_ body: (AtomicStoreElement) throws -> Void) throws {
        let r = reader
        try body(.metadata(metadata))
        let schema = metadata.schema
        var rootIndex: [String: Int] = [:]
        for (i, e) in schema.rootEntities.enumerated() { rootIndex[e.name] = i }
        var plans: [String: EntityPlan] = [:]
        for e in schema.entities {
            plans[e.name] = EntityPlan(entity: e, rootIndex: rootIndex[e.rootName] ?? 0,
                                       typeNames: e.attributes.map { XMLStoreFormat.typeName($0.type) })
        }
        var keys = [Set<Int64>](repeating: [], count: rootIndex.count)
        let objectName = r.intern("object")
        var seenHistory = false
        var plan: EntityPlan?
        while try r.nextChildElement(parentDepth: 0) {
            if r.namePointer == objectName {
                guard !seenHistory else { throw r.corrupt("<object> after <history>: objects must come first") }
                guard let type = r.attribute("type") else { throw r.corrupt("<object> without a type") }
                if plan?.entity.name != type { plan = plans[type] }
                guard let plan else { throw r.corrupt("<object> of unknown entity '\(type)'") }
                guard !plan.entity.isAbstract else { throw r.corrupt("<object> of abstract entity '\(type)'") }
                let record = try readObject(plan)
                guard keys[plan.rootIndex].insert(record.primaryKey).inserted else {
                    throw r.corrupt("primary key \(record.primaryKey) is used twice in \(plan.entity.rootName)")
                }
                try body(.record(record))
            } else if r.name == "history" {
                guard !seenHistory else { throw r.corrupt("a second <history>") }
                seenHistory = true
                try XMLHistoryCoding.read(r) { try body(.history($0)) }
            } else {
                throw r.corrupt("unexpected <\(r.name)> in <database>")
            }
        }
    }

    private func readObject(_ plan: EntityPlan) throws -> Record {
        let r = reader
        let entity = plan.entity
        guard let pkText = r.attribute("pk"), let pk = Int64(pkText) else {
            throw r.corrupt("<object> of \(entity.name) without a valid pk")
        }
        guard let gidText = r.attribute("gid"), let gid = UUID(uuidString: gidText) else {
            throw r.corrupt("<object> \(entity.name)/p\(pk) without a valid gid")
        }
        var record = entity.newRecord(primaryKey: pk, globalID: gid)
        for i in record.attributes.indices { record.attributes[i] = .null }
        guard !r.isEmptyElement else { return record }
        var seenAttributes = [Bool](repeating: false, count: entity.attributes.count)
        var seenRelationships = [Bool](repeating: false, count: entity.relationships.count)
        let depth = r.depth
        while try r.nextChildElement(parentDepth: depth) {
            switch r.name {
            case "attribute":
                guard let name = r.attribute("name") else { throw r.corrupt("<attribute> without a name in \(entity.name)/p\(pk)") }
                guard let i = entity.attributeIndex(name) else { throw r.corrupt("entity \(entity.name) has no attribute '\(name)'") }
                guard !seenAttributes[i] else { throw r.corrupt("attribute '\(name)' appears twice in \(entity.name)/p\(pk)") }
                seenAttributes[i] = true
                let typeName = r.attribute("type") ?? ""
                guard typeName == plan.typeNames[i] else {
                    if XMLStoreFormat.attributeType(named: typeName) == nil {
                        throw r.corrupt("unknown attribute type '\(typeName)' for '\(entity.name).\(name)'")
                    }
                    throw r.corrupt("attribute '\(entity.name).\(name)' is stored as '\(typeName)', the schema says '\(plan.typeNames[i])'")
                }
                let type = entity.attributes[i].type
                let text = type == .string ? try XMLHistoryCoding.readEscapableText(r) : try r.readText()
                guard let value = XMLValueText.value(from: text, type: type) else {
                    throw r.corrupt("'\(Self.excerpt(text))' is not a valid \(typeName) for '\(entity.name).\(name)'")
                }
                record.attributes[i] = value
            case "relationship":
                guard let name = r.attribute("name") else { throw r.corrupt("<relationship> without a name in \(entity.name)/p\(pk)") }
                guard let i = entity.relationshipIndex(name) else { throw r.corrupt("entity \(entity.name) has no relationship '\(name)'") }
                guard !seenRelationships[i] else { throw r.corrupt("relationship '\(name)' appears twice in \(entity.name)/p\(pk)") }
                seenRelationships[i] = true
                let text = try r.readText()
                var keys: [Int64] = []
                for part in text.utf8.split(whereSeparator: { $0 == 0x20 || $0 == 0x0A || $0 == 0x09 || $0 == 0x0D }) {
                    guard let k = Int64(String(decoding: part, as: UTF8.self)) else {
                        throw r.corrupt("relationship '\(entity.name).\(name)' holds '\(Self.excerpt(String(decoding: part, as: UTF8.self)))', not a primary key")
                    }
                    keys.append(k)
                }
                if entity.relationships[i].isToMany {
                    record.relationships[i] = .toMany(keys)
                } else {
                    guard keys.count <= 1 else { throw r.corrupt("to-one relationship '\(entity.name).\(name)' holds \(keys.count) keys") }
                    record.relationships[i] = .toOne(keys.first)
                }
            default:
                throw r.corrupt("unexpected <\(r.name)> in <object>")
            }
        }
        return record
    }

    static func excerpt(_ s: String) -> String { s.count > 40 ? String(s.prefix(40)) + "…" : s }
}
