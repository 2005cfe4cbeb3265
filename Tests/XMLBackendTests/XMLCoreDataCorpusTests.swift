import Foundation
import StoreAPI
import StoreTestSupport
import Testing
import XMLBackend

/// Stores written by Core Data itself (the shared corpus) load completely, with an inferred schema and stable
/// identities.
@Suite struct XMLCoreDataCorpusTests {
    /// Every file in the corpus's `xmlstores` directory.
    static func corpusFiles() -> [URL] {
        guard let dir = corpusDirectory("xmlstores"),
              let walker = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: [.isRegularFileKey])
        else { return [] }
        return walker.compactMap { $0 as? URL }
            .filter { (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true }
            .sorted { $0.path < $1.path }
    }

    /// Counts `<object type="…"` per type with a plain text scan, independent of the backend's parser.
    static func scanCounts(_ url: URL) throws -> [String: Int] {
        let text = try String(contentsOf: url, encoding: .utf8)
        var counts: [String: Int] = [:]
        var rest = text[...]
        while let r = rest.range(of: "<object type=\"") {
            let after = rest[r.upperBound...]
            guard let close = after.firstIndex(of: "\"") else { break }
            counts[String(after[..<close]), default: 0] += 1
            rest = after[close...]
        }
        return counts
    }

    static func load(_ url: URL) throws -> (StoreMetadata, [Record]) {
        var metadata: StoreMetadata?
        var records: [Record] = []
        try XMLStoreBackend().readStore(at: url) { element in
            switch element {
            case .metadata(let m): metadata = m
            case .record(let r): records.append(r)
            case .history: Issue.record("a Core Data store has no history")
            }
        }
        guard let metadata else { throw StoreError.corruptStore(url, reason: "no metadata delivered") }
        return (metadata, records)
    }

    @Test func corpusIsPresent() {
        if Self.corpusFiles().isEmpty {
            withKnownIssue("the shared corpus (../shared/corpus/xmlstores) is absent; corpus tests skipped") {
                Issue.record("corpus absent")
            }
        } else {
            #expect(Self.corpusFiles().count >= 2)
        }
    }

