import Foundation

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
        var d = SHA1.digest(message)
        d[6] = (d[6] & 0x0F) | 0x50
        d[8] = (d[8] & 0x3F) | 0x80
        return UUID(uuid: (d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7],
                           d[8], d[9], d[10], d[11], d[12], d[13], d[14], d[15]))
    }
}

/// FIPS 180-4 SHA-1, only for ``NameBasedUUID`` (where RFC 4122 requires it; not for security).
enum SHA1 {
    static func digest(_ message: [UInt8]) -> [UInt8] {
        var h: [UInt32] = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0]
        var data = message
        let bitLength = UInt64(message.count) &* 8
        data.append(0x80)
        while data.count % 64 != 56 { data.append(0) }
        for i in (0..<8).reversed() { data.append(UInt8(truncatingIfNeeded: bitLength >> (UInt64(i) * 8))) }
        var w = [UInt32](repeating: 0, count: 80)
        for chunk in stride(from: 0, to: data.count, by: 64) {
            for i in 0..<16 {
                let b = chunk + i * 4
                w[i] = UInt32(data[b]) << 24 | UInt32(data[b + 1]) << 16 | UInt32(data[b + 2]) << 8 | UInt32(data[b + 3])
            }
            for i in 16..<80 { w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1) }
            var (a, b, c, d, e) = (h[0], h[1], h[2], h[3], h[4])
            for i in 0..<80 {
                let f: UInt32
                let k: UInt32
                switch i {
                case 0..<20: f = (b & c) | (~b & d); k = 0x5A827999
                case 20..<40: f = b ^ c ^ d; k = 0x6ED9EBA1
                case 40..<60: f = (b & c) | (b & d) | (c & d); k = 0x8F1BBCDC
                default: f = b ^ c ^ d; k = 0xCA62C1D6
                }
                let t = rotl(a, 5) &+ f &+ e &+ k &+ w[i]
                (e, d, c, b, a) = (d, c, rotl(b, 30), a, t)
            }
            h[0] = h[0] &+ a; h[1] = h[1] &+ b; h[2] = h[2] &+ c; h[3] = h[3] &+ d; h[4] = h[4] &+ e
        }
        return h.flatMap { v in (0..<4).map { UInt8(truncatingIfNeeded: v >> (24 - 8 * UInt32($0))) } }
    }

    @inline(__always)
    private static func rotl(_ x: UInt32, _ n: UInt32) -> UInt32 { (x << n) | (x >> (32 - n)) }
}
