import Foundation
import StoreAPI

/// Writes a whole store in the layout of ``XMLStoreFormat``, streaming records through libxml2's writer.
///
/// Before writing, one pass over the records' keys notes which exist, so that `idrefs` can name records written later
/// (document ids come from primary keys: ``DocumentIDs``). Everything the writer is handed is checked against the schema — a
/// value of the wrong type or a relationship of the wrong kind fails the save, because writing it would produce a
/// file that cannot be read back.
struct XMLStoreWriter {
    let url: URL

    /// What the writer needs per entity, computed once per write (names as C strings, ready for libxml2).
    private struct EntityPlan {
        let entity: Entity
        let rootIndex: Int
        let name: [UInt8]
        let attributeNames: [[UInt8]]
        let typeNames: [[UInt8]]
        let relationshipNames: [[UInt8]]
        let cardinalities: [[UInt8]]
        let destinations: [[UInt8]]
        let destinationRoots: [Int]
    }

    private static func cString(_ s: String) -> [UInt8] { Array(s.utf8) + [0] }

    func write(_ contents: any AtomicStoreContents) throws {
        let metadata = contents.metadata
        let schema = metadata.schema
        try Self.checkNames(in: schema)
        let plans = try Self.plans(for: schema)

        // Which records exist, before any is written: `idrefs` may name records written later, and must not name
        // records that are not in the file. Only hierarchies some relationship leads to need it.
        let referenced = Set(plans.values.flatMap(\.destinationRoots))
        var ids = DocumentIDs(rootCount: schema.rootEntities.count)
        // Keys only: a store being converted then reads each record once, in the pass that writes it.
        var counting: EntityPlan?
        try contents.forEachPrimaryKey { entity, primaryKey in
            if counting?.entity.name != entity { counting = plans[entity] }
            guard let plan = counting else { throw StoreError.unknownEntity(entity) }
            let key = RecordKey(entity: entity, primaryKey: primaryKey)
            guard ids.id(root: plan.rootIndex, primaryKey: primaryKey) != nil else {
                throw StoreError.io(url, operation: "writing \(key)", reason: "primary key \(primaryKey) is too large for a document id")
            }
            if referenced.contains(plan.rootIndex), !ids.insert(root: plan.rootIndex, primaryKey: primaryKey) {
                throw StoreError.io(url, operation: "writing \(key)", reason: "two records share primary key \(primaryKey) in \(plan.entity.rootName)")
            }
        }

        let w = try LibXMLWriter(creating: url)
        try w.startDocument()
        try w.doctype("database", systemID: XMLStoreFormat.dtdSystemID)
        try w.startElement("database")
        try writeDatabaseInfo(w, metadata: metadata, nextObjectID: ids.next)

        var plan: EntityPlan?
        try contents.forEachRecord { r in
            if plan?.entity.name != r.entity { plan = plans[r.entity] }
            guard let plan else { throw StoreError.unknownEntity(r.entity) }
            if referenced.contains(plan.rootIndex), !ids.contains(root: plan.rootIndex, primaryKey: r.primaryKey) {
                throw StoreError.io(url, operation: "writing \(r.key)", reason: "the records changed between the two passes over them")
            }
            guard let objectID = ids.id(root: plan.rootIndex, primaryKey: r.primaryKey) else {
                throw StoreError.io(url, operation: "writing \(r.key)", reason: "primary key \(r.primaryKey) is too large for a document id")
            }
            try writeObject(r, objectID: objectID, plan: plan, ids: ids, writer: w)
        }

        var wroteHistoryStart = false
        try contents.forEachHistoryTransaction { t in
            if !wroteHistoryStart {
                try w.startElement("history")
                wroteHistoryStart = true
            }
            try XMLHistoryCoding.write(t, to: w)
        }
        if wroteHistoryStart { try w.endElement(container: true) }
        try w.endElement(container: true)
        try w.finish()
    }

    private func writeDatabaseInfo(_ w: LibXMLWriter, metadata: StoreMetadata, nextObjectID: Int) throws {
        try w.startElement("databaseInfo")
        try Self.textElement(w, "version", XMLStoreFormat.coreDataVersion)
        try Self.textElement(w, "UUID", metadata.storeUUID.uuidString)
        try Self.textElement(w, "nextObjectID", String(nextObjectID))
        // A property list as Core Data keeps there, so its readers find the keys they look for.
        try w.startElement("metadata")
        try w.startElement("plist")
        try w.attribute("version", "1.0")
        try w.startElement("dict")
        try Self.textElement(w, "key", "NSStoreType")
        try Self.textElement(w, "string", "XML")
        try Self.textElement(w, "key", "NSStoreUUID")
        try Self.textElement(w, "string", metadata.storeUUID.uuidString)
        try w.endElement(container: true)
        try w.endElement(container: true)
        try w.endElement(container: true)
        let json = String(decoding: try metadata.encoded(), as: UTF8.self)
        try Self.escapableTextElement(w, "storeMetadata", json, attributes: [
            ("format", XMLStoreFormat.metadataFormat), ("formatVersion", String(XMLStoreFormat.formatVersion)),
        ])
        try w.endElement(container: true)
    }

