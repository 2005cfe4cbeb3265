import Foundation

/// Compares two stores logically, across store types: records matched by global ID (attributes bit for bit,
/// relationships by the global IDs of their targets, in order for ordered relationships), metadata (store UUID,
/// schema, configuration, custom keys, sync options) and history.
///
/// Both stores are read entity by entity in primary-key order, a page at a time. Records that sit at the same
/// primary key in both (the case after any convert, copy or replace) are compared on the spot; only records that
/// do not line up are held until their partner turns up, so comparing a store with its copy takes bounded memory.
public struct StoreComparison {
    /// Records per page.
    public var batchSize: Int
    /// Compare metadata (off to compare records only, as for a store rebuilt by import).
    public var comparesMetadata: Bool
    /// Compare history.
    public var comparesHistory: Bool
    /// How many records each list of the result names (all are counted).
    public var listLimit: Int

    /// Creates a comparison.
    public init(batchSize: Int = 2_000, comparesMetadata: Bool = true, comparesHistory: Bool = true, listLimit: Int = 100) {
        self.batchSize = max(1, batchSize)
        self.comparesMetadata = comparesMetadata
        self.comparesHistory = comparesHistory
        self.listLimit = max(0, listLimit)
    }

    /// Compares store `a` with store `b`.
    public func compare(_ a: any PersistentStore, _ b: any PersistentStore) throws -> StoreDifferences {
        var result = StoreDifferences()
        let metaA = a.metadata
        let metaB = b.metadata
        if comparesMetadata { result.metadata = Self.compareMetadata(metaA, metaB) }

        let entitiesA = try metaA.schema.entities(inConfiguration: metaA.configuration).filter { !$0.isAbstract }.map(\.name)
        let entitiesB = try metaB.schema.entities(inConfiguration: metaB.configuration).filter { !$0.isAbstract }.map(\.name)
        var names = entitiesA
        for n in entitiesB where !names.contains(n) { names.append(n) }

        let resolverA = GlobalIDResolver(store: a, schema: metaA.schema)
        let resolverB = GlobalIDResolver(store: b, schema: metaB.schema)
        var pendingA: [UUID: PortableRecord] = [:]
        var pendingB: [UUID: PortableRecord] = [:]

        func matched(_ x: PortableRecord, _ y: PortableRecord) {
            result.recordsCompared += 1
            let details = Self.differences(x, y)
            guard !details.isEmpty else { return }
            result.differingCount += 1
            if result.differing.count < listLimit {
                result.differing.append(.init(record: .init(entity: x.entity.name, globalID: x.globalID), details: details))
            }
        }
        func stashA(_ r: PortableRecord) {
            if let other = pendingB.removeValue(forKey: r.globalID) { matched(r, other) } else { pendingA[r.globalID] = r }
        }
        func stashB(_ r: PortableRecord) {
            if let other = pendingA.removeValue(forKey: r.globalID) { matched(other, r) } else { pendingB[r.globalID] = r }
        }

        for name in names {
            var cursorA = PageCursor(store: a, entity: metaA.schema.entity(named: name), resolver: resolverA, batchSize: batchSize)
            var cursorB = PageCursor(store: b, entity: metaB.schema.entity(named: name), resolver: resolverB, batchSize: batchSize)
            while true {
                let x = try cursorA.peek()
                let y = try cursorB.peek()
                switch (x, y) {
                case (nil, nil):
                    break
                case (let x?, let y?) where x.primaryKey == y.primaryKey:
                    if x.globalID == y.globalID { matched(x, y) } else { stashA(x); stashB(y) }
                    cursorA.advance()
                    cursorB.advance()
                    continue
                case (let x?, let y) where y == nil || x.primaryKey < y!.primaryKey:
                    stashA(x)
                    cursorA.advance()
                    continue
                case (_, let y?):
                    stashB(y)
                    cursorB.advance()
                    continue
                default:
                    break
                }
                break
            }
        }
        let onlyA = pendingA.values.sorted { ($0.entity.name, $0.globalID.uuidString) < ($1.entity.name, $1.globalID.uuidString) }
        let onlyB = pendingB.values.sorted { ($0.entity.name, $0.globalID.uuidString) < ($1.entity.name, $1.globalID.uuidString) }
        result.onlyInACount = onlyA.count
        result.onlyInBCount = onlyB.count
        result.onlyInA = onlyA.prefix(listLimit).map { .init(entity: $0.entity.name, globalID: $0.globalID) }
        result.onlyInB = onlyB.prefix(listLimit).map { .init(entity: $0.entity.name, globalID: $0.globalID) }

        if comparesHistory { result.history = try Self.compareHistory(a, b) }
        return result
    }

