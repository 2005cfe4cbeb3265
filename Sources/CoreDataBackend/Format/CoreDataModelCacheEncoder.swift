import CZlib
import Foundation
@_spi(BackendKit) import StoreAPI

extension CoreDataModelCache {
    /// Encodes `model` as Core Data keeps it in `Z_MODELCACHE.Z_CONTENT`: the compiled `NSManagedObjectModel` as an
    /// `NSKeyedArchiver` binary plist, compressed with raw DEFLATE (no header: ``decode(_:)`` reads it back).
    ///
    /// The archive has the classes and keys Core Data's own caches have (see ``archive(_:)``); what a
    /// ``CoreDataModel`` does not carry is left out: fetched properties, fetch request templates, validation
    /// predicates, the predicate of a partial fetch index and a derivation's filtering predicate.
    ///
    /// - Throws: ``CoreDataFormatError`` when two entities share a name, an entity has two properties of one name
    ///   (inherited ones included),
    ///   a derivation expression is not of a form the encoder writes (a key path, or a function of key paths such
    ///   as `count:(pages)`), or zlib fails.
    public static func encode(_ model: CoreDataModel) throws(CoreDataFormatError) -> [UInt8] {
        let bytes = BinaryPropertyListWriter.write(try archive(model))
        do throws(InflateError) {
            return try RawDeflate.deflate(bytes, level: Z_BEST_COMPRESSION)
        } catch {
            throw CoreDataFormatError("Z_MODELCACHE", error.description)
        }
    }

    /// The keyed archive of `model`, before compression: `$objects` with the model at index 1.
    ///
    /// Objects and keys follow the caches in real stores: entities in an `NSKnownKeysDictionary1`, each entity's
    /// `NSProperties` listing inherited properties too (as copies owned by the sub-entity), a renaming identifier
    /// equal to the name when none is set, optional/ordered/indexed/transient/read-only keys only when true, `_P`
    /// flag bits, and the fetch index keys (`NSFetchIndexDescriptions`, `NSCompoundIndexes`) on every entity when
    /// the model has a fetch index anywhere. [unverified: the `_P` bits 0x10, 0x20, 0x40 and 0x80 are set as every
    /// corpus cache sets them for properties without validation rules, user info and version-hash modifier; what
    /// Core Data reads from them is not known]
    public static func archive(_ model: CoreDataModel) throws(CoreDataFormatError) -> PropertyListValue {
        var encoder = ModelEncoder(model: model)
        try encoder.encodeModel()
        return encoder.archive.plist()
    }
}

/// `$objects` being built: strings and classes written once and shared, objects reserved before they are filled so
/// that references can point both ways (an entity and its properties, a relationship and its inverse).
private struct ArchiveBuilder {
    private(set) var objects: [PropertyListValue] = [.string("$null")]
    private var strings: [String: UInt64] = [:]
    private var classes: [String: UInt64] = [:]

    static let null = PropertyListValue.uid(0)

    /// A reference to the string `s`, written once.
    mutating func string(_ s: String) -> PropertyListValue {
        if let known = strings[s] { return .uid(known) }
        objects.append(.string(s))
        strings[s] = UInt64(objects.count - 1)
        return .uid(UInt64(objects.count - 1))
    }

    /// `string(s)`, or `$null` for `nil`.
    mutating func string(_ s: String?) -> PropertyListValue { s.map { string($0) } ?? Self.null }

    /// A plain value (a number, a date, data) as an object of its own, as `encodeObject:forKey:` writes it.
    mutating func plain(_ v: PropertyListValue) -> PropertyListValue {
        objects.append(v)
        return .uid(UInt64(objects.count - 1))
    }

    /// A slot for an object filled later with ``fill(_:classes:_:)``.
    mutating func reserve() -> UInt64 {
        objects.append(.string("$null"))
        return UInt64(objects.count - 1)
    }

    /// Writes the object in slot `uid`: its members and its class (`classes` from the class itself up to
    /// `NSObject`).
    mutating func fill(_ uid: UInt64, classes chain: [String], _ members: [(key: String, value: PropertyListValue)]) {
        let cls = classReference(chain)
        objects[Int(uid)] = .dictionary(members + [(key: "$class", value: cls)])
    }

