import Foundation
@_spi(BackendKit) import StoreAPI

/// A compiled Core Data model as a store's `Z_MODELCACHE` holds it: every entity and property with all that Core Data
/// records about it, including what `Schema` has no field for (type codes, value class names, fetched properties,
/// the printed form of a derivation).
///
/// Decode one with ``CoreDataModelCache/decode(_:)``; turn it into the framework's schema with ``schema()``.
@_spi(BackendKit) public struct CoreDataModel: Sendable, Hashable {
    /// The entities, in the model's order (Core Data keeps them sorted by name).
    public var entities: [Entity]
    /// Configuration name → the names of its entities.
    public var configurations: [String: [String]]
    /// The model's version identifiers.
    public var versionIdentifiers: [String]

    /// An entity of the compiled model.
    public struct Entity: Sendable, Hashable {
        public var name: String
        /// The parent entity's name, for sub-entities.
        public var parent: String?
        public var isAbstract: Bool
        /// The class name the app uses (`NSClassNameForEntity`); `nil` where the model names none — Core Data
        /// itself archives some entities with a class named like the entity and others with none, so the name is
        /// carried as written rather than normalised.
        public var className: String?
        public var versionHashModifier: String?
        /// The entity's name before a rename (`NSRenamingIdentifier`); a migrated store's `Z_PRIMARYKEY` may still
        /// carry it.
        public var renamingIdentifier: String?
        public var userInfo: [String: String]
        /// The properties declared on this entity (inherited ones are on the ancestors).
        public var attributes: [Attribute]
        public var relationships: [Relationship]
        /// Fetched properties: never stored, kept by name only.
        public var fetchedPropertyNames: [String]
        /// The uniqueness constraints declared on this entity (not inherited ones), as property names.
        public var uniquenessConstraints: [[String]]
        /// The fetch indexes declared on this entity (not inherited ones), in the model's order. The compiler turns
        /// an indexed attribute into a fetch index named after it, so these are all the SQL indexes Core Data makes
        /// from the model besides foreign keys and uniqueness constraints.
        public var fetchIndexes: [FetchIndex] = []
    }

    /// A fetch index (`NSFetchIndexDescription`): Core Data creates it as `Z_<Entity>_<name>`.
    public struct FetchIndex: Sendable, Hashable {
        public var name: String
        public var elements: [FetchIndexElement]
        /// Whether the index has a partial-index predicate (`NSPartialIndexPredicate`), which is not decoded.
        public var isPartial: Bool

        /// Creates a fetch index.
        public init(name: String, elements: [FetchIndexElement], isPartial: Bool = false) {
            self.name = name
            self.elements = elements
            self.isPartial = isPartial
        }
    }

    /// One property of a fetch index (`NSFetchIndexElementDescription`).
    public struct FetchIndexElement: Sendable, Hashable {
        public var property: String
        /// `NSFetchIndexElementType`: 0 binary (a B-tree index), 1 R-tree.
        public var type: Int
        public var isAscending: Bool

        /// Creates an element.
        public init(property: String, type: Int = 0, isAscending: Bool = true) {
            self.property = property
            self.type = type
            self.isAscending = isAscending
        }
    }

    /// An attribute of the compiled model.
    public struct Attribute: Sendable, Hashable {
        public var name: String
        /// `NSAttributeType`: 100 Int16 … 1800 Transformable, 2000 object ID, 2100 composite, 0 undefined.
        public var typeCode: Int
        /// The framework's type for ``typeCode``, or `nil` for the codes it has no type for (undefined, object ID,
        /// composite), which Core Data only allows on transient attributes.
        public var type: AttributeType?
        public var isOptional: Bool
        public var isTransient: Bool
        public var isReadOnly: Bool
        /// The default value, when the model has one the framework can hold (a transformable's default is an object
        /// of the app's class and is not carried).
        public var defaultValue: StoreValue?
        /// `NSAttributeValueClassName`.
        public var valueClassName: String?
        /// For transformable attributes: the value transformer's name.
        public var valueTransformerName: String?
        public var versionHashModifier: String?
        public var renamingIdentifier: String?
        /// `NSFlagsKey` 0x4: the value may live in a file beside the store.
        public var allowsExternalBinaryDataStorage: Bool
        /// `NSFlagsKey` 0x10: persistent history keeps the value in a tombstone on delete.
        public var preservesValueInHistoryOnDeletion: Bool
        /// A derived attribute (`NSDerivedAttributeDescription`), maintained by triggers.
        public var isDerived: Bool
        /// A derived attribute's expression in predicate-format text (`count:(pages)`), when it is of a form this
        /// decoder renders (key paths, functions, constants, variables).
        public var derivationExpression: String?
        public var userInfo: [String: String]
        /// `NSIsIndexed`: the legacy per-attribute index flag. The compiler also lists a fetch index named after the
        /// attribute, which is what the store's index is made from.
        public var isIndexed: Bool = false
    }