    private func writeObject(_ r: Record, objectID: Int, plan: EntityPlan, ids: DocumentIDs, writer w: LibXMLWriter) throws {
        let entity = plan.entity
        guard r.attributes.count == entity.attributes.count, r.relationships.count == entity.relationships.count else {
            throw StoreError.io(url, operation: "writing \(r.key)", reason: "the record has \(r.attributes.count) attribute and \(r.relationships.count) relationship values; \(entity.name) has \(entity.attributes.count) and \(entity.relationships.count)")
        }
        try w.startElement("object")
        try w.attribute("type", cString: plan.name)
        try w.attribute("id", "z" + String(objectID))
        try w.attribute("pk", String(r.primaryKey))
        try w.attribute("gid", XMLBytes.string(r.globalID))
        for (i, a) in entity.attributes.enumerated() {
            let value = r.attributes[i]
            if value.isNull { continue }
            guard value.fits(a.type) else {
                throw StoreError.typeMismatch(entity: entity.name, property: a.name, expected: a.type, got: "\(value.type?.rawValue ?? "nil") value \(value)")
            }
            try w.startElement("attribute")
            try w.attribute("name", cString: plan.attributeNames[i])
            try w.attribute("type", cString: plan.typeNames[i])
            if case .string(let s) = value, XMLTextEscaping.needsEscaping(s) {
                try w.attribute("enc", "escaped")
                try w.text(XMLTextEscaping.escape(s))
            } else {
                try w.text(XMLValueText.text(for: value))
            }
            try w.endElement()
        }
        for (i, rel) in entity.relationships.enumerated() {
            let value = r.relationships[i]
            switch value {
            case .toOne where rel.isToMany, .toMany where !rel.isToMany:
                throw StoreError.invalidRelationshipTarget(entity: entity.name, relationship: rel.name,
                                                           reason: "record \(r.key) holds a \(rel.isToMany ? "to-one" : "to-many") value")
            default: break
            }
            let keys = value.keys
            if keys.isEmpty { continue }
            try w.startElement("relationship")
            try w.attribute("name", cString: plan.relationshipNames[i])
            try w.attribute("type", cString: plan.cardinalities[i])
            try w.attribute("destination", cString: plan.destinations[i])
            let root = plan.destinationRoots[i]
            var idrefs = ""
            var bytes = 0
            for k in keys {
                // A record that no longer exists has no id (the content keeps the key).
                guard ids.contains(root: root, primaryKey: k), let n = ids.id(root: root, primaryKey: k) else { continue }
                if !idrefs.isEmpty { idrefs += " " }
                idrefs += "z"
                idrefs += String(n)
                bytes = idrefs.utf8.count
                if bytes > XMLStoreFormat.maxIDRefsBytes { break }
            }
            if bytes <= XMLStoreFormat.maxIDRefsBytes { try w.attribute("idrefs", idrefs) }
            var text = ""
            for k in keys {
                if !text.isEmpty { text += " " }
                text += String(k)
            }
            try w.text(text)
            try w.endElement()
        }
        try w.endElement(container: true)
    }

    private static func plans(for schema: Schema) throws -> [String: EntityPlan] {
        var rootIndex: [String: Int] = [:]
        for (i, e) in schema.rootEntities.enumerated() { rootIndex[e.name] = i }
        var plans: [String: EntityPlan] = [:]
        for e in schema.entities {
            guard let ri = rootIndex[e.rootName] else { throw StoreError.unknownEntity(e.rootName) }
            var destinations: [Int] = []
            for r in e.relationships {
                let dest = try schema.requireEntity(r.destination)
                guard let di = rootIndex[dest.rootName] else { throw StoreError.unknownEntity(dest.rootName) }
                destinations.append(di)
            }
            plans[e.name] = EntityPlan(
                entity: e, rootIndex: ri, name: cString(e.name), attributeNames: e.attributes.map { cString($0.name) },
                typeNames: e.attributes.map { cString(XMLStoreFormat.typeName($0.type)) },
                relationshipNames: e.relationships.map { cString($0.name) },
                cardinalities: e.relationships.map { cString(XMLStoreFormat.cardinality($0)) },
                destinations: e.relationships.map { cString($0.destination) }, destinationRoots: destinations)
        }
        return plans
    }

    /// Entity and property names go into XML attributes, which cannot carry what XML 1.0 cannot.
    private static func checkNames(in schema: Schema) throws {
        for e in schema.entities {
            try checkName(e.name)
            for a in e.attributes { try checkName(a.name) }
            for r in e.relationships { try checkName(r.name) }
        }
    }

    static func checkName(_ name: String) throws {
        if XMLTextEscaping.needsEscaping(name) {
            throw StoreError.unsupported("XML stores cannot hold the name \(String(reflecting: name)): it contains characters XML 1.0 cannot represent")
        }
    }

    static func textElement(_ w: LibXMLWriter, _ name: StaticString, _ text: String) throws {
        try w.startElement(name)
        try w.text(text)
        try w.endElement()
    }

    /// An element holding `text`, marked `enc="escaped"` and escaped when XML cannot carry it as is.
    static func escapableTextElement(_ w: LibXMLWriter, _ name: StaticString, _ text: String, attributes: [(StaticString, String)] = []) throws {
        try w.startElement(name)
        for (n, v) in attributes { try w.attribute(n, v) }
        if XMLTextEscaping.needsEscaping(text) {
            try w.attribute("enc", "escaped")
            try w.text(XMLTextEscaping.escape(text))
        } else {
            try w.text(text)
        }
        try w.endElement()
    }
}