    /// A new object.
    mutating func object(classes chain: [String], _ members: [(key: String, value: PropertyListValue)]) -> PropertyListValue {
        let uid = reserve()
        fill(uid, classes: chain, members)
        return .uid(uid)
    }

    /// An `NSArray` (or subclass, by `chain`) of `items`.
    mutating func array(_ items: [PropertyListValue], classes chain: [String] = ["NSArray", "NSObject"]) -> PropertyListValue {
        object(classes: chain, [(key: "NS.objects", value: .array(items))])
    }

    /// An `NSDictionary` (or subclass, by `chain`) of string keys.
    mutating func dictionary(
        _ entries: [(key: String, value: PropertyListValue)],
        classes chain: [String] = ["NSDictionary", "NSObject"]
    ) -> PropertyListValue {
        let keys = entries.map { string($0.key) }
        return object(classes: chain, [(key: "NS.keys", value: .array(keys)), (key: "NS.objects", value: .array(entries.map(\.value)))])
    }

    private mutating func classReference(_ chain: [String]) -> PropertyListValue {
        let name = chain.first ?? "NSObject"
        if let known = classes[name] { return .uid(known) }
        objects.append(.dictionary([
            (key: "$classes", value: .array(chain.map { .string($0) })), (key: "$classname", value: .string(name)),
        ]))
        classes[name] = UInt64(objects.count - 1)
        return .uid(UInt64(objects.count - 1))
    }

    /// The whole archive.
    func plist() -> PropertyListValue {
        .dictionary([
            (key: "$version", value: .integer(100000)), (key: "$archiver", value: .string("NSKeyedArchiver")),
            (key: "$top", value: .dictionary([(key: "root", value: .uid(1))])), (key: "$objects", value: .array(objects)),
        ])
    }
}

/// Writes a ``CoreDataModel`` into an ``ArchiveBuilder``.
private struct ModelEncoder {
    let model: CoreDataModel
    var archive = ArchiveBuilder()
    /// Each entity's slot.
    var entitySlots: [String: UInt64] = [:]
    /// Each (entity, property) slot: properties are reserved per owning entity, inherited copies included, so a
    /// relationship's inverse can be referenced before it is written.
    var propertySlots: [String: UInt64] = [:]

    static let entityClasses = ["NSEntityDescription", "NSObject"]
    static let attributeClasses = ["NSAttributeDescription", "NSPropertyDescription", "NSObject"]
    static let derivedClasses = ["NSDerivedAttributeDescription", "NSAttributeDescription", "NSPropertyDescription", "NSObject"]
    static let relationshipClasses = ["NSRelationshipDescription", "NSPropertyDescription", "NSObject"]
    static let mutableArray = ["NSMutableArray", "NSArray", "NSObject"]
    static let mutableDictionary = ["NSMutableDictionary", "NSDictionary", "NSObject"]

    // `_P` bits, per the format reference and the corpus caches.
    static let alwaysFlags: Int64 = 0x1 | 0x10 | 0x20 | 0x40
    static let noVersionHashModifierFlag: Int64 = 0x80
    static let noUserInfoFlag: Int64 = 0x40

    init(model: CoreDataModel) {
        self.model = model
    }

    static func key(_ entity: String, _ property: String) -> String { entity + "\u{0}" + property }

    /// `entity` and its ancestors, root first (bounded, so a parent cycle ends).
    func lineage(_ entity: CoreDataModel.Entity) -> [CoreDataModel.Entity] {
        model.lineage(of: entity).reversed()
    }

