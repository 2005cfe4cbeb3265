import Foundation

/// ``PredicateEvaluator/sort(_:by:)`` for the common case of keys that are numbers, booleans or dates held by the
/// records themselves: each key is read once per record into a flat array and the records' positions are sorted by
/// those, instead of comparing `StoreValue`s through the general ordering at every step.
///
/// The order is exactly ``PredicateEvaluator/sortOrder(_:_:)``'s: `nil` first, then NaN, then by value; descending
/// keys reverse all of it; ties go to the lower primary key. Records whose key values mix integers with doubles
/// (no schema-typed attribute does) are left to the general sort.
struct NumericSort {
    /// One key of one record: its rank (`nil` 0, NaN 1, a number 2) and its value.
    private struct Key {
        var rank: UInt8
        var integer: Int64
        var real: Double
    }

    private let keys: [[Key]]
    /// Per descriptor: whether its values are doubles (else integers), and whether it sorts ascending.
    private let isReal: [Bool]
    private let ascending: [Bool]

    /// The keys of `records`, or `nil` when a descriptor is not an attribute of a record's entity holding numbers,
    /// booleans or dates.
    init?(_ records: [Record], _ descriptors: [SortKey], schema: Schema) {
        var keys: [[Key]] = []
        var isReal: [Bool] = []
        for d in descriptors {
            guard !d.keyPath.contains(".") else { return nil }
            var column: [Key] = []
            column.reserveCapacity(records.count)
            var sawInteger = false, sawReal = false
            // Records come in runs of one entity: the position is looked up again only when the entity changes.
            var lastEntity = ""
            var position = -1
            for r in records {
                if r.entity != lastEntity {
                    guard let e = schema.entity(named: r.entity), let i = e.attributePosition(d.keyPath),
                          Self.sortsByNumber(e.attributes[i].type)
                    else { return nil }
                    lastEntity = r.entity
                    position = i
                }
                guard position < r.attributes.count else { return nil }
                switch r.attributes[position] {
                case .null: column.append(Key(rank: 0, integer: 0, real: 0))
                case .integer16(let v): sawInteger = true; column.append(Key(rank: 2, integer: Int64(v), real: 0))
                case .integer32(let v): sawInteger = true; column.append(Key(rank: 2, integer: Int64(v), real: 0))
                case .integer64(let v): sawInteger = true; column.append(Key(rank: 2, integer: v, real: 0))
                case .boolean(let v): sawInteger = true; column.append(Key(rank: 2, integer: v ? 1 : 0, real: 0))
                case .double(let v): sawReal = true; column.append(Self.real(v))
                case .float(let v): sawReal = true; column.append(Self.real(Double(v)))
                case .date(let v): sawReal = true; column.append(Self.real(v.timeIntervalSinceReferenceDate))
                default: return nil
                }
            }
            if sawInteger && sawReal { return nil }
            keys.append(column)
            isReal.append(sawReal)
        }
        self.keys = keys
        self.isReal = isReal
        ascending = descriptors.map(\.ascending)
    }

    /// Whether values of `type` are numbers to this sort (booleans and dates included).
    static func sortsByNumber(_ type: AttributeType) -> Bool {
        switch type {
        case .integer16, .integer32, .integer64, .boolean, .double, .float, .date: true
        default: false
        }
    }

    private static func real(_ v: Double) -> Key {
        v.isNaN ? Key(rank: 1, integer: 0, real: 0) : Key(rank: 2, integer: 0, real: v)
    }

    /// `records` in the descriptors' order.
    func sorted(_ records: [Record]) -> [Record] {
        var order = Array(records.indices)
        order.sort { a, b in
            for k in keys.indices {
                let x = keys[k][a], y = keys[k][b]
                var c = x.rank == y.rank ? 0 : (x.rank < y.rank ? -1 : 1)
                if c == 0, x.rank == 2 {
                    if isReal[k] {
                        c = x.real < y.real ? -1 : (x.real == y.real ? 0 : 1)
                    } else {
                        c = x.integer < y.integer ? -1 : (x.integer == y.integer ? 0 : 1)
                    }
                }
                if c != 0 { return ascending[k] ? c < 0 : c > 0 }
            }
            return records[a].primaryKey < records[b].primaryKey
        }
        return order.map { records[$0] }
    }
}
