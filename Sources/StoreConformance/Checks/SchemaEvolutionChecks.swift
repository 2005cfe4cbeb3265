import Foundation
import StoreAPI
import Testing

extension ConformanceSuite {
    /// One lightweight change to the conformance schema, and what it is called in a failure message.
    struct EvolutionStep: Sendable {
        let name: String
        let change: @Sendable (inout [EntityDescription]) -> Void
    }

    /// The changes every backend must upgrade through, each applied on top of the ones before it.
    static let evolutionSteps: [EvolutionStep] = [
        EvolutionStep(name: "an added optional attribute") { defs in
            edit(&defs, "Tag") { $0.attributes.append(AttributeDescription(name: "color", type: .string)) }
        },
        EvolutionStep(name: "an added entity") { defs in
            defs.append(EntityDescription(name: "Shelf", attributes: [AttributeDescription(name: "label", type: .string)]))
        },
        EvolutionStep(name: "a removed attribute") { defs in
            edit(&defs, "Work") { $0.attributes.removeAll { $0.name == "rating" } }
        },
        EvolutionStep(name: "a rename through a renaming identifier") { defs in
            edit(&defs, "Agent") { e in
                if let i = e.attributes.firstIndex(where: { $0.name == "name" }) {
                    e.attributes[i] = AttributeDescription(name: "fullName", type: .string, renamingIdentifier: "name")
                }
            }
        },
        EvolutionStep(name: "Int16 widened to Int64") { defs in
            edit(&defs, "Author") { e in
                if let i = e.attributes.firstIndex(where: { $0.name == "born" }) { e.attributes[i].type = .integer64 }
            }
        },
        EvolutionStep(name: "optional made required with a default") { defs in
            edit(&defs, "Sample") { e in
                if let i = e.attributes.firstIndex(where: { $0.name == "str" }) {
                    e.attributes[i].isOptional = false
                    e.attributes[i].defaultValue = .string("none")
                }
            }
        },
        EvolutionStep(name: "a to-one made to-many") { defs in
            edit(&defs, "Agent") { e in
                if let i = e.relationships.firstIndex(where: { $0.name == "client" }) {
                    e.relationships[i].isToMany = true
                    e.relationships[i].maxCount = 0
                }
            }
        },
    ]

    static func edit(_ defs: inout [EntityDescription], _ name: String, _ change: (inout EntityDescription) -> Void) {
        if let i = defs.firstIndex(where: { $0.name == name }) { change(&defs[i]) }
    }

    /// The conformance schema after the first `count` evolution steps.
    static func evolvedSchema(steps count: Int) throws -> Schema {
        var defs = ConformanceSchema.entities
        for step in evolutionSteps.prefix(count) { step.change(&defs) }
        return try Schema(entities: defs)
    }

    func checkSchemaEvolution(_ h: Harness) throws {
        try checkUpgradeSteps(h)
        try checkRefusedUpgrades(h)
        try checkMigrationOnOpen(h)
    }

    /// A store with the catalog, edge samples, agents (one with a client, two without a name), authors' birth years
    /// and custom metadata; returns the custom metadata written.
    func makeEvolutionStore(_ h: Harness, at url: URL) throws -> [String: MetadataValue] {
        let (c, _) = try h.coordinator(url)
        let ctx = c.newContext()
        try Self.populateCatalog(ctx)
        for values in Self.edgeSamples().prefix(3) { try ctx.insert("Sample", values) }
        let authors = try ctx.fetch(FetchRequest(entity: "Author"))
        for (i, a) in authors.enumerated() { try a.setValue(.integer16([-32768, 1929, 32767, 0][i % 4]), forKey: "born") }
        let agent = try ctx.insert("Agent", ["name": "Ida"])
        if let first = authors.first { try agent.setObject(first, forKey: "client") }
        _ = try ctx.insert("Agent", [:])
        _ = try ctx.insert("Agent", [:])
        try ctx.save()
        try h.close(c)
        var metadata = try backend.readMetadata(at: url)
        metadata.custom["app.version"] = .string("1 ü")
        metadata.custom["nested"] = .dictionary(["n": .integer(7)])
        try backend.writeMetadata(metadata, at: url)
        return metadata.custom
    }