    mutating func encodeModel() throws(CoreDataFormatError) {
        let root = archive.reserve()
        for e in model.entities {
            guard entitySlots[e.name] == nil else { throw CoreDataFormatError("entity \(e.name)", "defined twice in the model") }
            entitySlots[e.name] = archive.reserve()
        }
        for e in model.entities {
            for level in lineage(e) {
                for name in level.attributes.map(\.name) + level.relationships.map(\.name) {
                    // A property is a key of its entity's NSProperties: two of one name cannot both be written.
                    guard propertySlots[Self.key(e.name, name)] == nil else {
                        throw CoreDataFormatError("entity \(e.name)", "property \(name) is defined twice")
                    }
                    propertySlots[Self.key(e.name, name)] = archive.reserve()
                }
            }
        }
        let hasFetchIndexes = model.entities.contains { !$0.fetchIndexes.isEmpty }
        for e in model.entities { try encodeEntity(e, model: root, fetchIndexKeys: hasFetchIndexes) }

        let names = model.entities.map(\.name)
        let mapping = archive.object(
            classes: ["NSKnownKeysMappingStrategy1", "NSKnownKeysMappingStrategy", "NSObject"],
            [(key: "keys", value: archive.array(names.map { archive.string($0) })),
             (key: "length", value: .integer(Int64(names.count))), (key: "version", value: .integer(1))])
        let entities = archive.object(
            classes: ["NSKnownKeysDictionary1", "NSKnownKeysDictionary", "NSMutableDictionary", "NSDictionary", "NSObject"],
            [(key: "emptyToken", value: archive.string("__empty_slot_token_4c24_98dc_ac1e_b773__")),
             (key: "searchMapping", value: mapping),
             (key: "values", value: archive.array(names.map { .uid(entitySlots[$0] ?? 0) })),
             (key: "version", value: .integer(1))])
        var members: [(key: String, value: PropertyListValue)] = [
            (key: "NSEntities", value: entities), (key: "NSFetchRequestTemplates", value: ArchiveBuilder.null),
            (key: "NSVersionIdentifiers", value: archive.array(
                model.versionIdentifiers.map { archive.string($0) }, classes: ["NSSet", "NSObject"])),
        ]
        if !model.configurations.isEmpty {
            var configurations: [(key: String, value: PropertyListValue)] = []
            for (name, members) in model.configurations.sorted(by: { $0.key < $1.key }) {
                let refs = members.compactMap { entitySlots[$0].map { PropertyListValue.uid($0) } }
                configurations.append((key: name, value: archive.array(refs, classes: ["NSSet", "NSObject"])))
            }
            members.append((key: "NSConfigurations", value: archive.dictionary(configurations, classes: Self.mutableDictionary)))
        }
        archive.fill(root, classes: ["NSManagedObjectModel", "NSObject"], members)
    }

    mutating func encodeEntity(_ e: CoreDataModel.Entity, model root: UInt64, fetchIndexKeys: Bool) throws(CoreDataFormatError) {
        guard let slot = entitySlots[e.name] else { return }
        var properties: [(key: String, value: PropertyListValue)] = []
        for level in lineage(e) {
            for a in level.attributes {
                guard let p = propertySlots[Self.key(e.name, a.name)] else { continue }
                try encodeAttribute(a, slot: p, entity: slot, part: "attribute \(e.name).\(a.name)")
                properties.append((key: a.name, value: .uid(p)))
            }
            for r in level.relationships {
                guard let p = propertySlots[Self.key(e.name, r.name)] else { continue }
                encodeRelationship(r, slot: p, entity: slot)
                properties.append((key: r.name, value: .uid(p)))
            }
        }
        let subentities = model.entities.filter { $0.parent == e.name }.map {
            (key: $0.name, value: PropertyListValue.uid(entitySlots[$0.name] ?? 0))
        }
        var members: [(key: String, value: PropertyListValue)] = [
            (key: "NSClassNameForEntity", value: archive.string(e.className)),
            (key: "NSEntityName", value: archive.string(e.name)),
            (key: "NSManagedObjectModel", value: .uid(root)),
            (key: "NSProperties", value: archive.dictionary(properties, classes: Self.mutableDictionary)),
            (key: "NSRenamingIdentifier", value: archive.string(e.renamingIdentifier ?? e.name)),
            (key: "NSSubentities", value: archive.dictionary(subentities, classes: Self.mutableDictionary)),
            (key: "NSSuperentity", value: e.parent.flatMap { entitySlots[$0] }.map { .uid($0) } ?? ArchiveBuilder.null),
            (key: "NSUserInfo", value: userInfo(e.userInfo)),
            (key: "NSVersionHashModifier", value: archive.string(e.versionHashModifier)),
        ]
        if e.isAbstract { members.append((key: "NSIsAbstract", value: .bool(true))) }
        if !e.uniquenessConstraints.isEmpty {
            let tuples = e.uniquenessConstraints.map { tuple in
                archive.array(tuple.map { archive.string($0) }, classes: Self.mutableArray)
            }
            members.append((key: "NSUniqueTuples", value: archive.array(tuples, classes: Self.mutableArray)))
        }
        if fetchIndexKeys {
            var indexes: [PropertyListValue] = []
            for index in e.fetchIndexes { indexes.append(encodeFetchIndex(index, entity: slot)) }
            members.append((key: "NSFetchIndexDescriptions", value: archive.array(indexes, classes: Self.mutableArray)))
            // The compound indexes older Core Data read: the property names of each multi-property fetch index.
            let compound = e.fetchIndexes.filter { $0.elements.count > 1 }.map { index in
                archive.array(index.elements.map { archive.string($0.property) }, classes: Self.mutableArray)
            }
            members.append((key: "NSCompoundIndexes", value: archive.array(compound, classes: Self.mutableArray)))
        }
        archive.fill(slot, classes: Self.entityClasses, members)
    }