    /// A relationship of the compiled model.
    public struct Relationship: Sendable, Hashable {
        public var name: String
        public var destination: String
        public var inverse: String?
        /// `NSMinCount` as stored.
        public var minCount: Int
        /// `NSMaxCount` as stored: 1 for to-one; 0 (Xcode) or −1 (a model built in code) for an unbounded to-many.
        public var maxCount: Int
        public var deleteRule: DeleteRule
        public var isOrdered: Bool
        public var isOptional: Bool
        public var isTransient: Bool
        public var versionHashModifier: String?
        public var renamingIdentifier: String?
        public var userInfo: [String: String]

        /// Core Data's rule: every relationship whose maximum is not exactly 1 is to-many.
        public var isToMany: Bool { maxCount != 1 }
    }

    /// The entity named `name`.
    public func entity(named name: String) -> Entity? { entities.first { $0.name == name } }

    /// Every entity's `Z_ENT`, as Core Data numbers them: entities sorted by case-insensitive name, each root
    /// numbered in that order with its sub-entities depth-first right after it. [unverified: the order of sibling
    /// sub-entities; they are taken in the same sorted order.]
    public func entityNumbers() -> [String: Int] {
        let sorted = entities.sorted {
            let a = $0.name.lowercased(), b = $1.name.lowercased()
            return a != b ? a < b : $0.name < $1.name
        }
        var children: [String: [String]] = [:]
        for e in sorted { if let p = e.parent { children[p, default: []].append(e.name) } }
        let known = Set(entities.map(\.name))
        var numbers: [String: Int] = [:]
        var next = 1
        func visit(_ name: String, depth: Int) {
            guard numbers[name] == nil, depth < 256 else { return }
            numbers[name] = next
            next += 1
            for c in children[name] ?? [] { visit(c, depth: depth + 1) }
        }
        for e in sorted where e.parent == nil || !known.contains(e.parent ?? "") { visit(e.name, depth: 0) }
        return numbers
    }

    /// The framework's schema for this model.
    ///
    /// Derived attributes go to `EntityDescription.derivedAttributes` with their expression in Xcode's form;
    /// relationship counts keep the stored values as the declared ones (Core Data's version hash covers them) and
    /// normalise the others (an unbounded to-many has maximum 0); transient attributes of a type the framework lacks
    /// are left out (they are never stored), and so is a uniqueness constraint that names a non-attribute.
    public func schema() throws(SchemaError) -> Schema {
        var definitions: [EntityDescription] = []
        for e in entities {
            let attributeNames = Set(lineage(of: e).flatMap { $0.attributes.filter { $0.type != nil }.map(\.name) })
            let propertyNames = attributeNames.union(lineage(of: e).flatMap { $0.relationships.map(\.name) })
            let fetchIndexes = Self.schemaFetchIndexes(e, propertyNames: propertyNames)
            // The compiler marks the only element of a binary fetch index indexed (see
            // CoreDataModel.compiledFetchIndexes(_:)); the schema leaves the flag off for it, as the model file did.
            let indexedByAnIndex = Set(fetchIndexes.compactMap { index in
                index.elements.count == 1 && index.elements[0].kind == .binary ? index.elements[0].property : nil
            })
            var attributes: [AttributeDescription] = []
            var derived: [AttributeDescription] = []
            for a in e.attributes {
                guard let type = a.type else { continue }
                var description = AttributeDescription(
                    name: a.name, type: type, isOptional: a.isOptional, defaultValue: a.defaultValue,
                    isTransient: a.isTransient, valueTransformerName: a.valueTransformerName, userInfo: a.userInfo,
                    versionHashModifier: a.versionHashModifier, isReadOnly: a.isReadOnly,
                    allowsExternalBinaryDataStorage: a.allowsExternalBinaryDataStorage,
                    preservesValueInHistoryOnDeletion: a.preservesValueInHistoryOnDeletion,
                    renamingIdentifier: Self.renaming(a.renamingIdentifier, of: a.name),
                    isIndexed: a.isIndexed && !indexedByAnIndex.contains(a.name))
                if a.isDerived {
                    description.derivation = AttributeDerivation(
                        expression: Self.xcodeExpression(a.derivationExpression ?? ""), filteringPredicate: nil)
                    derived.append(description)
                } else {
                    attributes.append(description)
                }
            }
            let relationships = e.relationships.map { r in
                RelationshipDescription(
                    name: r.name, destination: r.destination, inverse: r.inverse, isToMany: r.isToMany,
                    isOrdered: r.isOrdered, deleteRule: r.deleteRule, isOptional: r.isOptional,
                    minCount: max(0, r.minCount), maxCount: r.isToMany ? max(0, r.maxCount) : 1,
                    isTransient: r.isTransient, userInfo: r.userInfo, versionHashModifier: r.versionHashModifier,
                    isReadOnly: false, renamingIdentifier: Self.renaming(r.renamingIdentifier, of: r.name),
                    declaredMinCount: r.minCount, declaredMaxCount: r.maxCount)
            }
            let constraints = e.uniquenessConstraints.filter { !$0.isEmpty && $0.allSatisfy(attributeNames.contains) }
            definitions.append(EntityDescription(
                name: e.name, parent: e.parent, isAbstract: e.isAbstract, attributes: attributes,
                relationships: relationships, uniquenessConstraints: constraints, userInfo: e.userInfo,
                versionHashModifier: e.versionHashModifier,
                representedClassName: e.className, derivedAttributes: derived,
                renamingIdentifier: Self.renaming(e.renamingIdentifier, of: e.name),
                fetchIndexes: fetchIndexes))
        }
        do {
            return try Schema(entities: definitions, configurations: configurations)
        } catch let error as SchemaError {
            throw error
        } catch {
            throw SchemaError.unreadableModel(file: "Z_MODELCACHE", reason: "\(error)")
        }
    }

