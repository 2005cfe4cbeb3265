/// The objects of a context with unsaved changes, in the order they first changed, held strongly until saved or
/// rolled back.
///
/// Membership is kept in the object itself (``ManagedObject/changeSlot``): noting a change, the commonest thing a
/// context does, costs an array append and no hashing. Removed objects leave a hole that the next ``removeAll()``
/// clears.
struct ChangeList {
    private var slots: [ManagedObject?] = []
    /// How many objects are in the list.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// The objects, in the order they first changed.
    var objects: [ManagedObject] { count == slots.count ? slots.map { $0.unsafelyUnwrapped } : slots.compactMap { $0 } }

    /// Adds `object` unless it is already in the list.
    mutating func add(_ object: ManagedObject) {
        guard object.changeSlot == nil else { return }
        object.changeSlot = slots.count
        slots.append(object)
        count += 1
    }

    /// Takes `object` out of the list, if it is in it.
    mutating func remove(_ object: ManagedObject) {
        guard let i = object.changeSlot, i < slots.count, slots[i] === object else { return }
        object.changeSlot = nil
        slots[i] = nil
        count -= 1
    }

    /// Empties the list.
    mutating func removeAll() {
        for o in slots { o?.changeSlot = nil }
        slots.removeAll(keepingCapacity: true)
        count = 0
    }

    /// Whether any object in the list satisfies `predicate`.
    func contains(where predicate: (ManagedObject) throws -> Bool) rethrows -> Bool {
        for case let o? in slots where try predicate(o) { return true }
        return false
    }
}
