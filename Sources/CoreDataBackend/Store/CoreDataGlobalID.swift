import Foundation
@_spi(BackendKit) import StoreAPI

/// The global identifiers of records read from a Core Data store.
///
/// Core Data keeps no global identifier of its own. A record's is derived, RFC 4122 version 5 (SHA-1, name-based),
/// from the store UUID (`Z_UUID`, the namespace) and the name `<root entity>/p<Z_PK>`: the same on every read and
/// in every process, so export, convert and diff are repeatable, and a store converted away and back keeps its
/// records' identities. The root entity (the table), not the concrete entity, names the record, because `Z_PK` is
/// unique per table. The XML backend derives the identifiers of Core Data XML objects the same way. A record saved
/// with another identifier keeps it in ``CoreDataGlobalIDTable``.
enum CoreDataGlobalID {
    /// The version-5 UUID of `root/p<primaryKey>` in the store's namespace.
    static func make(store: UUID, root: String, primaryKey: Int64) -> UUID {
        NameBasedUUID.make(namespace: store, name: "\(root)/p\(primaryKey)")
    }

    /// The same UUIDs as ``make(store:root:primaryKey:)``, made without allocating: every record read needs one, and
    /// the general digest's arrays cost more than the hash. The namespace and the `root/p` prefix are kept; a
    /// message that does not fit one SHA-1 block takes the general path.
    struct Maker {
        private let store: UUID
        private let root: String
        /// Namespace bytes, then the UTF-8 of `root/p`.
        private let prefix: [UInt8]

        init(store: UUID, root: String) {
            self.store = store
            self.root = root
            let ns = store.uuid
            prefix = [ns.0, ns.1, ns.2, ns.3, ns.4, ns.5, ns.6, ns.7, ns.8, ns.9, ns.10, ns.11, ns.12, ns.13, ns.14, ns.15]
                + Array("\(root)/p".utf8)
        }

