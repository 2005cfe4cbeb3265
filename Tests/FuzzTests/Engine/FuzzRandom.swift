import StoreTestSupport

/// The fuzz engine's helpers on the shared SplitMix64 generator, whose results do not depend on the standard
/// library's sampling algorithms, so a seed and an input index name the same input on every machine and toolchain.
extension SeededGenerator {
    /// The generator for input `index` of `target`: every input can be regenerated on its own (replay).
    init(seed: UInt64, target: String, index: Int) {
        self.init(seed: seed ^ Self.fnv1a(target) ^ (UInt64(bitPattern: Int64(index)) &* 0x9E37_79B9_7F4A_7C15))
        _ = next()
    }

    /// A number in `range`.
    mutating func inRange(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + below(range.count)
    }

    /// `true` with probability `percent`/100.
    mutating func percent(_ percent: Int) -> Bool { below(100) < percent }

    /// A length biased towards small values (most mutations touch a few bytes; some touch many).
    mutating func length(max: Int) -> Int {
        guard max > 1 else { return 1 }
        switch below(10) {
        case 0..<6: return 1 + below(min(max, 8))
        case 6..<9: return 1 + below(min(max, 64))
        default: return 1 + below(max)
        }
    }

    /// FNV-1a of the UTF-8 bytes (`Hasher` is seeded per process, so it cannot name inputs across runs).
    static func fnv1a(_ s: String) -> UInt64 {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        for b in s.utf8 {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01B3
        }
        return h
    }
}