    mutating func encodeFetchIndex(_ index: CoreDataModel.FetchIndex, entity: UInt64) -> PropertyListValue {
        let slot = archive.reserve()
        var elements: [PropertyListValue] = []
        for element in index.elements {
            elements.append(archive.object(
                classes: ["NSFetchIndexElementDescription", "NSObject"],
                [(key: "NSAscending", value: .bool(element.isAscending)), (key: "NSFetchIndexDescription", value: .uid(slot)),
                 (key: "NSFetchIndexElementType", value: .integer(Int64(element.type))),
                 (key: "NSPropertyName", value: archive.string(element.property))]))
        }
        archive.fill(slot, classes: ["NSFetchIndexDescription", "NSObject"], [
            (key: "NSEntity", value: .uid(entity)), (key: "NSIndexElements", value: archive.array(elements)),
            (key: "NSIndexName", value: archive.string(index.name)),
            (key: "NSPartialIndexPredicate", value: ArchiveBuilder.null),
        ])
        return .uid(slot)
    }

    mutating func userInfo(_ info: [String: String]) -> PropertyListValue {
        archive.dictionary(info.sorted { $0.key < $1.key }.map { (key: $0.key, value: archive.string($0.value)) })
    }

    /// The members every property has, with its `_P` flags.
    mutating func propertyMembers(
        name: String, entity: UInt64, optional: Bool, transient: Bool, readOnly: Bool, ordered: Bool,
        versionHashModifier: String?, renamingIdentifier: String?, userInfo info: [String: String]
    ) -> [(key: String, value: PropertyListValue)] {
        var flags = Self.alwaysFlags
        if versionHashModifier == nil { flags |= Self.noVersionHashModifierFlag }
        if !info.isEmpty { flags &= ~Self.noUserInfoFlag }
        if optional { flags |= CoreDataModelFlags.optional }
        if readOnly { flags |= CoreDataModelFlags.readOnly }
        if transient { flags |= CoreDataModelFlags.transient }
        if ordered { flags |= CoreDataModelFlags.ordered }
        var members: [(key: String, value: PropertyListValue)] = [
            (key: "NSEntity", value: .uid(entity)), (key: "NSPropertyName", value: archive.string(name)),
            (key: "NSRenamingIdentifier", value: archive.string(renamingIdentifier ?? name)),
            (key: "_P", value: .integer(flags)),
        ]
        if optional { members.append((key: "NSIsOptional", value: .bool(true))) }
        if transient { members.append((key: "NSIsTransient", value: .bool(true))) }
        if readOnly { members.append((key: "NSIsReadOnly", value: .bool(true))) }
        if ordered { members.append((key: "NSIsOrdered", value: .bool(true))) }
        if let versionHashModifier {
            members.append((key: "NSVersionHashModifier", value: archive.string(versionHashModifier)))
        }
        if !info.isEmpty { members.append((key: "NSUserInfo", value: userInfo(info))) }
        return members
    }

