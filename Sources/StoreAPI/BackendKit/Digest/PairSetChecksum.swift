/// An order-independent summary of a set of key pairs: their count and the wrapping sum of a 64-bit mix of each.
///
/// A bulk load that writes a many-to-many join table from one side only keeps the other side's pairs as one of
/// these and compares it with the table's rows at the end: two sides that disagree fail the load instead of being
/// merged silently. Two different sets with the same count give the same sum with a probability of about 2⁻⁶⁴.
@_spi(BackendKit) public struct PairSetChecksum: Sendable, Hashable {
    /// The number of pairs added.
    public var count: Int { pairs }
    /// The wrapping sum of the pairs' mixes.
    public var sum: UInt64 { total }
    // Inlinable storage: a bulk load adds every link of a join table, from another module.
    @usableFromInline var pairs = 0
    @usableFromInline var total: UInt64 = 0

    /// An empty set.
    public init() {}

    /// Adds the pair `(a, b)`; `(b, a)` is a different pair.
    @inlinable public mutating func add(_ a: Int64, _ b: Int64) {
        pairs += 1
        total &+= Self.mix(a, b)
    }

    /// A 64-bit mix of a pair (two rounds of SplitMix64's finaliser).
    @inlinable static func mix(_ a: Int64, _ b: Int64) -> UInt64 {
        finalize(UInt64(bitPattern: a) &+ 0x9E37_79B9_7F4A_7C15 &* finalize(UInt64(bitPattern: b) ^ 0xD1B5_4A32_D192_ED03))
    }

    @inlinable static func finalize(_ x: UInt64) -> UInt64 {
        var z = x
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
