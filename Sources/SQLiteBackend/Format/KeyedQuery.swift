/// One query over the rows of a set of keys, written out once in every form ``SQLiteRecordReader/forEachKeyBatch(_:_:)``
/// runs it in: a key range, or an `IN` list of 8, 64 or 512 parameters.
///
/// Fetching records one by one (a context following a relationship to a record it has not seen) runs a query per
/// record, and building its text each time — quoting names, joining the select list — then hashing that fresh
/// string to find the prepared statement cost more than SQLite's own work. Made once with the layout, the text is
/// the same string every time, which the connection's recently-used statements recognise by identity.
struct KeyedQuery: Sendable {
    let range: String
    let list8: String
    let list64: String
    let list512: String

    /// `head` + a condition on `keyColumn` + `tail`.
    init(_ head: String, keyColumn: String, tail: String = "") {
        range = head + keyColumn + " BETWEEN ? AND ?" + tail
        list8 = head + keyColumn + " IN (" + Self.placeholders8 + ")" + tail
        list64 = head + keyColumn + " IN (" + Self.placeholders64 + ")" + tail
        list512 = head + keyColumn + " IN (" + Self.placeholders512 + ")" + tail
    }

    // Made once per process: a layout makes a keyed query per table and relationship storage, and joining the
    // placeholders again for each would make opening a store pay for text that never changes.
    private static let placeholders8 = placeholders(8)
    private static let placeholders64 = placeholders(64)
    private static let placeholders512 = placeholders(512)

    /// The text for one batch.
    func sql(_ batch: SQLiteRecordReader.KeyBatch) -> String {
        switch batch {
        case .range: range
        case .list(_, let size): size <= 8 ? list8 : (size <= 64 ? list64 : list512)
        }
    }

    /// `n` comma-separated `?` (none for 0).
    static func placeholders(_ n: Int) -> String {
        n > 0 ? String(repeating: "?, ", count: n - 1) + "?" : ""
    }
}
