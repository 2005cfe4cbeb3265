import Foundation
@_spi(BackendKit) import StoreAPI

/// Sort descriptors as an SQL `ORDER BY`, for the descriptors whose SQL order is exactly the in-memory
/// comparator's (``PredicateEvaluator/sort(_:by:)``): then a sorted fetch, with its offset and limit, runs in SQL
/// and reads only the rows it returns.
///
/// Exact means, for every value the record reader accepts (a value it refuses fails the fetch either way):
/// - integers: stored INTEGER, or REAL with an integral value; SQLite compares the two numerically and exactly.
/// - doubles and dates: compared as the reader makes them, `CAST(… AS REAL)` (an INTEGER becomes the same nearest
///   double); a NaN cannot be stored (SQLite binds it as NULL).
/// - Booleans: any non-zero value is `true`, so the column is compared as `(column <> 0)`.
/// - NULL first ascending and last descending, ties by `Z_PK` ascending, as the comparator does.
///
/// Strings are left to the comparator: the reader turns INTEGER, REAL and BLOB values of a string column (and text
/// that is not valid UTF-8) into strings, which SQLite would order by storage class. Floats (rounded to `Float`
/// by the reader), decimals (REAL, INTEGER or TEXT), UUIDs, URIs, binary data and key paths through relationships
/// are too.
enum CoreDataSortSQL {
    /// The `ORDER BY` terms for `descriptors` on the rows of `ep`'s table, or `nil` when one is not exact.
    static func orderBy(_ descriptors: [SortKey], _ ep: CoreDataReadPlan.EntityPlan) -> String? {
        var terms: [String] = []
        for d in descriptors {
            guard !d.keyPath.contains("."), let i = ep.entity.attributeIndex(d.keyPath), i < ep.attributeColumns.count,
                let column = ep.attributeColumns[i]
            else { return nil }
            let q = CoreDataSQL.quoted(column.name)
            let term: String
            switch ep.entity.attributes[i].type {
            case .integer16, .integer32, .integer64: term = q
            case .double, .date: term = "CAST(\(q) AS REAL)"
            case .boolean: term = "(\(q) <> 0)"
            default: return nil
            }
            terms.append(term + (d.ascending ? " ASC" : " DESC"))
        }
        return (terms + ["Z_PK"]).joined(separator: ", ")
    }
}
