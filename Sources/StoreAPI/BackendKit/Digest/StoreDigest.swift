/// FIPS 180-4 SHA-256, for stable digests: version hashes, and backends' index keys or names that must be short;
/// SHA-1, for name-based UUIDs; and SHA-512, for Core Data's model digest (`NSStoreModelVersionHashesDigest`).
///
/// StoreAPI stays free of C and crypto dependencies (swift-crypto would pull BoringSSL into every backend's build
/// for the few short inputs hashed here), so the digest is computed here. Not meant for bulk data.
@_spi(BackendKit) public enum StoreDigest {
    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    /// The 32-byte SHA-256 digest of `message`.
    public static func sha256(_ message: [UInt8]) -> [UInt8] {
        // The schedule in one buffer and the state in locals, read through pointers: an array per digest, and an
        // index check per word, cost more than the rounds for the short inputs hashed here (every store open
        // hashes each entity and property of its schema).
        var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) =
            (0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19)
        let data = padded(message)
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            k.withUnsafeBufferPointer { k in
                data.withUnsafeBytes { bytes in
                    for chunk in stride(from: 0, to: bytes.count, by: 64) {
                        for i in 0..<16 {
                            w[i] = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: chunk + i * 4, as: UInt32.self))
                        }
                        for i in 16..<64 {
                            let s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
                            let s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
                            w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
                        }
                        var (a, b, c, d, e, f, g, hh) = state
                        for i in 0..<64 {
                            let s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
                            let ch = (e & f) ^ (~e & g)
                            let t1 = hh &+ s1 &+ ch &+ k[i] &+ w[i]
                            let s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
                            let maj = (a & b) ^ (a & c) ^ (b & c)
                            let t2 = s0 &+ maj
                            hh = g; g = f; f = e; e = d &+ t1; d = c; c = b; b = a; a = t1 &+ t2
                        }
                        state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d,
                                 state.4 &+ e, state.5 &+ f, state.6 &+ g, state.7 &+ hh)
                    }
                }
            }
        }
        var digest = (state.0.bigEndian, state.1.bigEndian, state.2.bigEndian, state.3.bigEndian,
                      state.4.bigEndian, state.5.bigEndian, state.6.bigEndian, state.7.bigEndian)
        return withUnsafeBytes(of: &digest) { Array($0) }
    }

    /// The 20-byte SHA-1 digest of `message` (FIPS 180-4), for name-based (version-5) UUIDs where RFC 4122
    /// requires it; not for security.
    public static func sha1(_ message: [UInt8]) -> [UInt8] {
        var h: [UInt32] = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0]
        var w = [UInt32](repeating: 0, count: 80)
        let data = padded(message)
        for chunk in stride(from: 0, to: data.count, by: 64) {
            loadBlock(data, at: chunk, into: &w)
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
        return bigEndianBytes(h)
    }

    private static let k512: [UInt64] = [
        0x428a2f98d728ae22, 0x7137449123ef65cd, 0xb5c0fbcfec4d3b2f, 0xe9b5dba58189dbbc, 0x3956c25bf348b538,
        0x59f111f1b605d019, 0x923f82a4af194f9b, 0xab1c5ed5da6d8118, 0xd807aa98a3030242, 0x12835b0145706fbe,
        0x243185be4ee4b28c, 0x550c7dc3d5ffb4e2, 0x72be5d74f27b896f, 0x80deb1fe3b1696b1, 0x9bdc06a725c71235,
        0xc19bf174cf692694, 0xe49b69c19ef14ad2, 0xefbe4786384f25e3, 0x0fc19dc68b8cd5b5, 0x240ca1cc77ac9c65,
        0x2de92c6f592b0275, 0x4a7484aa6ea6e483, 0x5cb0a9dcbd41fbd4, 0x76f988da831153b5, 0x983e5152ee66dfab,
        0xa831c66d2db43210, 0xb00327c898fb213f, 0xbf597fc7beef0ee4, 0xc6e00bf33da88fc2, 0xd5a79147930aa725,
        0x06ca6351e003826f, 0x142929670a0e6e70, 0x27b70a8546d22ffc, 0x2e1b21385c26c926, 0x4d2c6dfc5ac42aed,
        0x53380d139d95b3df, 0x650a73548baf63de, 0x766a0abb3c77b2a8, 0x81c2c92e47edaee6, 0x92722c851482353b,
        0xa2bfe8a14cf10364, 0xa81a664bbc423001, 0xc24b8b70d0f89791, 0xc76c51a30654be30, 0xd192e819d6ef5218,
        0xd69906245565a910, 0xf40e35855771202a, 0x106aa07032bbd1b8, 0x19a4c116b8d2d0c8, 0x1e376c085141ab53,
        0x2748774cdf8eeb99, 0x34b0bcb5e19b48a8, 0x391c0cb3c5c95a63, 0x4ed8aa4ae3418acb, 0x5b9cca4f7763e373,
        0x682e6ff3d6b2b8a3, 0x748f82ee5defb2fc, 0x78a5636f43172f60, 0x84c87814a1f0ab72, 0x8cc702081a6439ec,
        0x90befffa23631e28, 0xa4506cebde82bde9, 0xbef9a3f7b2c67915, 0xc67178f2e372532b, 0xca273eceea26619c,
        0xd186b8c721c0c207, 0xeada7dd6cde0eb1e, 0xf57d4f7fee6ed178, 0x06f067aa72176fba, 0x0a637dc5a2c898a6,
        0x113f9804bef90dae, 0x1b710b35131c471b, 0x28db77f523047d84, 0x32caab7b40c72493, 0x3c9ebe0a15c9bebc,
        0x431d67c49c100d4c, 0x4cc5d4becb3e42b6, 0x597f299cfc657e2a, 0x5fcb6fab3ad6faec, 0x6c44198c4a475817,
    ]

    /// The 64-byte SHA-512 digest of `message` (FIPS 180-4).
    public static func sha512(_ message: [UInt8]) -> [UInt8] {
        var h: [UInt64] = [
            0x6a09e667f3bcc908, 0xbb67ae8584caa73b, 0x3c6ef372fe94f82b, 0xa54ff53a5f1d36f1,
            0x510e527fade682d1, 0x9b05688c2b3e6c1f, 0x1f83d9abfb41bd6b, 0x5be0cd19137e2179,
        ]
        // SHA-512 frames its input like SHA-256 but in 128-byte blocks with a 128-bit length; a message here is
        // far below 2^61 bytes, so the length's upper 64 bits are zero.
        var data = message
        let bitLength = UInt64(message.count) &* 8
        data.append(0x80)
        while data.count % 128 != 112 { data.append(0) }
        data.append(contentsOf: [UInt8](repeating: 0, count: 8))
        for i in (0..<8).reversed() { data.append(UInt8(truncatingIfNeeded: bitLength >> (UInt64(i) * 8))) }
        var w = [UInt64](repeating: 0, count: 80)
        for chunk in stride(from: 0, to: data.count, by: 128) {
            for i in 0..<16 {
                var v: UInt64 = 0
                for j in 0..<8 { v = v << 8 | UInt64(data[chunk + i * 8 + j]) }
                w[i] = v
            }
            for i in 16..<80 {
                let s0 = rotr64(w[i - 15], 1) ^ rotr64(w[i - 15], 8) ^ (w[i - 15] >> 7)
                let s1 = rotr64(w[i - 2], 19) ^ rotr64(w[i - 2], 61) ^ (w[i - 2] >> 6)
                w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
            }
            var (a, b, c, d, e, f, g, hh) = (h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7])
            for i in 0..<80 {
                let s1 = rotr64(e, 14) ^ rotr64(e, 18) ^ rotr64(e, 41)
                let ch = (e & f) ^ (~e & g)
                let t1 = hh &+ s1 &+ ch &+ k512[i] &+ w[i]
                let s0 = rotr64(a, 28) ^ rotr64(a, 34) ^ rotr64(a, 39)
                let maj = (a & b) ^ (a & c) ^ (b & c)
                let t2 = s0 &+ maj
                hh = g; g = f; f = e; e = d &+ t1; d = c; c = b; b = a; a = t1 &+ t2
            }
            h[0] = h[0] &+ a; h[1] = h[1] &+ b; h[2] = h[2] &+ c; h[3] = h[3] &+ d
            h[4] = h[4] &+ e; h[5] = h[5] &+ f; h[6] = h[6] &+ g; h[7] = h[7] &+ hh
        }
        return h.flatMap { v in (0..<8).map { UInt8(truncatingIfNeeded: v >> (56 - UInt64($0) * 8)) } }
    }

    private static func rotr64(_ x: UInt64, _ n: UInt64) -> UInt64 { (x >> n) | (x << (64 - n)) }

    // MARK: Merkle–Damgård framing, shared by SHA-1 and SHA-256

    /// `message` padded as both digests require (a 1 bit, zeros, the bit length as a big-endian 64-bit number) to
    /// whole 64-byte blocks.
    private static func padded(_ message: [UInt8]) -> [UInt8] {
        // Sized once: version hashes digest many short inputs on every store open.
        let zeros = (119 - message.count % 64) % 64
        var data: [UInt8] = []
        data.reserveCapacity(message.count + 1 + zeros + 8)
        data += message
        let bitLength = UInt64(message.count) &* 8
        data.append(0x80)
        data.append(contentsOf: repeatElement(0, count: zeros))
        for i in (0..<8).reversed() { data.append(UInt8(truncatingIfNeeded: bitLength >> (UInt64(i) * 8))) }
        return data
    }

    /// The sixteen big-endian words of the block at `chunk` into `w[0..<16]`.
    private static func loadBlock(_ data: [UInt8], at chunk: Int, into w: inout [UInt32]) {
        for i in 0..<16 {
            let b = chunk + i * 4
            w[i] = UInt32(data[b]) << 24 | UInt32(data[b + 1]) << 16 | UInt32(data[b + 2]) << 8 | UInt32(data[b + 3])
        }
    }

    /// The digest words as big-endian bytes.
    private static func bigEndianBytes(_ h: [UInt32]) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: h.count * 4) { buffer, count in
            for (i, v) in h.enumerated() {
                for j in 0..<4 { buffer[i * 4 + j] = UInt8(truncatingIfNeeded: v >> (24 - UInt32(j) * 8)) }
            }
            count = h.count * 4
        }
    }

    /// The SHA-256 digest of `message` as 64 lowercase hex digits.
    public static func sha256Hex(_ message: [UInt8]) -> String {
        // Digits written straight into the string's storage, not a padded String per byte joined: every store open
        // computes the version hashes, so this is on the open path.
        let digest = sha256(message)
        return String(unsafeUninitializedCapacity: digest.count * 2) { buffer in
            for (i, byte) in digest.enumerated() {
                buffer[2 * i] = hexDigits[Int(byte >> 4)]
                buffer[2 * i + 1] = hexDigits[Int(byte & 0x0F)]
            }
            return digest.count * 2
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }

    private static func rotl(_ x: UInt32, _ n: UInt32) -> UInt32 { (x << n) | (x >> (32 - n)) }
}
