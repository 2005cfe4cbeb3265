import Foundation
@_spi(BackendKit) import StoreAPI

/// RFC 4122 version-5 (SHA-1, name-based) UUIDs.
///
/// Records read from Core Data's own XML files have no global identifier; deriving one from the store UUID and the
/// object's `id` gives the same identifier every time the file is read, so an unchanged file never looks like new
/// records to a sync peer or a diff.
enum NameBasedUUID {
    /// The namespace for store UUIDs derived from file contents (a fixed random UUID).
    static let storeNamespace = UUID(uuid: (0x5B, 0x0F, 0x8E, 0x52, 0x33, 0x1D, 0x4C, 0x6A,
                                            0x9E, 0x47, 0x0D, 0x2B, 0x61, 0xC8, 0x7A, 0x13))

    /// The version-5 UUID of `name` in `namespace`.
    static func make(namespace: UUID, name: String) -> UUID {
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
