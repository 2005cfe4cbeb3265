import CSHA1
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
        /// Namespace bytes, then the UTF-8 of `root/p`: their count, and a block that begins with them (zeros when
        /// they fill it, and every key takes the general path).
        private let prefixCount: Int
        private let prefixBlock: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
        /// Whether blocks go to the processor's SHA instructions (``hardwareAvailable``) instead of the rounds
        /// written out below; the digests are the same.
        private let usesHardware: Bool

        /// Whether this processor has SHA instructions (x86-64 SHA extensions), asked once per process.
        static let hardwareAvailable = csha1_has_hardware() != 0

        init(store: UUID, root: String, usesHardware: Bool = Maker.hardwareAvailable) {
            self.store = store
            self.root = root
            self.usesHardware = usesHardware && Self.hardwareAvailable
            let ns = store.uuid
            let prefix = [ns.0, ns.1, ns.2, ns.3, ns.4, ns.5, ns.6, ns.7, ns.8, ns.9, ns.10, ns.11, ns.12, ns.13, ns.14, ns.15]
                + Array("\(root)/p".utf8)
            prefixCount = prefix.count
            var block: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
            if prefix.count < 56 {
                withUnsafeMutableBytes(of: &block) { b in
                    prefix.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: b[..<$0.count]).copyMemory(from: $0) }
                }
            }
            prefixBlock = block
        }

        func make(_ primaryKey: Int64) -> UUID {
            guard let h = digest(primaryKey) else { return CoreDataGlobalID.make(store: store, root: root, primaryKey: primaryKey) }
            return UUID(uuid: Self.bytes(h))
        }

        /// Whether `id` is the identifier ``make(_:)`` gives `primaryKey`: compared as bytes, without making the UUID
        /// (a write checks every record it inserts).
        func isDerived(_ id: UUID, _ primaryKey: Int64) -> Bool {
            guard let h = digest(primaryKey) else { return id == CoreDataGlobalID.make(store: store, root: root, primaryKey: primaryKey) }
            // As two words each: comparing the bytes as collections cost more than the hash.
            func words(_ u: uuid_t) -> (UInt64, UInt64) {
                withUnsafeBytes(of: u) { ($0.loadUnaligned(fromByteOffset: 0, as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) }
            }
            return words(Self.bytes(h)) == words(id.uuid)
        }

        /// The UUID bytes of a digest's first four words: its first 16 bytes with the version and variant set.
        private static func bytes(_ h: (UInt32, UInt32, UInt32, UInt32)) -> uuid_t {
            func byte(_ word: UInt32, _ k: UInt32) -> UInt8 { UInt8(truncatingIfNeeded: word >> (24 - 8 * k)) }
            return (
                byte(h.0, 0), byte(h.0, 1), byte(h.0, 2), byte(h.0, 3), byte(h.1, 0), byte(h.1, 1),
                (byte(h.1, 2) & 0x0F) | 0x50, byte(h.1, 3), (byte(h.2, 0) & 0x3F) | 0x80, byte(h.2, 1), byte(h.2, 2),
                byte(h.2, 3), byte(h.3, 0), byte(h.3, 1), byte(h.3, 2), byte(h.3, 3))
        }

        /// The first four words of the SHA-1 of the namespace and `root/p<primaryKey>`; `nil` when the message does
        /// not fit one block (the general path makes those).
        private func digest(_ primaryKey: Int64) -> (UInt32, UInt32, UInt32, UInt32)? {
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
            let length = prefixCount + count
            guard length <= 55 else { return nil }
            var block = prefixBlock
            return withUnsafeMutableBytes(of: &block) { bytes -> (UInt32, UInt32, UInt32, UInt32) in
                withUnsafeBytes(of: digits) { d in
                    for i in 0..<count { bytes[prefixCount + i] = d[count - 1 - i] }
                }
                bytes[length] = 0x80
                let bits = UInt64(length) * 8
                for i in 0..<8 { bytes[63 - i] = UInt8(truncatingIfNeeded: bits >> (8 * UInt64(i))) }
                if usesHardware, let block = bytes.baseAddress {
                    return Self.compressInHardware(UnsafeRawPointer(block).assumingMemoryBound(to: UInt8.self))
                }
                let w = bytes.bindMemory(to: UInt32.self)
                for i in 0..<16 { w[i] = UInt32(bigEndian: w[i]) }
                return Self.compress(w)
            }
        }

        /// SHA-1 of one padded 64-byte block (message bytes) on the processor's SHA instructions: the first four
        /// words of the digest, as ``compress(_:)`` gives them.
        private static func compressInHardware(_ block: UnsafePointer<UInt8>) -> (UInt32, UInt32, UInt32, UInt32) {
            var state: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0)
            withUnsafeMutableBytes(of: &state) { raw in
                csha1_compress_block(raw.baseAddress?.assumingMemoryBound(to: UInt32.self), block)
            }
            return (state.0, state.1, state.2, state.3)
        }

        /// SHA-1 of one padded block (big-endian words): the first four words of the digest (a UUID takes 16 bytes).
        ///
        /// Written out round by round, the schedule in sixteen locals: with every word's index a constant, the
        /// compiler keeps the state in registers and computes no index per word.
        private static func compress(_ m: UnsafeMutableBufferPointer<UInt32>) -> (UInt32, UInt32, UInt32, UInt32) {
            @inline(__always) func rotl(_ x: UInt32, _ n: UInt32) -> UInt32 { (x << n) | (x >> (32 - n)) }
            let k1: UInt32 = 0x5A82_7999, k2: UInt32 = 0x6ED9_EBA1, k3: UInt32 = 0x8F1B_BCDC, k4: UInt32 = 0xCA62_C1D6
            var w0 = m[0], w1 = m[1], w2 = m[2], w3 = m[3], w4 = m[4], w5 = m[5], w6 = m[6], w7 = m[7]
            var w8 = m[8], w9 = m[9], w10 = m[10], w11 = m[11], w12 = m[12], w13 = m[13], w14 = m[14], w15 = m[15]
            var a: UInt32 = 0x6745_2301, b: UInt32 = 0xEFCD_AB89, c: UInt32 = 0x98BA_DCFE, d: UInt32 = 0x1032_5476
            var e: UInt32 = 0xC3D2_E1F0
            e = e &+ rotl(a, 5) &+ (d ^ (b & (c ^ d))) &+ k1 &+ w0
            b = rotl(b, 30)
            d = d &+ rotl(e, 5) &+ (c ^ (a & (b ^ c))) &+ k1 &+ w1
            a = rotl(a, 30)
            c = c &+ rotl(d, 5) &+ (b ^ (e & (a ^ b))) &+ k1 &+ w2
            e = rotl(e, 30)
            b = b &+ rotl(c, 5) &+ (a ^ (d & (e ^ a))) &+ k1 &+ w3
            d = rotl(d, 30)
            a = a &+ rotl(b, 5) &+ (e ^ (c & (d ^ e))) &+ k1 &+ w4
            c = rotl(c, 30)
            e = e &+ rotl(a, 5) &+ (d ^ (b & (c ^ d))) &+ k1 &+ w5
            b = rotl(b, 30)
            d = d &+ rotl(e, 5) &+ (c ^ (a & (b ^ c))) &+ k1 &+ w6
            a = rotl(a, 30)
            c = c &+ rotl(d, 5) &+ (b ^ (e & (a ^ b))) &+ k1 &+ w7
            e = rotl(e, 30)
            b = b &+ rotl(c, 5) &+ (a ^ (d & (e ^ a))) &+ k1 &+ w8
            d = rotl(d, 30)
            a = a &+ rotl(b, 5) &+ (e ^ (c & (d ^ e))) &+ k1 &+ w9
            c = rotl(c, 30)
            e = e &+ rotl(a, 5) &+ (d ^ (b & (c ^ d))) &+ k1 &+ w10
            b = rotl(b, 30)
            d = d &+ rotl(e, 5) &+ (c ^ (a & (b ^ c))) &+ k1 &+ w11
            a = rotl(a, 30)
            c = c &+ rotl(d, 5) &+ (b ^ (e & (a ^ b))) &+ k1 &+ w12
            e = rotl(e, 30)
            b = b &+ rotl(c, 5) &+ (a ^ (d & (e ^ a))) &+ k1 &+ w13
            d = rotl(d, 30)
            a = a &+ rotl(b, 5) &+ (e ^ (c & (d ^ e))) &+ k1 &+ w14
            c = rotl(c, 30)
            e = e &+ rotl(a, 5) &+ (d ^ (b & (c ^ d))) &+ k1 &+ w15
            b = rotl(b, 30)
            w0 = rotl(w13 ^ w8 ^ w2 ^ w0, 1)
            d = d &+ rotl(e, 5) &+ (c ^ (a & (b ^ c))) &+ k1 &+ w0
            a = rotl(a, 30)
            w1 = rotl(w14 ^ w9 ^ w3 ^ w1, 1)
            c = c &+ rotl(d, 5) &+ (b ^ (e & (a ^ b))) &+ k1 &+ w1
            e = rotl(e, 30)
            w2 = rotl(w15 ^ w10 ^ w4 ^ w2, 1)
            b = b &+ rotl(c, 5) &+ (a ^ (d & (e ^ a))) &+ k1 &+ w2
            d = rotl(d, 30)
            w3 = rotl(w0 ^ w11 ^ w5 ^ w3, 1)
            a = a &+ rotl(b, 5) &+ (e ^ (c & (d ^ e))) &+ k1 &+ w3
            c = rotl(c, 30)
            w4 = rotl(w1 ^ w12 ^ w6 ^ w4, 1)
            e = e &+ rotl(a, 5) &+ (b ^ c ^ d) &+ k2 &+ w4
            b = rotl(b, 30)
            w5 = rotl(w2 ^ w13 ^ w7 ^ w5, 1)
            d = d &+ rotl(e, 5) &+ (a ^ b ^ c) &+ k2 &+ w5
            a = rotl(a, 30)
            w6 = rotl(w3 ^ w14 ^ w8 ^ w6, 1)
            c = c &+ rotl(d, 5) &+ (e ^ a ^ b) &+ k2 &+ w6
            e = rotl(e, 30)
            w7 = rotl(w4 ^ w15 ^ w9 ^ w7, 1)
            b = b &+ rotl(c, 5) &+ (d ^ e ^ a) &+ k2 &+ w7
            d = rotl(d, 30)
            w8 = rotl(w5 ^ w0 ^ w10 ^ w8, 1)
            a = a &+ rotl(b, 5) &+ (c ^ d ^ e) &+ k2 &+ w8
            c = rotl(c, 30)
            w9 = rotl(w6 ^ w1 ^ w11 ^ w9, 1)
            e = e &+ rotl(a, 5) &+ (b ^ c ^ d) &+ k2 &+ w9
            b = rotl(b, 30)
            w10 = rotl(w7 ^ w2 ^ w12 ^ w10, 1)
            d = d &+ rotl(e, 5) &+ (a ^ b ^ c) &+ k2 &+ w10
            a = rotl(a, 30)
            w11 = rotl(w8 ^ w3 ^ w13 ^ w11, 1)
            c = c &+ rotl(d, 5) &+ (e ^ a ^ b) &+ k2 &+ w11
            e = rotl(e, 30)
            w12 = rotl(w9 ^ w4 ^ w14 ^ w12, 1)
            b = b &+ rotl(c, 5) &+ (d ^ e ^ a) &+ k2 &+ w12
            d = rotl(d, 30)
            w13 = rotl(w10 ^ w5 ^ w15 ^ w13, 1)
            a = a &+ rotl(b, 5) &+ (c ^ d ^ e) &+ k2 &+ w13
            c = rotl(c, 30)
            w14 = rotl(w11 ^ w6 ^ w0 ^ w14, 1)
            e = e &+ rotl(a, 5) &+ (b ^ c ^ d) &+ k2 &+ w14
            b = rotl(b, 30)
            w15 = rotl(w12 ^ w7 ^ w1 ^ w15, 1)
            d = d &+ rotl(e, 5) &+ (a ^ b ^ c) &+ k2 &+ w15
            a = rotl(a, 30)
            w0 = rotl(w13 ^ w8 ^ w2 ^ w0, 1)
            c = c &+ rotl(d, 5) &+ (e ^ a ^ b) &+ k2 &+ w0
            e = rotl(e, 30)
            w1 = rotl(w14 ^ w9 ^ w3 ^ w1, 1)
            b = b &+ rotl(c, 5) &+ (d ^ e ^ a) &+ k2 &+ w1
            d = rotl(d, 30)
            w2 = rotl(w15 ^ w10 ^ w4 ^ w2, 1)
            a = a &+ rotl(b, 5) &+ (c ^ d ^ e) &+ k2 &+ w2
            c = rotl(c, 30)
            w3 = rotl(w0 ^ w11 ^ w5 ^ w3, 1)
            e = e &+ rotl(a, 5) &+ (b ^ c ^ d) &+ k2 &+ w3
            b = rotl(b, 30)
            w4 = rotl(w1 ^ w12 ^ w6 ^ w4, 1)
            d = d &+ rotl(e, 5) &+ (a ^ b ^ c) &+ k2 &+ w4
            a = rotl(a, 30)
            w5 = rotl(w2 ^ w13 ^ w7 ^ w5, 1)
            c = c &+ rotl(d, 5) &+ (e ^ a ^ b) &+ k2 &+ w5
            e = rotl(e, 30)
            w6 = rotl(w3 ^ w14 ^ w8 ^ w6, 1)
            b = b &+ rotl(c, 5) &+ (d ^ e ^ a) &+ k2 &+ w6
            d = rotl(d, 30)
            w7 = rotl(w4 ^ w15 ^ w9 ^ w7, 1)
            a = a &+ rotl(b, 5) &+ (c ^ d ^ e) &+ k2 &+ w7
            c = rotl(c, 30)
            w8 = rotl(w5 ^ w0 ^ w10 ^ w8, 1)
            e = e &+ rotl(a, 5) &+ ((b & c) | (d & (b | c))) &+ k3 &+ w8
            b = rotl(b, 30)
            w9 = rotl(w6 ^ w1 ^ w11 ^ w9, 1)
            d = d &+ rotl(e, 5) &+ ((a & b) | (c & (a | b))) &+ k3 &+ w9
            a = rotl(a, 30)
            w10 = rotl(w7 ^ w2 ^ w12 ^ w10, 1)
            c = c &+ rotl(d, 5) &+ ((e & a) | (b & (e | a))) &+ k3 &+ w10
            e = rotl(e, 30)
            w11 = rotl(w8 ^ w3 ^ w13 ^ w11, 1)
            b = b &+ rotl(c, 5) &+ ((d & e) | (a & (d | e))) &+ k3 &+ w11
            d = rotl(d, 30)
            w12 = rotl(w9 ^ w4 ^ w14 ^ w12, 1)
            a = a &+ rotl(b, 5) &+ ((c & d) | (e & (c | d))) &+ k3 &+ w12
            c = rotl(c, 30)
            w13 = rotl(w10 ^ w5 ^ w15 ^ w13, 1)
            e = e &+ rotl(a, 5) &+ ((b & c) | (d & (b | c))) &+ k3 &+ w13
            b = rotl(b, 30)
            w14 = rotl(w11 ^ w6 ^ w0 ^ w14, 1)
            d = d &+ rotl(e, 5) &+ ((a & b) | (c & (a | b))) &+ k3 &+ w14
            a = rotl(a, 30)
            w15 = rotl(w12 ^ w7 ^ w1 ^ w15, 1)
            c = c &+ rotl(d, 5) &+ ((e & a) | (b & (e | a))) &+ k3 &+ w15
            e = rotl(e, 30)
            w0 = rotl(w13 ^ w8 ^ w2 ^ w0, 1)
            b = b &+ rotl(c, 5) &+ ((d & e) | (a & (d | e))) &+ k3 &+ w0
            d = rotl(d, 30)
            w1 = rotl(w14 ^ w9 ^ w3 ^ w1, 1)
            a = a &+ rotl(b, 5) &+ ((c & d) | (e & (c | d))) &+ k3 &+ w1
            c = rotl(c, 30)
            w2 = rotl(w15 ^ w10 ^ w4 ^ w2, 1)
            e = e &+ rotl(a, 5) &+ ((b & c) | (d & (b | c))) &+ k3 &+ w2
            b = rotl(b, 30)
            w3 = rotl(w0 ^ w11 ^ w5 ^ w3, 1)
            d = d &+ rotl(e, 5) &+ ((a & b) | (c & (a | b))) &+ k3 &+ w3
            a = rotl(a, 30)
            w4 = rotl(w1 ^ w12 ^ w6 ^ w4, 1)
            c = c &+ rotl(d, 5) &+ ((e & a) | (b & (e | a))) &+ k3 &+ w4
            e = rotl(e, 30)
            w5 = rotl(w2 ^ w13 ^ w7 ^ w5, 1)
            b = b &+ rotl(c, 5) &+ ((d & e) | (a & (d | e))) &+ k3 &+ w5
            d = rotl(d, 30)
            w6 = rotl(w3 ^ w14 ^ w8 ^ w6, 1)
            a = a &+ rotl(b, 5) &+ ((c & d) | (e & (c | d))) &+ k3 &+ w6
            c = rotl(c, 30)
            w7 = rotl(w4 ^ w15 ^ w9 ^ w7, 1)
            e = e &+ rotl(a, 5) &+ ((b & c) | (d & (b | c))) &+ k3 &+ w7
            b = rotl(b, 30)
            w8 = rotl(w5 ^ w0 ^ w10 ^ w8, 1)
            d = d &+ rotl(e, 5) &+ ((a & b) | (c & (a | b))) &+ k3 &+ w8
            a = rotl(a, 30)
            w9 = rotl(w6 ^ w1 ^ w11 ^ w9, 1)
            c = c &+ rotl(d, 5) &+ ((e & a) | (b & (e | a))) &+ k3 &+ w9
            e = rotl(e, 30)
            w10 = rotl(w7 ^ w2 ^ w12 ^ w10, 1)
            b = b &+ rotl(c, 5) &+ ((d & e) | (a & (d | e))) &+ k3 &+ w10
            d = rotl(d, 30)
            w11 = rotl(w8 ^ w3 ^ w13 ^ w11, 1)
            a = a &+ rotl(b, 5) &+ ((c & d) | (e & (c | d))) &+ k3 &+ w11
            c = rotl(c, 30)
            w12 = rotl(w9 ^ w4 ^ w14 ^ w12, 1)
            e = e &+ rotl(a, 5) &+ (b ^ c ^ d) &+ k4 &+ w12
            b = rotl(b, 30)
            w13 = rotl(w10 ^ w5 ^ w15 ^ w13, 1)
            d = d &+ rotl(e, 5) &+ (a ^ b ^ c) &+ k4 &+ w13
            a = rotl(a, 30)
            w14 = rotl(w11 ^ w6 ^ w0 ^ w14, 1)
            c = c &+ rotl(d, 5) &+ (e ^ a ^ b) &+ k4 &+ w14
            e = rotl(e, 30)
            w15 = rotl(w12 ^ w7 ^ w1 ^ w15, 1)
            b = b &+ rotl(c, 5) &+ (d ^ e ^ a) &+ k4 &+ w15
            d = rotl(d, 30)
            w0 = rotl(w13 ^ w8 ^ w2 ^ w0, 1)
            a = a &+ rotl(b, 5) &+ (c ^ d ^ e) &+ k4 &+ w0
            c = rotl(c, 30)
            w1 = rotl(w14 ^ w9 ^ w3 ^ w1, 1)
            e = e &+ rotl(a, 5) &+ (b ^ c ^ d) &+ k4 &+ w1
            b = rotl(b, 30)
            w2 = rotl(w15 ^ w10 ^ w4 ^ w2, 1)
            d = d &+ rotl(e, 5) &+ (a ^ b ^ c) &+ k4 &+ w2
            a = rotl(a, 30)
            w3 = rotl(w0 ^ w11 ^ w5 ^ w3, 1)
            c = c &+ rotl(d, 5) &+ (e ^ a ^ b) &+ k4 &+ w3
            e = rotl(e, 30)
            w4 = rotl(w1 ^ w12 ^ w6 ^ w4, 1)
            b = b &+ rotl(c, 5) &+ (d ^ e ^ a) &+ k4 &+ w4
            d = rotl(d, 30)
            w5 = rotl(w2 ^ w13 ^ w7 ^ w5, 1)
            a = a &+ rotl(b, 5) &+ (c ^ d ^ e) &+ k4 &+ w5
            c = rotl(c, 30)
            w6 = rotl(w3 ^ w14 ^ w8 ^ w6, 1)
            e = e &+ rotl(a, 5) &+ (b ^ c ^ d) &+ k4 &+ w6
            b = rotl(b, 30)
            w7 = rotl(w4 ^ w15 ^ w9 ^ w7, 1)
            d = d &+ rotl(e, 5) &+ (a ^ b ^ c) &+ k4 &+ w7
            a = rotl(a, 30)
            w8 = rotl(w5 ^ w0 ^ w10 ^ w8, 1)
            c = c &+ rotl(d, 5) &+ (e ^ a ^ b) &+ k4 &+ w8
            e = rotl(e, 30)
            w9 = rotl(w6 ^ w1 ^ w11 ^ w9, 1)
            b = b &+ rotl(c, 5) &+ (d ^ e ^ a) &+ k4 &+ w9
            d = rotl(d, 30)
            w10 = rotl(w7 ^ w2 ^ w12 ^ w10, 1)
            a = a &+ rotl(b, 5) &+ (c ^ d ^ e) &+ k4 &+ w10
            c = rotl(c, 30)
            w11 = rotl(w8 ^ w3 ^ w13 ^ w11, 1)
            e = e &+ rotl(a, 5) &+ (b ^ c ^ d) &+ k4 &+ w11
            b = rotl(b, 30)
            w12 = rotl(w9 ^ w4 ^ w14 ^ w12, 1)
            d = d &+ rotl(e, 5) &+ (a ^ b ^ c) &+ k4 &+ w12
            a = rotl(a, 30)
            w13 = rotl(w10 ^ w5 ^ w15 ^ w13, 1)
            c = c &+ rotl(d, 5) &+ (e ^ a ^ b) &+ k4 &+ w13
            e = rotl(e, 30)
            w14 = rotl(w11 ^ w6 ^ w0 ^ w14, 1)
            b = b &+ rotl(c, 5) &+ (d ^ e ^ a) &+ k4 &+ w14
            d = rotl(d, 30)
            w15 = rotl(w12 ^ w7 ^ w1 ^ w15, 1)
            a = a &+ rotl(b, 5) &+ (c ^ d ^ e) &+ k4 &+ w15
            c = rotl(c, 30)
            return (0x67452301 &+ a, 0xEFCDAB89 &+ b, 0x98BADCFE &+ c, 0x10325476 &+ d)
        }
    }
}
