import Foundation
@_spi(BackendKit) import StoreAPI

/// Finds fetches a uniqueness index can answer: an equality (or `IN`) on every attribute of a constraint that
/// covers the fetched entity, alone or AND-ed with other conditions. The index then yields the only candidates, and
/// the full predicate is still evaluated on them, so the plan only has to return a superset of the matches.
///
/// Index keys hold stored values exactly, while predicates compare numerically; a constant is therefore only used
/// when the stored values it equals can be listed exactly (a string, an integer for an integer attribute, a UUID,
/// …). Anything else (floating-point and decimal attributes, `[c]`/`[d]` options, nil) falls back to a scan.
enum IndexPlanner {
    struct Plan {
        let index: UniqueIndex
        /// Index keys to look up.
        let keys: [[UInt8]]
    }

    /// The most index lookups a plan may make (the product of the `IN` lists).
    static let maxLookups = 4096

    static func plan(_ predicate: FetchPredicate?, entity: Entity, layout: LMDBLayout) -> Plan? {
        guard let predicate, !layout.indexes.isEmpty else { return nil }
        var equalities: [String: [StoreValue]] = [:]
        collect(predicate, into: &equalities)
        if equalities.isEmpty { return nil }
        let covering = Set([entity.name] + entity.ancestorNames)
        for index in layout.indexes where covering.contains(index.owner) {
            guard let keys = keys(for: index, equalities: equalities, entity: entity) else { continue }
            return Plan(index: index, keys: keys)
        }
        return nil
    }

    /// Gathers `attribute == constant` and `attribute IN list` conditions from the top-level conjunction.
    private static func collect(_ predicate: FetchPredicate, into out: inout [String: [StoreValue]]) {
        switch predicate {
        case .and(let parts):
            for p in parts { collect(p, into: &out) }
        case .comparison(.keyPath(let path), .equal, .constant(let v), let options) where path.count == 1 && options.isEmpty:
            out[path[0]] = firstCondition(out[path[0]], [v])
        case .comparison(.constant(let v), .equal, .keyPath(let path), let options) where path.count == 1 && options.isEmpty:
            out[path[0]] = firstCondition(out[path[0]], [v])
        case .comparison(.keyPath(let path), .in, .list(let vs), let options) where path.count == 1 && options.isEmpty:
            out[path[0]] = firstCondition(out[path[0]], vs)
        default:
            break
        }
    }

    /// Two conditions on one attribute: keep the first list (either is a valid superset of the matches).
    private static func firstCondition(_ existing: [StoreValue]?, _ new: [StoreValue]) -> [StoreValue] {
        existing ?? new
    }

    private static func keys(for index: UniqueIndex, equalities: [String: [StoreValue]], entity: Entity) -> [[UInt8]]? {
        var columns: [[StoreValue]] = []
        var product = 1
        for name in index.attributes {
            guard let constants = equalities[name], let attribute = entity.attribute(name) else { return nil }
            var stored: [StoreValue] = []
            for c in constants {
                guard let exact = storedValues(equalTo: c, type: attribute.type) else { return nil }
                stored.append(contentsOf: exact)
            }
            product *= max(stored.count, 1)
            guard product <= maxLookups else { return nil }
            columns.append(stored)
        }
        var tuples: [[StoreValue]] = [[]]
        for column in columns {
            tuples = tuples.flatMap { t in column.map { t + [$0] } }
        }
        return Array(Set(tuples.compactMap { RecordCodec.indexKey($0) }))
    }

    /// Every stored value of an attribute of `type` that predicate equality (``PredicateEvaluator/equal(_:_:_:)``)
    /// finds equal to `constant`; `nil` when that set cannot be listed exactly.
    static func storedValues(equalTo constant: StoreValue, type: AttributeType) -> [StoreValue]? {
        switch type {
        case .string:
            if case .string = constant { return [constant] }
            return nil
        case .integer16, .integer32, .integer64, .boolean:
            let integer: Int64
            if let i = constant.int64Value {
                integer = i
            } else if case .double(let d) = constant {
                guard d.isFinite, abs(d) <= 9_007_199_254_740_992 else { return nil }
                guard let i = Int64(exactly: d) else { return [] }
                integer = i
            } else {
                return nil
            }
            switch type {
            case .integer16: return Int16(exactly: integer).map { [.integer16($0)] } ?? []
            case .integer32: return Int32(exactly: integer).map { [.integer32($0)] } ?? []
            case .integer64: return [.integer64(integer)]
            default: return integer == 0 || integer == 1 ? [.boolean(integer == 1)] : []
            }
        case .uuid:
            if case .uuid = constant { return [constant] }
            return nil
        case .uri:
            if case .uri = constant { return [constant] }
            return nil
        case .binary, .transformable:
            if case .binary = constant { return [constant] }
            return nil
        case .double, .float, .decimal, .date:
            return nil
        }
    }
}
