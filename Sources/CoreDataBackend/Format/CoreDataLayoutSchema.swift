import Foundation
@_spi(BackendKit) import StoreAPI

extension CoreDataModel {
    /// The compiled model Core Data would build from `schema`, so that a schema defined in code or read from
    /// another store type can be laid out (``CoreDataLayout``) and hashed as Core Data does.
    ///
    /// A schema has no fetch indexes, fetched properties or attribute class names, so the model has none either:
    /// a store laid out from it lacks the `Z_<Entity>_<index>` indexes of the app's model (and their absence does
    /// not change a version hash). A derivation written as Xcode does (`pages.@count`) is kept in Core Data's
    /// printed form (`count:(pages)`).
    public init(schema: Schema, versionIdentifiers: [String] = [""]) {
        var entities: [Entity] = []
        for d in schema.definitions {
            func attribute(_ a: AttributeDescription, derived: Bool) -> Attribute {
                Attribute(
                    name: a.name, typeCode: Int(CoreDataVersionHash.typeCode(a.type)), type: a.type,
                    isOptional: a.isOptional, isTransient: a.isTransient, isReadOnly: a.isReadOnly,
                    defaultValue: a.defaultValue, valueClassName: nil, valueTransformerName: a.valueTransformerName,
                    versionHashModifier: a.versionHashModifier, renamingIdentifier: a.renamingIdentifier,
                    allowsExternalBinaryDataStorage: a.allowsExternalBinaryDataStorage,
                    preservesValueInHistoryOnDeletion: a.preservesValueInHistoryOnDeletion, isDerived: derived,
                    derivationExpression: a.derivation.map { CoreDataVersionHash.expressionFormat($0.expression) },
                    userInfo: a.userInfo)
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
                name: d.name, parent: d.parent, isAbstract: d.isAbstract, className: d.representedClassName ?? d.name,
                versionHashModifier: d.versionHashModifier, renamingIdentifier: d.renamingIdentifier,
                userInfo: d.userInfo,
                attributes: d.attributes.map { attribute($0, derived: false) }
                    + d.derivedAttributes.map { attribute($0, derived: true) },
                relationships: relationships, fetchedPropertyNames: [], uniquenessConstraints: d.uniquenessConstraints))
        }
        self.init(
            entities: entities.sorted { CoreDataVersionHash.codePointOrder($0.name, $1.name) },
            configurations: schema.configurations, versionIdentifiers: versionIdentifiers)
    }
}