    func checkUpgradeSteps(_ h: Harness) throws {
        let url = h.storeURL("evolving")
        let custom = try makeEvolutionStore(h, at: url)
        let uuid = try backend.readMetadata(at: url).storeUUID
        let operations = StoreOperations(registry: registry)
        var previous = h.schema
        for (n, step) in Self.evolutionSteps.enumerated() {
            let next = try Self.evolvedSchema(steps: n + 1)
            let before = try dump(h, url, schema: previous)
            if n == 0 { #expect(before.count == 21 + 4 + 3 + 3 + 3, "the store to upgrade holds every record written") }
            let plan = try operations.upgradeStore(at: url, type: backend.typeIdentifier, to: next)
            #expect(!plan.isEmpty, "upgrading through \(step.name) must change something")
            let metadata = try backend.readMetadata(at: url)
            #expect(metadata.storeUUID == uuid, "the store UUID must survive \(step.name)")
            #expect(metadata.custom == custom, "custom metadata must survive \(step.name)")
            #expect(metadata.versionHashes == next.versionHashes, "after \(step.name) the store has the new version hashes")
            let after = try dump(h, url, schema: next)
            expectCarried(h, from: before, in: previous, to: after, in: next, what: step.name)
            // Only a schema whose entities changed is refused; adding an entity leaves the others as they were.
            if previous.entities.contains(where: { next.entity(named: $0.name)?.versionHash != $0.versionHash }) {
                expectRefused(h, url, schema: previous, what: "the schema before \(step.name)")
            }
            previous = next
        }
        // The final schema is usable: its new entity and attribute take records, which survive a reopen.
        let (c, _) = try h.coordinator(url, schema: previous)
        let ctx = c.newContext()
        try ctx.insert("Shelf", ["label": "top"])
        try ctx.insert("Tag", ["name": "fresh", "color": "red"])
        try ctx.save()
        try h.close(c)
        let (c2, _) = try h.coordinator(url, schema: previous)
        let r = c2.newContext()
        #expect(try r.count(FetchRequest(entity: "Shelf")) == 1)
        #expect(try r.fetch(FetchRequest(entity: "Tag")).contains { (try? $0.value(forKey: "color")) == "red" })
        try h.close(c2)
    }

    func checkRefusedUpgrades(_ h: Harness) throws {
        let operations = StoreOperations(registry: registry)
        // A required attribute without a default, and a record without a value for it.
        let missing = try Schema(entities: ConformanceSchema.entities.map { d in
            var d = d
            if d.name == "Agent", let i = d.attributes.firstIndex(where: { $0.name == "name" }) { d.attributes[i].isOptional = false }
            return d
        })
        // A new uniqueness constraint the stored agents break (two have no name, two are called "Ida").
        let unique = try Schema(entities: ConformanceSchema.entities.map { d in
            var d = d
            if d.name == "Agent" { d.uniquenessConstraints = [["name"]] }
            return d
        })
        for (schema, what) in [(missing, "missing values"), (unique, "duplicates")] {
            let url = h.storeURL("refused-\(what.prefix(4))")
            _ = try makeEvolutionStore(h, at: url)
            if what == "duplicates" {
                let (c, _) = try h.coordinator(url)
                let ctx = c.newContext()
                try ctx.insert("Agent", ["name": "Ida"])
                try ctx.save()
                try h.close(c)
            }
            let files = Self.fingerprint(backend, url)
            let records = try dump(h, url, schema: h.schema)
            let listing = h.listing()
            do {
                try operations.upgradeStore(at: url, type: backend.typeIdentifier, to: schema)
                Issue.record("an upgrade with \(what) must be refused")
            } catch let error as StoreError {
                guard case .migrationRefused(_, let problems) = error else {
                    Issue.record("expected migrationRefused for \(what), got \(error)")
                    continue
                }
                let named = problems.contains { problem in
                    switch problem {
                    case .missingValues(let entity, let property, let keys, _):
                        what == "missing values" && entity == "Agent" && property == "name" && keys.count == 2
                    case .duplicateValues(let entity, let attributes, _, let keys):
                        what == "duplicates" && entity == "Agent" && attributes == ["name"] && keys.count == 2
                    default: false
                    }
                }
                #expect(named, "the refusal for \(what) must name the records: \(problems)")
            }
            if isPersistentBackend {
                #expect(Self.fingerprint(backend, url) == files, "a refused upgrade (\(what)) must leave the files as they were")
                #expect(h.listing() == listing, "a refused upgrade (\(what)) must leave nothing behind")
            }
            let again = try dump(h, url, schema: h.schema)
            #expect(again.count == records.count, "a refused upgrade (\(what)) must leave every record")
            for (gid, record) in records {
                guard let entity = h.schema.entity(named: record.entity), let kept = again[gid] else {
                    Issue.record("a refused upgrade (\(what)) lost \(record.key)")
                    continue
                }
                #expect(h.sameRecord(kept, record, in: entity), "a refused upgrade (\(what)) changed \(record.key)")
            }
        }
    }

    func checkMigrationOnOpen(_ h: Harness) throws {
        let url = h.storeURL("on-open")
        let custom = try makeEvolutionStore(h, at: url)
        let uuid = try backend.readMetadata(at: url).storeUUID
        let before = try dump(h, url, schema: h.schema)
        let files = Self.fingerprint(backend, url)
        let final = try Self.evolvedSchema(steps: Self.evolutionSteps.count)
        do {
            _ = try h.coordinator(url, schema: final)
            Issue.record("opening with a newer schema must fail without migratesSchemaAutomatically")
        } catch let error as StoreError {
            guard case .incompatibleSchema = error else {
                Issue.record("expected incompatibleSchema, got \(error)")
                return
            }
        }
        if isPersistentBackend { #expect(Self.fingerprint(backend, url) == files, "a refused open must not touch the store") }

        let (c, store) = try h.coordinator(url, options: StoreOptions(migratesSchemaAutomatically: true), schema: final)
        #expect(store.identifier == uuid, "migration on open keeps the store UUID")
        #expect(store.store.metadata.custom == custom, "migration on open keeps custom metadata")
        let ctx = c.newContext()
        try ctx.insert("Shelf", ["label": "opened"])
        try ctx.save()
        try h.close(c)
        var after = try dump(h, url, schema: final)
        after = after.filter { $0.value.entity != "Shelf" }
        expectCarried(h, from: before, in: h.schema, to: after, in: final, what: "migration on open")
        expectRefused(h, url, schema: h.schema, what: "the schema before migration on open")
    }

    /// Every record of the store at `url`, read through a coordinator with `schema`.
    func dump(_ h: Harness, _ url: URL, schema: Schema) throws -> [UUID: Record] {
        let (c, store) = try h.coordinator(url, schema: schema)
        defer { try? h.close(c) }
        return try Self.dump(store.store, schema: schema)
    }

    /// Opening the store at `url` with `schema` fails with ``StoreError/incompatibleSchema(_:entities:)``.
    func expectRefused(_ h: Harness, _ url: URL, schema: Schema, what: String) {
        do {
            let (c, _) = try h.coordinator(url, schema: schema)
            try? h.close(c)
            Issue.record("the upgraded store must refuse \(what)")
        } catch let error as StoreError {
            guard case .incompatibleSchema = error else {
                Issue.record("opening with \(what) must be incompatibleSchema, got \(error)")
                return
            }
        } catch {
            Issue.record("opening with \(what) must be a StoreError, got \(error)")
        }
    }

    /// Every record of `before` is in `after` under the same global ID, entity and primary key, with every value
    /// the new schema keeps: renamed properties under their new names, widened integers with the same value, a
    /// required attribute's default where there was no value, a to-one's key in the to-many it became.
    func expectCarried(_ h: Harness, from before: [UUID: Record], in old: Schema, to after: [UUID: Record], in new: Schema,
                       what: String) {
        #expect(after.count == before.count, "\(what): the upgraded store has every record and no others")
        for (gid, record) in before {
            guard let was = old.entity(named: record.entity), let entity = new.entity(named: record.entity) else {
                Issue.record("\(what): \(record.key) has an entity neither schema knows")
                continue
            }
            guard let now = after[gid] else {
                Issue.record("\(what): \(record.key) is missing after the upgrade")
                continue
            }
            #expect(now.entity == record.entity && now.primaryKey == record.primaryKey,
                    "\(what): \(record.key) keeps its entity and primary key, got \(now.key)")
            for (i, attribute) in entity.attributes.enumerated() where !attribute.isTransient {
                let oldName = was.attributeIndex(attribute.name) == nil ? attribute.renamingIdentifier ?? attribute.name : attribute.name
                var want: StoreValue = attribute.defaultValue ?? .null
                if let j = was.attributeIndex(oldName), j < record.attributes.count {
                    want = Self.widened(record.attributes[j], to: attribute.type)
                    if want == .null, !attribute.isOptional, let fill = attribute.defaultValue { want = fill }
                }
                let got = i < now.attributes.count ? now.attributes[i] : .null
                #expect(got == want, "\(what): \(record.key).\(attribute.name) is \(got), expected \(want)")
            }
            for (i, relationship) in entity.relationships.enumerated() where !relationship.isTransient {
                let oldName = was.relationshipIndex(relationship.name) == nil
                    ? relationship.renamingIdentifier ?? relationship.name : relationship.name
                guard let j = was.relationshipIndex(oldName), j < record.relationships.count else { continue }
                var want = record.relationships[j].keys
                var got = i < now.relationships.count ? now.relationships[i].keys : []
                if !(relationship.isOrdered && backend.capabilities.contains(.orderedRelationships)) {
                    want.sort()
                    got.sort()
                }
                #expect(got == want, "\(what): \(record.key).\(relationship.name) links \(got), expected \(want)")
            }
        }
    }

    /// `value` as an attribute of the wider integer `type` holds it (other values are left as they are).
    static func widened(_ value: StoreValue, to type: AttributeType) -> StoreValue {
        switch (value, type) {
        case (.integer16(let v), .integer32): .integer32(Int32(v))
        case (.integer16(let v), .integer64): .integer64(Int64(v))
        case (.integer32(let v), .integer64): .integer64(Int64(v))
        default: value
        }
    }
}
