import Foundation
import StoreAPI

/// Says exactly why a record does not fit its entity. The save checks records while encoding them (by the value
/// tags it writes anyway, see ``RecordCodec/encode(_:_:into:)``); only a record that fails that check comes here,
/// for the typed error.
enum SaveValidator {
    /// Throws the error for the first thing about `r` that does not fit `info`'s entity.
    static func check(_ r: Record, _ info: LMDBEntityInfo, url: URL) throws {
        let entity = info.entity
        if entity.isAbstract { throw StoreError.abstractEntity(entity.name) }
        let types = info.attributeTypes
        guard r.attributes.count == types.count, r.relationships.count == info.toMany.count else {
            throw StoreError.io(url, operation: "saving \(r.key)", reason: "the record has \(r.attributes.count) attribute and \(r.relationships.count) relationship values; \(entity.name) has \(types.count) and \(info.toMany.count)")
        }
        for i in types.indices where !r.attributes[i].fits(types[i]) {
            let a = entity.attributes[i]
            throw StoreError.typeMismatch(entity: entity.name, property: a.name, expected: a.type, got: r.attributes[i].type?.rawValue ?? "nil")
        }
        for (i, isToMany) in info.toMany.enumerated() {
            switch (isToMany, r.relationships[i]) {
            case (true, .toMany), (false, .toOne): continue
            default:
                throw StoreError.invalidRelationshipTarget(entity: entity.name, relationship: entity.relationships[i].name, reason: isToMany ? "expected a to-many value" : "expected a to-one value")
            }
        }
    }
}