    mutating func encodeAttribute(
        _ a: CoreDataModel.Attribute, slot: UInt64, entity: UInt64, part: String
    ) throws(CoreDataFormatError) {
        var members = propertyMembers(
            name: a.name, entity: entity, optional: a.isOptional, transient: a.isTransient,
            readOnly: a.isReadOnly || a.isDerived, ordered: false, versionHashModifier: a.versionHashModifier,
            renamingIdentifier: a.renamingIdentifier, userInfo: a.userInfo)
        var flags: Int64 = 0
        if a.allowsExternalBinaryDataStorage { flags |= CoreDataModelFlags.externalStorage }
        if a.preservesValueInHistoryOnDeletion { flags |= CoreDataModelFlags.preserveAfterDeletion }
        members += [
            (key: "NSAttributeType", value: .integer(Int64(a.typeCode))),
            (key: "NSAttributeValueClassName", value: archive.string(a.valueClassName ?? Self.valueClassName(a))),
            (key: "NSDefaultValue", value: a.defaultValue.map { defaultValue($0) } ?? ArchiveBuilder.null),
            (key: "NSFlagsKey", value: .integer(flags)),
            (key: "NSValueTransformerName", value: archive.string(a.valueTransformerName)),
        ]
        if a.isIndexed { members.append((key: "NSIsIndexed", value: .bool(true))) }
        if a.isDerived {
            let expression = try encodeExpression(a.derivationExpression ?? "", part: part, depth: 0)
            members.append((key: "NSDerivationExpression", value: expression))
            members.append((key: "NSFilteringPredicate", value: ArchiveBuilder.null))
        }
        archive.fill(slot, classes: a.isDerived ? Self.derivedClasses : Self.attributeClasses, members)
    }

    mutating func encodeRelationship(_ r: CoreDataModel.Relationship, slot: UInt64, entity: UInt64) {
        var members = propertyMembers(
            name: r.name, entity: entity, optional: r.isOptional, transient: r.isTransient, readOnly: false,
            ordered: r.isOrdered, versionHashModifier: r.versionHashModifier, renamingIdentifier: r.renamingIdentifier,
            userInfo: r.userInfo)
        // The inverse object is the destination entity's own property of that name (not a sub-entity's copy).
        let inverseSlot = r.inverse.flatMap { propertySlots[Self.key(declaringEntity(of: $0, below: r.destination), $0)] }
        members += [
            (key: "NSDeleteRule", value: .integer(Self.deleteRuleCode(r.deleteRule))),
            (key: "NSDestinationEntity", value: entitySlots[r.destination].map { .uid($0) } ?? ArchiveBuilder.null),
            (key: "NSInverseRelationship", value: inverseSlot.map { .uid($0) } ?? ArchiveBuilder.null),
            (key: "NSMaxCount", value: .integer(Int64(r.maxCount))), (key: "NSMinCount", value: .integer(Int64(r.minCount))),
            (key: "_NSDestinationEntityName", value: archive.string(r.destination)),
            (key: "_NSInverseRelationshipName", value: archive.string(r.inverse)),
        ]
        archive.fill(slot, classes: Self.relationshipClasses, members)
    }

    /// The entity among `destination` and its ancestors that declares `property` (`destination` when none does).
    func declaringEntity(of property: String, below destination: String) -> String {
        guard let entity = model.entity(named: destination) else { return destination }
        for level in model.lineage(of: entity) where level.relationships.contains(where: { $0.name == property }) {
            return level.name
        }
        return destination
    }

    static func deleteRuleCode(_ rule: DeleteRule) -> Int64 {
        switch rule {
        case .noAction: 0
        case .nullify: 1
        case .cascade: 2
        case .deny: 3
        }
    }

    /// The value class Core Data's compiler records for an attribute type; `nil` (`$null`) for a transformable
    /// without a declared class.
    static func valueClassName(_ a: CoreDataModel.Attribute) -> String? {
        switch a.type {
        case .integer16, .integer32, .integer64, .double, .float, .boolean: "NSNumber"
        case .decimal: "NSDecimalNumber"
        case .string: "NSString"
        case .date: "NSDate"
        case .binary: "NSData"
        case .uuid: "NSUUID"
        case .uri: "NSURL"
        case .transformable, nil: nil
        }
    }