    // MARK: Records

    /// A record with its relationships as global IDs, so records of two stores can be compared.
    struct PortableRecord {
        let entity: Entity
        let primaryKey: Int64
        let globalID: UUID
        let attributes: [StoreValue]
        let relationships: [[UUID]]
    }

    /// Pages through one entity of one store.
    struct PageCursor {
        let store: any PersistentStore
        let entity: Entity?
        let resolver: GlobalIDResolver
        let batchSize: Int
        private var buffer: [PortableRecord] = []
        private var index = 0
        private var after: Int64?
        private var exhausted: Bool

        init(store: any PersistentStore, entity: Entity?, resolver: GlobalIDResolver, batchSize: Int) {
            self.store = store
            self.entity = entity
            self.resolver = resolver
            self.batchSize = batchSize
            self.exhausted = entity == nil || entity?.isAbstract == true
        }

        mutating func peek() throws -> PortableRecord? {
            if index < buffer.count { return buffer[index] }
            guard !exhausted, let entity else { return nil }
            let page = try store.scan(entity: entity.name, after: after, limit: batchSize)
            if page.count < batchSize { exhausted = true }
            guard let last = page.last else { return nil }
            after = last.primaryKey
            try resolver.prepare(page: page, entity: entity)
            let roots = resolver.destinationRoots(of: entity)
            buffer = page.map { r in
                PortableRecord(entity: entity, primaryKey: r.primaryKey, globalID: r.globalID, attributes: r.attributes,
                               relationships: r.relationships.enumerated().map { k, v in
                                   v.keys.map { resolver.globalID(root: k < roots.count ? roots[k] : "", key: $0) ?? Self.missing($0) }
                               })
            }
            index = 0
            return buffer.first
        }

        mutating func advance() { index += 1 }

        /// A stand-in for a dangling key, so the comparison reports it as a difference instead of failing.
        static func missing(_ key: Int64) -> UUID {
            var bytes = [UInt8](repeating: 0, count: 16)
            withUnsafeBytes(of: key.bigEndian) { for (i, b) in $0.enumerated() { bytes[8 + i] = b } }
            return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                               bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
        }
    }

    static func differences(_ x: PortableRecord, _ y: PortableRecord) -> [String] {
        var out: [String] = []
        if x.entity.name != y.entity.name { out.append("entity: \(x.entity.name) in A, \(y.entity.name) in B") }
        let sameLayout = x.entity === y.entity || (x.entity.attributes == y.entity.attributes && x.entity.relationships == y.entity.relationships)
        if sameLayout {
            for (i, a) in x.entity.attributes.enumerated() where i < x.attributes.count && i < y.attributes.count
                && x.attributes[i] != y.attributes[i] {
                out.append("attribute '\(a.name)': \(show(x.attributes[i])) in A, \(show(y.attributes[i])) in B")
            }
        } else {
            var names = x.entity.attributes.map(\.name)
            for a in y.entity.attributes where !names.contains(a.name) { names.append(a.name) }
            for name in names {
                let vx = x.entity.attributeIndex(name).flatMap { $0 < x.attributes.count ? x.attributes[$0] : nil }
                let vy = y.entity.attributeIndex(name).flatMap { $0 < y.attributes.count ? y.attributes[$0] : nil }
                if vx != vy {
                    out.append("attribute '\(name)': \(vx.map(show) ?? "absent") in A, \(vy.map(show) ?? "absent") in B")
                }
            }
        }
        var names = x.entity.relationships.map(\.name)
        for r in y.entity.relationships where !names.contains(r.name) { names.append(r.name) }
        for name in names {
            let rx = x.entity.relationship(name)
            let ry = y.entity.relationship(name)
            let vx = x.entity.relationshipIndex(name).flatMap { $0 < x.relationships.count ? x.relationships[$0] : nil }
            let vy = y.entity.relationshipIndex(name).flatMap { $0 < y.relationships.count ? y.relationships[$0] : nil }
            guard let vx, let vy else {
                out.append("relationship '\(name)': \(vx == nil ? "absent" : "present") in A, \(vy == nil ? "absent" : "present") in B")
                continue
            }
            let ordered = (rx ?? ry)?.isOrdered == true || (rx ?? ry)?.isToMany == false
            if ordered ? vx == vy : (vx.count == vy.count && Set(vx) == Set(vy)) { continue }
            if (rx ?? ry)?.isToMany == false {
                out.append("relationship '\(name)': \(vx.first?.uuidString ?? "nil") in A, \(vy.first?.uuidString ?? "nil") in B")
            } else if Set(vx) == Set(vy) {
                out.append("relationship '\(name)': the same \(vx.count) records in a different order")
            } else {
                let sx = Set(vx), sy = Set(vy)
                let onlyX = vx.filter { !sy.contains($0) }
                let onlyY = vy.filter { !sx.contains($0) }
                var text = "relationship '\(name)': \(vx.count) records in A, \(vy.count) in B"
                if !onlyX.isEmpty { text += "; only in A: " + list(onlyX) }
                if !onlyY.isEmpty { text += "; only in B: " + list(onlyY) }
                out.append(text)
            }
        }
        return out
    }

