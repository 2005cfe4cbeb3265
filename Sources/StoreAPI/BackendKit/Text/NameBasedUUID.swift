import Foundation

/// RFC 4122 version-5 (SHA-1, name-based) UUIDs: the same name in the same namespace always gives the same UUID.
///
/// Backends whose files carry no global identifier derive one with it, so that every read of an unchanged file
/// gives its records the same identities (an export, a conversion and a diff are then repeatable, and a store
/// converted away and back keeps them).
@_spi(BackendKit) public enum NameBasedUUID {
    /// The version-5 UUID of `name` (as UTF-8) in `namespace`.
    public static func make(namespace: UUID, name: String) -> UUID {
        let ns = namespace.uuid
        var message: [UInt8] = [ns.0, ns.1, ns.2, ns.3, ns.4, ns.5, ns.6, ns.7,
                                ns.8, ns.9, ns.10, ns.11, ns.12, ns.13, ns.14, ns.15]
        message.append(contentsOf: name.utf8)
        var d = StoreDigest.sha1(message)
        d[6] = (d[6] & 0x0F) | 0x50
        d[8] = (d[8] & 0x3F) | 0x80
        return UUID(uuid: (d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7],
                           d[8], d[9], d[10], d[11], d[12], d[13], d[14], d[15]))
    }
}
