import Foundation
@_spi(BackendKit) import StoreAPI

/// The global identifiers of records read from a Core Data store.
///
/// Core Data keeps no global identifier of its own. A record's is derived, RFC 4122 version 5 (SHA-1, name-based),
/// from the store UUID (`Z_UUID`, the namespace) and the name `<root entity>/p<Z_PK>`: the same on every read and
/// in every process, so export, convert and diff are repeatable, and a store converted away and back keeps its
/// records' identities. The root entity (the table), not the concrete entity, names the record, because `Z_PK` is
/// unique per table. The XML backend derives the identifiers of Core Data XML objects the same way.
enum CoreDataGlobalID {
    /// The version-5 UUID of `root/p<primaryKey>` in the store's namespace.
    static func make(store: UUID, root: String, primaryKey: Int64) -> UUID {
        NameBasedUUID.make(namespace: store, name: "\(root)/p\(primaryKey)")
    }
}
