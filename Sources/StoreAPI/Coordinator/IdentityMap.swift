import Foundation

/// A context's identity map: the one live ``ManagedObject`` for each record, found by key space (a store and an
/// entity hierarchy) and primary key. Objects are not retained (see ``StoreContext/registered``).
///
/// Why not a `Dictionary<ObjectKey, …>`: every insert registers an object and every object that goes away
/// unregisters itself, and hashing a key with SipHash, comparing its hierarchy's name and its store's UUID, and
/// deleting from a Swift dictionary was a large share of an insert through a context. Here a key space is a small number given once per store and hierarchy, and keys are found by
/// Fibonacci hashing of the primary key into an open-addressed table with linear probing (primary keys are
/// mostly consecutive, which that spreads evenly). Deleting shifts later entries of a probe run back, so the table
/// needs no tombstones.
final class IdentityMap {
    private struct Slot {
        /// -1 when the slot is empty.
        var space: Int32
        var primaryKey: Int64
        var object: Unmanaged<ManagedObject>?
    }

    private var slots: UnsafeMutablePointer<Slot>
    /// The table has `1 << bits` slots.
    private var bits: Int
    private(set) var count = 0
    /// The key spaces handed out: their index is the space number.
    private var spaces: [(store: UUID, root: String)] = []

    init() {
        bits = 6
        slots = Self.allocate(1 << bits)
    }

    deinit {
        slots.deallocate()
    }

    private static func allocate(_ capacity: Int) -> UnsafeMutablePointer<Slot> {
        let p = UnsafeMutablePointer<Slot>.allocate(capacity: capacity)
        p.initialize(repeating: Slot(space: -1, primaryKey: 0, object: nil), count: capacity)
        return p
    }

    private var mask: Int { (1 << bits) - 1 }

    @inline(__always)
    private func home(_ space: Int32, _ primaryKey: Int64) -> Int {
        let mixed = UInt64(bitPattern: primaryKey) &+ (UInt64(UInt32(bitPattern: space)) << 48)
        return Int(truncatingIfNeeded: (mixed &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - bits))
    }

    // MARK: Key spaces

    /// The number of the key space of hierarchy `root` in `store`, made on first use.
    func space(store: UUID, root: String) -> Int32 {
        if let s = existingSpace(store: store, root: root) { return s }
        spaces.append((store, root))
        return Int32(spaces.count - 1)
    }

    /// The number of the key space, or `nil` if no object of it was ever registered.
    func existingSpace(store: UUID, root: String) -> Int32? {
        for (i, s) in spaces.enumerated() where s.root == root && s.store == store { return Int32(i) }
        return nil
    }

    // MARK: Objects

    /// The object registered under the key, if any.
    func object(space: Int32, primaryKey: Int64) -> ManagedObject? {
        var i = home(space, primaryKey)
        while true {
            let slot = slots[i]
            if slot.space < 0 { return nil }
            if slot.primaryKey == primaryKey && slot.space == space { return slot.object?.takeUnretainedValue() }
            i = (i + 1) & mask
        }
    }

    /// Registers `object` under the key, replacing whatever was registered there.
    func set(_ object: ManagedObject, space: Int32, primaryKey: Int64) {
        if (count + 1) * 2 > (1 << bits) { grow() }
        var i = home(space, primaryKey)
        while slots[i].space >= 0 {
            if slots[i].primaryKey == primaryKey && slots[i].space == space {
                slots[i].object = Unmanaged.passUnretained(object)
                return
            }
            i = (i + 1) & mask
        }
        slots[i] = Slot(space: space, primaryKey: primaryKey, object: Unmanaged.passUnretained(object))
        count += 1
    }

    /// Removes the entry under the key if it is `object` (a reset context may hold a newer object there).
    func remove(_ object: ManagedObject, space: Int32, primaryKey: Int64) {
        var i = home(space, primaryKey)
        while true {
            let slot = slots[i]
            if slot.space < 0 { return }
            if slot.primaryKey == primaryKey && slot.space == space {
                guard slot.object?.toOpaque() == Unmanaged.passUnretained(object).toOpaque() else { return }
                removeSlot(at: i)
                return
            }
            i = (i + 1) & mask
        }
    }

    /// Empties slot `i` and moves back the entries after it that probing would otherwise no longer reach.
    private func removeSlot(at start: Int) {
        var hole = start
        var i = start
        while true {
            i = (i + 1) & mask
            let slot = slots[i]
            if slot.space < 0 { break }
            let h = home(slot.space, slot.primaryKey)
            // The entry may move into the hole when its home is not in the cyclic range (hole, i].
            let reachable = hole <= i ? (h <= hole || h > i) : (h <= hole && h > i)
            if reachable {
                slots[hole] = slot
                hole = i
            }
        }
        slots[hole] = Slot(space: -1, primaryKey: 0, object: nil)
        count -= 1
    }

    private func grow() {
        let old = slots
        let oldCapacity = 1 << bits
        bits += 1
        slots = Self.allocate(1 << bits)
        for j in 0..<oldCapacity where old[j].space >= 0 {
            var i = home(old[j].space, old[j].primaryKey)
            while slots[i].space >= 0 { i = (i + 1) & mask }
            slots[i] = old[j]
        }
        old.deallocate()
    }

    /// Calls `body` with every registered object (which must not change the map).
    func forEach(_ body: (ManagedObject) -> Void) {
        for i in 0..<(1 << bits) {
            if slots[i].space >= 0, let o = slots[i].object { body(o.takeUnretainedValue()) }
        }
    }

    /// Forgets every entry, keeping the key spaces and the table's size.
    func removeAll() {
        guard count > 0 else { return }
        slots.update(repeating: Slot(space: -1, primaryKey: 0, object: nil), count: 1 << bits)
        count = 0
    }
}