        func make(_ primaryKey: Int64) -> UUID {
            // The key's decimal digits (and sign), written backwards.
            var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
            let count: Int = withUnsafeMutableBytes(of: &digits) { d in
                var n = primaryKey.magnitude
                var i = 0
                repeat {
                    d[i] = UInt8(ascii: "0") + UInt8(n % 10)
                    n /= 10
                    i += 1
                } while n > 0
                if primaryKey < 0 {
                    d[i] = UInt8(ascii: "-")
                    i += 1
                }
                return i
            }
            let length = prefix.count + count
            guard length <= 55 else { return CoreDataGlobalID.make(store: store, root: root, primaryKey: primaryKey) }
            var block: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
            let h = withUnsafeMutableBytes(of: &block) { bytes -> (UInt32, UInt32, UInt32, UInt32) in
                prefix.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: bytes[..<$0.count]).copyMemory(from: $0) }
                withUnsafeBytes(of: digits) { d in
                    for i in 0..<count { bytes[prefix.count + i] = d[count - 1 - i] }
                }
                bytes[length] = 0x80
                let bits = UInt64(length) * 8
                for i in 0..<8 { bytes[63 - i] = UInt8(truncatingIfNeeded: bits >> (8 * UInt64(i))) }
                let w = bytes.bindMemory(to: UInt32.self)
                for i in 0..<16 { w[i] = UInt32(bigEndian: w[i]) }
                return Self.compress(w)
            }
            func byte(_ word: UInt32, _ k: UInt32) -> UInt8 { UInt8(truncatingIfNeeded: word >> (24 - 8 * k)) }
            return UUID(uuid: (
                byte(h.0, 0), byte(h.0, 1), byte(h.0, 2), byte(h.0, 3), byte(h.1, 0), byte(h.1, 1),
                (byte(h.1, 2) & 0x0F) | 0x50, byte(h.1, 3), (byte(h.2, 0) & 0x3F) | 0x80, byte(h.2, 1), byte(h.2, 2),
                byte(h.2, 3), byte(h.3, 0), byte(h.3, 1), byte(h.3, 2), byte(h.3, 3)))
        }

        /// SHA-1 of one padded block (big-endian words, overwritten with the message schedule): the first four words
        /// of the digest (a UUID takes 16 bytes).
        private static func compress(_ m: UnsafeMutableBufferPointer<UInt32>) -> (UInt32, UInt32, UInt32, UInt32) {
            @inline(__always) func rotl(_ x: UInt32, _ n: UInt32) -> UInt32 { (x << n) | (x >> (32 - n)) }
            /// Word `i` of the message schedule; from 16 on, computed and kept in place of word `i - 16`.
            @inline(__always) func w(_ i: Int) -> UInt32 {
                guard i >= 16 else { return m[i] }
                let x = rotl(m[(i &- 3) & 15] ^ m[(i &- 8) & 15] ^ m[(i &- 14) & 15] ^ m[i & 15], 1)
                m[i & 15] = x
                return x
            }
            // One step per round function, each changing only `b` and `e`: five steps with the variables renamed
            // in turn leave them where they started, so no step moves all five.
            @inline(__always) func ch(_ a: UInt32, _ b: inout UInt32, _ c: UInt32, _ d: UInt32, _ e: inout UInt32, _ w: UInt32) {
                e = e &+ rotl(a, 5) &+ ((b & c) | (~b & d)) &+ 0x5A827999 &+ w
                b = rotl(b, 30)
            }
            @inline(__always) func parity1(_ a: UInt32, _ b: inout UInt32, _ c: UInt32, _ d: UInt32, _ e: inout UInt32, _ w: UInt32) {
                e = e &+ rotl(a, 5) &+ (b ^ c ^ d) &+ 0x6ED9EBA1 &+ w
                b = rotl(b, 30)
            }
            @inline(__always) func maj(_ a: UInt32, _ b: inout UInt32, _ c: UInt32, _ d: UInt32, _ e: inout UInt32, _ w: UInt32) {
                e = e &+ rotl(a, 5) &+ ((b & c) | (b & d) | (c & d)) &+ 0x8F1BBCDC &+ w
                b = rotl(b, 30)
            }
            @inline(__always) func parity2(_ a: UInt32, _ b: inout UInt32, _ c: UInt32, _ d: UInt32, _ e: inout UInt32, _ w: UInt32) {
                e = e &+ rotl(a, 5) &+ (b ^ c ^ d) &+ 0xCA62C1D6 &+ w
                b = rotl(b, 30)
            }
            var (a, b, c, d, e): (UInt32, UInt32, UInt32, UInt32, UInt32) =
                (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0)
            for i in stride(from: 0, to: 20, by: 5) {
                ch(a, &b, c, d, &e, w(i)); ch(e, &a, b, c, &d, w(i + 1)); ch(d, &e, a, b, &c, w(i + 2))
                ch(c, &d, e, a, &b, w(i + 3)); ch(b, &c, d, e, &a, w(i + 4))
            }
            for i in stride(from: 20, to: 40, by: 5) {
                parity1(a, &b, c, d, &e, w(i)); parity1(e, &a, b, c, &d, w(i + 1)); parity1(d, &e, a, b, &c, w(i + 2))
                parity1(c, &d, e, a, &b, w(i + 3)); parity1(b, &c, d, e, &a, w(i + 4))
            }
            for i in stride(from: 40, to: 60, by: 5) {
                maj(a, &b, c, d, &e, w(i)); maj(e, &a, b, c, &d, w(i + 1)); maj(d, &e, a, b, &c, w(i + 2))
                maj(c, &d, e, a, &b, w(i + 3)); maj(b, &c, d, e, &a, w(i + 4))
            }
            for i in stride(from: 60, to: 80, by: 5) {
                parity2(a, &b, c, d, &e, w(i)); parity2(e, &a, b, c, &d, w(i + 1)); parity2(d, &e, a, b, &c, w(i + 2))
                parity2(c, &d, e, a, &b, w(i + 3)); parity2(b, &c, d, e, &a, w(i + 4))
            }
            return (0x67452301 &+ a, 0xEFCDAB89 &+ b, 0x98BADCFE &+ c, 0x10325476 &+ d)
        }
    }
}