    private static func list(_ ids: [UUID]) -> String {
        ids.prefix(3).map(\.uuidString).joined(separator: ", ") + (ids.count > 3 ? ", … (\(ids.count))" : "")
    }

    /// A value as the interchange format spells it (exact dates and doubles), shortened for binary data.
    static func show(_ v: StoreValue) -> String {
        switch v {
        case .null: return "nil"
        case .binary(let d):
            let hex = d.prefix(8).map { String(format: "%02x", $0) }.joined()
            return "<\(d.count) bytes: \(hex)\(d.count > 8 ? "…" : "")>"
        case .string(let s): return String(reflecting: s.count > 80 ? String(s.prefix(77)) + "…" : s)
        case .integer16, .integer32, .integer64, .boolean: return v.description
        default:
            let o = v.jsonObject
            if let s = o as? String { return s }
            return "\(o)"
        }
    }

    // MARK: Metadata and history

    static func compareMetadata(_ a: StoreMetadata, _ b: StoreMetadata) -> [String] {
        var out: [String] = []
        if a.storeUUID != b.storeUUID {
            out.append("store UUID: \(a.storeUUID.uuidString) in A, \(b.storeUUID.uuidString) in B")
        }
        if a.schema != b.schema {
            let hashesA = a.schema.versionHashes
            let hashesB = b.schema.versionHashes
            let entities = Set(hashesA.keys).union(hashesB.keys).filter { hashesA[$0] != hashesB[$0] }.sorted()
            if !entities.isEmpty {
                out.append("schema: entities differ: \(entities.joined(separator: ", "))")
            } else {
                out.append("schema: " + Self.differenceBesideVersionHashes(a.schema, b.schema))
            }
        }
        if a.configuration != b.configuration {
            out.append("configuration: \(a.configuration ?? "none") in A, \(b.configuration ?? "none") in B")
        }
        for key in Set(a.custom.keys).union(b.custom.keys).sorted() where a.custom[key] != b.custom[key] {
            out.append("custom metadata '\(key)': \(a.custom[key].map(describe) ?? "absent") in A, \(b.custom[key].map(describe) ?? "absent") in B")
        }
        if a.syncOptions != b.syncOptions {
            out.append("sync options: \(a.syncOptions.map { "\($0)" } ?? "none") in A, \(b.syncOptions.map { "\($0)" } ?? "none") in B")
        }
        return out
    }

    /// What differs between two schemas whose version hashes agree, in words: each entity whose definition differs
    /// in what a version hash leaves out (Core Data's rule: class names, user info, default values, indexes…) with
    /// what differs in it, else the configurations or the order of the definitions.
    static func differenceBesideVersionHashes(_ a: Schema, _ b: Schema) -> String {
        var names = a.definitions.map(\.name)
        for d in b.definitions where !names.contains(d.name) { names.append(d.name) }
        let differing = names.sorted().compactMap { name -> String? in
            let x = a.entity(named: name)?.definition, y = b.entity(named: name)?.definition
            guard x != y else { return nil }
            guard let x, let y else { return "\(name) (only in \(x == nil ? "B" : "A"))" }
            return "\(name) (\(Self.differences(x, y).joined(separator: "; ")))"
        }
        if !differing.isEmpty {
            return "entities differ in what version hashes leave out: \(differing.joined(separator: ", "))"
        }
        if a.configurations != b.configurations { return "the configurations differ (same version hashes)" }
        return "the entities are defined in another order (same version hashes)"
    }