    /// The entity's fetch indexes as the schema keeps them: without the one the compiler made for each indexed
    /// attribute (the attribute's `isIndexed` says the same, see `EntityDescription.allFetchIndexes`), and without
    /// those a schema cannot hold: partial indexes (their predicate is not decoded), element types other than
    /// binary (0) and R-tree (1), elements naming no stored property, and a second index of one name.
    static func schemaFetchIndexes(_ e: Entity, propertyNames: Set<String>) -> [StoreAPI.FetchIndex] {
        let indexed = Set(e.attributes.filter(\.isIndexed).map(\.name))
        var out: [StoreAPI.FetchIndex] = []
        var names: Set<String> = []
        for index in e.fetchIndexes where !index.isPartial && !index.elements.isEmpty && !index.name.isEmpty {
            var elements: [StoreAPI.FetchIndex.Element] = []
            for element in index.elements {
                guard propertyNames.contains(element.property), element.type == 0 || element.type == 1 else { break }
                elements.append(StoreAPI.FetchIndex.Element(
                    property: element.property, kind: element.type == 1 ? .rTree : .binary,
                    isAscending: element.isAscending))
            }
            guard elements.count == index.elements.count else { continue }
            let implied = indexed.contains(index.name) && elements == [StoreAPI.FetchIndex.Element(property: index.name)]
            if !implied, names.insert(index.name).inserted {
                out.append(StoreAPI.FetchIndex(name: index.name, elements: elements))
            }
        }
        return out
    }

    /// Core Data's compiler fills in a renaming identifier equal to the name when the model set none; the schema
    /// keeps one only when it says something (as the Xcode-model loader does).
    static func renaming(_ identifier: String?, of name: String) -> String? {
        identifier == name || identifier?.isEmpty == true ? nil : identifier
    }

    /// A derivation in the form Xcode's model files write it: Core Data prints `pages.@count` as `count:(pages)`;
    /// other expressions are kept as printed.
    static func xcodeExpression(_ printed: String) -> String {
        let prefix = "count:(", suffix = ")"
        guard printed.hasPrefix(prefix), printed.hasSuffix(suffix), printed.count > prefix.count + suffix.count else {
            return printed
        }
        let path = printed.dropFirst(prefix.count).dropLast(suffix.count)
        guard !path.contains(","), !path.contains("(") else { return printed }
        return path + ".@count"
    }

    /// `entity` and its ancestors (bounded, so a hostile parent cycle ends).
    func lineage(of entity: Entity) -> [Entity] {
        var out = [entity]
        var cursor = entity.parent
        while let p = cursor, out.count < 256, let parent = self.entity(named: p), !out.contains(where: { $0.name == p }) {
            out.append(parent)
            cursor = parent.parent
        }
        return out
    }
}
