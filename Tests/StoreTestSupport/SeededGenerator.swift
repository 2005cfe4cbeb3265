/// A seeded random generator (SplitMix64): the same seed gives the same numbers on every machine and toolchain.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<n` (`0` when `n <= 1`), without the standard library's sampling algorithms (which may change).
    public mutating func below(_ n: Int) -> Int {
        guard n > 1 else { return 0 }
        return Int(next().multipliedFullWidth(by: UInt64(n)).high)
    }

    /// One element of a non-empty array.
    public mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
}