    /// A default value as `encodeObject:forKey:` writes it: numbers and data as plain objects, dates, UUIDs and
    /// URLs as archived objects. A decimal is written as a number (exact for integral values, the nearest double
    /// otherwise). [unverified: whether Core Data accepts an NSNumber as a decimal attribute's default]
    mutating func defaultValue(_ v: StoreValue) -> PropertyListValue {
        switch v {
        case .null: return ArchiveBuilder.null
        case .integer16(let i): return archive.plain(.integer(Int64(i)))
        case .integer32(let i): return archive.plain(.integer(Int64(i)))
        case .integer64(let i): return archive.plain(.integer(i))
        case .boolean(let b): return archive.plain(.bool(b))
        case .double(let d): return archive.plain(.real(d))
        case .float(let f): return archive.plain(.real(Double(f)))
        case .decimal(let d):
            if let i = Int64(exactly: NSDecimalNumber(decimal: d).doubleValue), Decimal(i) == d {
                return archive.plain(.integer(i))
            }
            return archive.plain(.real(NSDecimalNumber(decimal: d).doubleValue))
        case .string(let s): return archive.string(s)
        case .date(let d):
            return archive.object(classes: ["NSDate", "NSObject"], [(key: "NS.time", value: .real(d.timeIntervalSinceReferenceDate))])
        case .binary(let data): return archive.plain(.data(data))
        case .uuid(let u):
            let bytes = withUnsafeBytes(of: u.uuid) { Data($0) }
            return archive.object(classes: ["NSUUID", "NSObject"], [(key: "NS.uuidbytes", value: .data(bytes))])
        case .uri(let url):
            return archive.object(classes: ["NSURL", "NSObject"], [
                (key: "NS.base", value: ArchiveBuilder.null), (key: "NS.relative", value: archive.string(url.absoluteString)),
            ])
        }
    }

    /// An expression in the printed form the decoder renders: a key path (`pages`, `author.name`) or a function of
    /// such (`count:(pages)`, nested).
    mutating func encodeExpression(_ text: String, part: String, depth: Int) throws(CoreDataFormatError) -> PropertyListValue {
        guard depth < KeyedArchive.maxDepth else {
            throw CoreDataFormatError(part, "the derivation is nested deeper than \(KeyedArchive.maxDepth)")
        }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let open = trimmed.firstIndex(of: "("), trimmed.hasSuffix(")"), trimmed[..<open].hasSuffix(":") {
            let selector = String(trimmed[..<open])
            let inner = trimmed[trimmed.index(after: open)..<trimmed.index(before: trimmed.endIndex)]
            var arguments: [PropertyListValue] = []
            for argument in Self.splitArguments(inner) {
                arguments.append(try encodeExpression(argument, part: part, depth: depth + 1))
            }
            let utilities = archive.object(
                classes: ["NSConstantValueExpression", "NSExpression", "NSObject"],
                [(key: "NSConstantValueClassName", value: archive.string("_NSPredicateUtilities")),
                 (key: "NSExpressionType", value: .integer(0))])
            return archive.object(classes: ["NSFunctionExpression", "NSExpression", "NSObject"], [
                (key: "NSArguments", value: archive.array(arguments)), (key: "NSExpressionType", value: .integer(4)),
                (key: "NSOperand", value: utilities), (key: "NSSelectorName", value: archive.string(selector)),
            ])
        }
        let keyPathCharacters = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "_.@"))
        guard !trimmed.isEmpty, trimmed.unicodeScalars.allSatisfy(keyPathCharacters.contains) else {
            throw CoreDataFormatError(part, "the derivation '\(text)' is not a key path or a function of key paths")
        }
        let selfExpression = archive.object(
            classes: ["NSSelfExpression", "NSExpression", "NSObject"], [(key: "NSExpressionType", value: .integer(1))])
        let specifier = archive.object(
            classes: ["NSKeyPathSpecifierExpression", "NSExpression", "NSObject"],
            [(key: "NSExpressionType", value: .integer(10)), (key: "NSKeyPath", value: archive.string(trimmed))])
        return archive.object(classes: ["NSKeyPathExpression", "NSFunctionExpression", "NSExpression", "NSObject"], [
            (key: "NSArguments", value: archive.array([specifier], classes: Self.mutableArray)),
            (key: "NSExpressionType", value: .integer(3)), (key: "NSOperand", value: selfExpression),
            (key: "NSSelectorName", value: archive.string(trimmed.contains(".") ? "valueForKeyPath:" : "valueForKey:")),
        ])
    }

    /// The top-level comma-separated arguments of a function's argument list.
    static func splitArguments(_ text: Substring) -> [String] {
        var out: [String] = []
        var depth = 0
        var current = ""
        for c in text {
            if c == "(" { depth += 1 }
            if c == ")" { depth -= 1 }
            if c == ",", depth == 0 {
                out.append(current)
                current = ""
            } else {
                current.append(c)
            }
        }
        if !current.trimmingCharacters(in: .whitespaces).isEmpty { out.append(current) }
        return out
    }
}