    /// The parts of two definitions of one entity that differ, each named.
    static func differences(_ x: EntityDescription, _ y: EntityDescription) -> [String] {
        func optional(_ v: String?) -> String { v ?? "none" }
        var out: [String] = []
        if x.representedClassName != y.representedClassName {
            out.append("class name: \(optional(x.representedClassName)) in A, \(optional(y.representedClassName)) in B")
        }
        if x.parent != y.parent { out.append("parent: \(optional(x.parent)) in A, \(optional(y.parent)) in B") }
        if x.isAbstract != y.isAbstract { out.append("abstract in \(x.isAbstract ? "A" : "B") only") }
        if x.userInfo != y.userInfo { out.append("user info") }
        if x.versionHashModifier != y.versionHashModifier { out.append("version hash modifier") }
        if x.renamingIdentifier != y.renamingIdentifier { out.append("renaming identifier") }
        out += Self.memberDifferences("attribute", x.attributes.map { ($0.name, $0) }, y.attributes.map { ($0.name, $0) })
        out += Self.memberDifferences("relationship", x.relationships.map { ($0.name, $0) },
                                      y.relationships.map { ($0.name, $0) })
        out += Self.memberDifferences("derived attribute", x.derivedAttributes.map { ($0.name, $0) },
                                      y.derivedAttributes.map { ($0.name, $0) })
        if x.uniquenessConstraints != y.uniquenessConstraints { out.append("uniqueness constraints") }
        if x.fetchIndexes != y.fetchIndexes { out.append("fetch indexes") }
        return out.isEmpty ? ["definition"] : out
    }

    /// The named members (attributes, relationships) that differ between two lists, or their order when only that
    /// differs.
    static func memberDifferences<Member: Equatable>(_ kind: String, _ x: [(String, Member)], _ y: [(String, Member)]) -> [String] {
        let byName = Dictionary(y, uniquingKeysWith: { first, _ in first })
        let names = Set(x.map(\.0)).union(y.map(\.0))
        let own = Dictionary(x, uniquingKeysWith: { first, _ in first })
        let changed = names.filter { own[$0] != byName[$0] }.sorted()
        if !changed.isEmpty { return changed.map { "\(kind) \($0)" } }
        return x.map(\.0) == y.map(\.0) ? [] : ["\(kind) order"]
    }

    static func describe(_ v: MetadataValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(v), let text = String(data: data, encoding: .utf8) else { return "\(v)" }
        return text
    }

    static func compareHistory(_ a: any PersistentStore, _ b: any PersistentStore) throws -> [String] {
        let ha = try a.history(after: nil)
        let hb = try b.history(after: nil)
        var out: [String] = []
        if ha.count != hb.count { out.append("\(ha.count) transactions in A, \(hb.count) in B") }
        var listed = 0
        for (x, y) in zip(ha, hb) where x != y {
            listed += 1
            if listed > 20 { out.append("… more transactions differ"); break }
            var what: [String] = []
            if x.token != y.token { what.append("token \(x.token) / \(y.token)") }
            if x.timestamp != y.timestamp { what.append("timestamp \(ExactISO8601.string(from: x.timestamp)) / \(ExactISO8601.string(from: y.timestamp))") }
            if x.author != y.author { what.append("author \(x.author ?? "nil") / \(y.author ?? "nil")") }
            if x.contextName != y.contextName {
                what.append("context name \(x.contextName ?? "nil") / \(y.contextName ?? "nil")")
            }
            if x.processName != y.processName {
                what.append("process name \(x.processName ?? "nil") / \(y.processName ?? "nil")")
            }
            if x.bundleIdentifier != y.bundleIdentifier {
                what.append("bundle identifier \(x.bundleIdentifier ?? "nil") / \(y.bundleIdentifier ?? "nil")")
            }
            if x.changes != y.changes { what.append("changes (\(x.changes.count) / \(y.changes.count))") }
            out.append("transaction \(x.token): differs in \(what.joined(separator: ", "))")
        }
        return out
    }
}
