import Foundation

/// A hybrid logical clock stamp: wall time in milliseconds, a counter that orders stamps within one millisecond, and
/// the peer that made it.
///
/// Stamps order by wall time, then counter, then peer ID, so two peers that change the same value in the same
/// millisecond still agree on which change wins. A peer's clock never goes backwards and always moves past every
/// stamp it has received, so a change made after seeing another change is always ordered after it, whatever the
/// two machines' wall clocks say.
struct HybridLogicalClock: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// Milliseconds since 1970.
    var wall: Int64
    /// Orders stamps made in the same millisecond.
    var counter: Int32
    /// The peer that made the stamp; breaks ties.
    var peer: UUID

    /// Creates a stamp.
    init(wall: Int64, counter: Int32, peer: UUID) {
        self.wall = wall
        self.counter = counter
        self.peer = peer
    }

    /// Orders by wall time, counter, then peer ID (its string form, the same on every platform). The bytes are
    /// compared rather than the strings: the string is the bytes in order as upper-case hex digits with dashes at
    /// fixed places, so the two orders agree, and comparing bytes makes no string per comparison.
    static func < (a: HybridLogicalClock, b: HybridLogicalClock) -> Bool {
        if a.wall != b.wall { return a.wall < b.wall }
        if a.counter != b.counter { return a.counter < b.counter }
        return withUnsafeBytes(of: a.peer.uuid) { x in
            withUnsafeBytes(of: b.peer.uuid) { y in x.lexicographicallyPrecedes(y) }
        }
    }

    /// The next stamp of `peer` after `self`: now, or later than every stamp seen so far.
    func tick(now: Date, peer: UUID) -> HybridLogicalClock {
        let ms = Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
        if ms > wall { return HybridLogicalClock(wall: ms, counter: 0, peer: peer) }
        return HybridLogicalClock(wall: wall, counter: counter &+ 1, peer: peer)
    }

    /// This clock moved past a received stamp, so the stamps it makes next order after it.
    func receiving(_ other: HybridLogicalClock) -> HybridLogicalClock {
        other > self ? HybridLogicalClock(wall: other.wall, counter: other.counter, peer: peer) : self
    }

    /// The compact text form `wall.counter.peer`.
    var description: String { "\(wall).\(counter).\(peer.uuidString)" }

    /// Parses ``description``; `nil` for anything else.
    init?(text: String) {
        let parts = text.split(separator: ".", maxSplits: 2)
        guard parts.count == 3, let w = Int64(parts[0]), let c = Int32(parts[1]), let p = UUID(uuidString: String(parts[2]))
        else { return nil }
        self.init(wall: w, counter: c, peer: p)
    }

    /// Encodes as the compact text form, which keeps sync state and change files small.
    func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }

    /// Decodes the compact text form.
    init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        let text = try c.decode(String.self)
        guard let clock = HybridLogicalClock(text: text) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "'\(text)' is not a clock stamp")
        }
        self = clock
    }

    /// The stamp before every other.
    static let zero = HybridLogicalClock(wall: 0, counter: 0, peer: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
}
