import Foundation
@_spi(BackendKit) import StoreAPI

extension CoreDataModel {
    /// The compiled model Core Data would build from `schema`, so that a schema defined in code or read from
    /// another store type can be laid out (``CoreDataLayout``) and hashed as Core Data does.
    ///
    /// The model's fetch indexes are the schema's, compiled as Core Data compiles them (`compiledFetchIndexes(_:)`);
    /// they are not part of a version hash. A schema has no fetched properties or attribute class names, so the
    /// model has none either. A derivation written as Xcode does (`pages.@count`) is kept in Core Data's printed
    /// form (`count:(pages)`).
    public init(schema: Schema, versionIdentifiers: [String] = [""]) {
        var entities: [Entity] = []
        for d in schema.definitions {
            let (indexed, fetchIndexes) = Self.compiledFetchIndexes(d)
            func attribute(_ a: AttributeDescription, derived: Bool) -> Attribute {
                Attribute(
                    name: a.name, typeCode: Int(CoreDataVersionHash.typeCode(a.type)), type: a.type,
                    isOptional: a.isOptional, isTransient: a.isTransient, isReadOnly: a.isReadOnly,
                    defaultValue: a.defaultValue, valueClassName: nil, valueTransformerName: a.valueTransformerName,
                    versionHashModifier: a.versionHashModifier, renamingIdentifier: a.renamingIdentifier,
                    allowsExternalBinaryDataStorage: a.allowsExternalBinaryDataStorage,
                    preservesValueInHistoryOnDeletion: a.preservesValueInHistoryOnDeletion, isDerived: derived,
                    derivationExpression: a.derivation.map { CoreDataVersionHash.expressionFormat($0.expression) },
                    userInfo: a.userInfo, isIndexed: !derived && indexed.contains(a.name))
            }
            let relationships = d.relationships.map { r in
                Relationship(
                    name: r.name, destination: r.destination, inverse: r.inverse,
                    minCount: r.declaredMinCount ?? r.minCount,
                    maxCount: r.declaredMaxCount ?? (r.isToMany ? r.maxCount : 1), deleteRule: r.deleteRule,
                    isOrdered: r.isOrdered, isOptional: r.isOptional, isTransient: r.isTransient,
                    versionHashModifier: r.versionHashModifier, renamingIdentifier: r.renamingIdentifier,
                    userInfo: r.userInfo)
            }
            entities.append(Entity(
                name: d.name, parent: d.parent, isAbstract: d.isAbstract, className: d.representedClassName,
                versionHashModifier: d.versionHashModifier, renamingIdentifier: d.renamingIdentifier,
                userInfo: d.userInfo,
                attributes: d.attributes.map { attribute($0, derived: false) }
                    + d.derivedAttributes.map { attribute($0, derived: true) },
                relationships: relationships, fetchedPropertyNames: [], uniquenessConstraints: d.uniquenessConstraints,
                fetchIndexes: fetchIndexes))
        }
        self.init(
            entities: entities.sorted { CoreDataVersionHash.codePointOrder($0.name, $1.name) },
            configurations: schema.configurations, versionIdentifiers: versionIdentifiers)
    }

    /// The indexed attributes and fetch indexes Core Data's compiler makes from an entity's: an attribute is
    /// indexed (`NSIsIndexed`) when the schema says so or when it is the only element of one of the entity's
    /// binary fetch indexes, and each indexed attribute gets a fetch index of its own, named after it, ahead of the
    /// declared ones (unless one of them has that name). Every corpus cache follows this (an Xcode model whose
    /// `byUUID` index is over `uuid` alone compiles to an indexed `uuid` and indexes `uuid` and `byUUID`).
    /// [unverified: a descending single-element index, and one over an inherited attribute or a relationship, are
    /// taken to index the attribute (own attributes only) as an ascending one does]
    static func compiledFetchIndexes(_ d: EntityDescription) -> (indexed: Set<String>, indexes: [FetchIndex]) {
        let own = Set(d.attributes.map(\.name))
        var order = d.attributes.filter(\.isIndexed).map(\.name)
        for index in d.fetchIndexes {
            guard index.elements.count == 1, let only = index.elements.first, only.kind == .binary,
                  own.contains(only.property)
            else { continue }
            order.append(only.property)
        }
        var indexed: Set<String> = []
        order = order.filter { indexed.insert($0).inserted }
        let declared = Set(d.fetchIndexes.map(\.name))
        let implied = order.filter { !declared.contains($0) }.map {
            FetchIndex(name: $0, elements: [FetchIndexElement(property: $0)])
        }
        let compiled = d.fetchIndexes.map { index in
            FetchIndex(name: index.name, elements: index.elements.map {
                FetchIndexElement(property: $0.property, type: $0.kind == .rTree ? 1 : 0, isAscending: $0.isAscending)
            })
        }
        return (indexed, implied + compiled)
    }
}