    @Test(arguments: corpusFiles())
    func everyObjectLoadsAndCountsMatch(_ url: URL) throws {
        #expect(XMLStoreBackend().sniff(url) == .store)
        let (metadata, records) = try Self.load(url)
        let expected = try Self.scanCounts(url)
        #expect(records.count == expected.values.reduce(0, +))
        var counts: [String: Int] = [:]
        for r in records { counts[r.entity.uppercased(), default: 0] += 1 }
        #expect(counts == Dictionary(uniqueKeysWithValues: expected.map { ($0.key.uppercased(), $0.value) }))
        #expect(metadata.storeType == "xml")
        // Keys are unique per hierarchy and every relationship points at a loaded record of its destination.
        let schema = metadata.schema
        var byRoot: [String: [Int64: Record]] = [:]
        for r in records {
            let root = try schema.requireEntity(r.entity).rootName
            #expect(byRoot[root, default: [:]].updateValue(r, forKey: r.primaryKey) == nil, "duplicate key \(r.key)")
        }
        for r in records {
            let e = try schema.requireEntity(r.entity)
            for (i, rel) in e.relationships.enumerated() {
                let dest = try schema.requireEntity(rel.destination)
                for k in r.relationships[i].keys {
                    let target = byRoot[dest.rootName]?[k]
                    #expect(target != nil, "\(r.key).\(rel.name) points at missing \(k)")
                    if let target { #expect(try schema.requireEntity(target.entity).isKind(of: dest.name)) }
                    // Inferred inverses agree with the data.
                    if let inverseName = rel.inverse, let target, let ti = try schema.requireEntity(target.entity).relationshipIndex(inverseName) {
                        #expect(target.relationships[ti].keys.contains(r.primaryKey), "\(target.key).\(inverseName) lacks \(r.key)")
                    }
                }
            }
        }
    }

    @Test(arguments: corpusFiles())
    func readingTwiceGivesTheSameIdentities(_ url: URL) throws {
        let (m1, r1) = try Self.load(url)
        let (m2, r2) = try Self.load(url)
        #expect(m1 == m2)
        #expect(r1 == r2)
        #expect(Set(r1.map(\.globalID)).count == r1.count)
    }

    @Test(arguments: corpusFiles())
    func aCoreDataStoreConvertsToOurLayoutLosslessly(_ url: URL) throws {
        let source = try openStore(url, options: StoreOptions(isReadOnly: true))
        let records = try allRecords(source)
        let metadata = source.metadata
        try source.close()
        let dir = try TemporaryDirectory("xmlstore-tests")
        let copy = dir.path("converted.xml")
        let store = try openStore(copy, creating: metadata)
        try store.save(StoreChanges(inserted: Array(records.values)))
        try store.close()
        let reopened = try openStore(copy)
        defer { try? reopened.close() }
        #expect(reopened.metadata == metadata)
        let again = try allRecords(reopened)
        #expect(again == records)
    }

    @Test func mappingModelSchemaIsInferred() throws {
        guard let url = Self.corpusFiles().first(where: { $0.lastPathComponent == "xcmapping.xml" }) else {
            withKnownIssue("xcmapping.xml not in the corpus") { Issue.record("absent") }
            return
        }
        let (metadata, records) = try Self.load(url)
        let schema = metadata.schema
        // Entity names get their original case back from the metadata's version-hash keys.
        #expect(Set(schema.entities.map(\.name)) == ["XDDevRelationshipMapping", "XDDevEntityMapping", "XDDevAttributeMapping", "XDDevMappingModel"])
        #expect(metadata.storeUUID == UUID(uuidString: "87E9047A-56E0-4CF2-BF13-03049CE47DD8"))
        let entityMapping = try schema.requireEntity("XDDevEntityMapping")
        #expect(entityMapping.attribute("mappingnumber")?.type == .integer16)
        #expect(entityMapping.attribute("autogenerateexpression")?.type == .boolean)
        let attributeMappings = entityMapping.relationship("attributemappings")
        #expect(attributeMappings?.isToMany == true)
        #expect(attributeMappings?.destination == "XDDevAttributeMapping")
        #expect(attributeMappings?.inverse == "entitymapping")
        #expect(entityMapping.relationship("mappingmodel")?.isToMany == false)
        #expect(entityMapping.relationship("mappingmodel")?.inverse == "entitymappings")
        // z-ids become primary keys; idrefs order is kept.
        let z103 = records.first { $0.entity == "XDDevEntityMapping" && $0.primaryKey == 103 }
        if let z103, let i = entityMapping.relationshipIndex("attributemappings") {
            #expect(z103.relationships[i] == .toMany([110, 104, 108]))
        } else {
            Issue.record("object z103 not loaded")
        }
        let model = records.first { $0.entity == "XDDevMappingModel" }
        let modelEntity = try schema.requireEntity("XDDevMappingModel")
        if let model, let i = modelEntity.attributeIndex("sourcemodeldata"), case .binary(let data) = model.attributes[i] {
            #expect(data.starts(with: Data("bplist00".utf8)), "base64 broken over lines decodes to the archived model")
        } else {
            Issue.record("sourcemodeldata not loaded as binary")
        }
        #expect(metadata.custom["NSPersistenceFrameworkVersion"] == .integer(866))
    }

    @Test func handEditedDocumentIsReadTolerantly() throws {
        guard let url = Self.corpusFiles().first(where: { $0.pathExtension == "mslice" }) else {
            withKnownIssue("template.mslice not in the corpus") { Issue.record("absent") }
            return
        }
        let (metadata, records) = try Self.load(url)
        let schema = metadata.schema
        // STRUCTUREATOM has no objects, only a destination: it still becomes an entity.
        #expect(schema.entity(named: "StructureAtom") != nil)
        #expect(schema.entity(named: "Structure")?.relationship("atoms")?.destination == "StructureAtom")
        #expect(schema.entity(named: "Structure")?.relationship("atoms")?.isToMany == false)
        // Non-z ids get fresh keys above every z number and nextObjectID, in document order.
        let detectors = records.filter { $0.entity == "Detector" }.map(\.primaryKey)
        #expect(detectors == [118, 119, 120])
        // Floats are exact.
        let microscope = try schema.requireEntity("Microscope")
        let m = records.first { $0.entity == "Microscope" }
        if let m, let i = microscope.attributeIndex("aperture") { #expect(m.attributes[i] == .float(19.6)) }
        // A mixed-case property written by hand keeps its spelling.
        #expect(schema.entity(named: "SimParameters")?.attribute("saveSlices")?.type == .boolean)
        // A relationship without idrefs is empty.
        let structure = records.first { $0.entity == "Structure" }
        if let structure, let i = schema.entity(named: "Structure")?.relationshipIndex("atoms") {
            #expect(structure.relationships[i] == .toOne(nil))
        }
    }
}
