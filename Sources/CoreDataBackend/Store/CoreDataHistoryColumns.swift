@_spi(BackendKit) import StoreAPI

/// `ACHANGE.ZCOLUMNS`, the changed properties of an update, as a bitmap.
///
/// [unverified] The layout is a guess, kept here and nowhere else: no corpus store has an update in its history
/// (their `ZCOLUMNS` are all NULL, inserts). Bit `n` (byte `n / 8`, least significant bit first) stands for the
/// entity's `n`-th property, inherited ones included, in the order of their names (Core Data keeps an entity's
/// properties by name). The writer and the reader use the same guess, so a store written here reads back the same
/// changed keys; a bitmap Core Data wrote may name other properties, and bits past the last property are ignored.
enum CoreDataHistoryColumns {
    /// The entity's property names in bit order.
    static func properties(of entity: Entity) -> [String] {
        (entity.attributes.map(\.name) + entity.relationships.map(\.name)).sorted()
    }

    /// The bitmap of `changed` (property names) of `entity`; `nil` when none is a property of it.
    static func bitmap(_ changed: [String], of entity: Entity) -> [UInt8]? {
        let names = properties(of: entity)
        var bytes = [UInt8](repeating: 0, count: (names.count + 7) / 8)
        var any = false
        for key in changed {
            guard let n = names.firstIndex(of: key) else { continue }
            bytes[n / 8] |= 1 << UInt8(n % 8)
            any = true
        }
        return any ? bytes : nil
    }

    /// The property names `bitmap` sets, in bit order.
    static func names(_ bitmap: [UInt8], of entity: Entity) -> [String] {
        let names = properties(of: entity)
        return names.indices.filter { $0 / 8 < bitmap.count && bitmap[$0 / 8] & (1 << UInt8($0 % 8)) != 0 }.map { names[$0] }
    }
}
