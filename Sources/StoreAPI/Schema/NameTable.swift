/// Finds a property's position by its name's 16-byte representation (``StringBits``), with one multiply and
/// usually one comparison: an open-addressed table, at most half full, built once per entity.
///
/// Inserts and reads look a name up for every value they touch, and the caller's names are nearly always short
/// literals, stored inline — the same bytes as the schema's names. A name whose bytes are not in the table (a long
/// name in other storage, or a name that is not there at all) gives `nil`, and the caller then compares strings.
struct NameTable: Sendable {
    private let names: [StringBits]
    /// Position + 1 of the name in each slot; 0 for an empty slot.
    private let slots: [Int32]
    private let shift: UInt64

    init(_ names: [String]) {
        self.names = names.map(StringBits.init)
        var bits = 3
        while (1 << bits) < 2 * names.count { bits += 1 }
        shift = UInt64(64 - bits)
        var slots = [Int32](repeating: 0, count: 1 << bits)
        let mask = (1 << bits) - 1
        for (i, name) in self.names.enumerated() {
            var s = Self.slot(name, shift)
            while slots[s] != 0 { s = (s + 1) & mask }
            slots[s] = Int32(i + 1)
        }
        self.slots = slots
    }

    /// The position of the name with exactly these bytes.
    @inline(__always) func position(_ name: String) -> Int? {
        guard StringBits.areAvailable else { return nil }
        let bits = StringBits(name)
        return slots.withUnsafeBufferPointer { slots in
            let mask = slots.count - 1
            var s = Self.slot(bits, shift)
            while true {
                let entry = Int(slots[s])
                if entry == 0 { return nil }
                if names[entry - 1] == bits { return entry - 1 }
                s = (s + 1) & mask
            }
        }
    }

    @inline(__always) private static func slot(_ bits: StringBits, _ shift: UInt64) -> Int {
        Int(truncatingIfNeeded: ((bits.low &+ bits.high &* 0x9E37_79B9_7F4A_7C15) &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }
}
