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
        let ns = store.uuid
        var message: [UInt8] = [ns.0, ns.1, ns.2, ns.3, ns.4, ns.5, ns.6, ns.7,
                                ns.8, ns.9, ns.10, ns.11, ns.12, ns.13, ns.14, ns.15]
        message.append(contentsOf: "\(root)/p\(primaryKey)".utf8)
        var d = StoreDigest.sha1(message)
        d[6] = (d[6] & 0x0F) | 0x50
        d[8] = (d[8] & 0x3F) | 0x80
        return UUID(uuid: (d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7],
                           d[8], d[9], d[10], d[11], d[12], d[13], d[14], d[15]))
    }
}
