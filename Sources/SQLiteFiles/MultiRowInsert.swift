/// A multi-row `INSERT`, as the SQLite and Core Data backends write runs of rows: one statement per row runs the
/// statement's set-up again and seeks each row's place from the root of the table and its indexes, where one
/// statement of many rows keeps its cursors where the last row went.
public enum MultiRowInsert {
    /// The most parameters a statement is given: SQLite's smallest default limit (raised to 32,766 in 3.32).
    public static let parameterLimit = 999

    /// The rows of `parametersPerRow` parameters one statement inserts: as many as stay within
    /// ``parameterLimit``, at most 64 (more saved nothing measurable); 1 when a row alone has too many to batch.
    public static func rows(parametersPerRow: Int) -> Int {
        max(1, min(64, parameterLimit / max(1, parametersPerRow)))
    }

    /// `head` (`INSERT INTO t (…) VALUES `), then `rows` copies of `row` (`(?, ?, …)`) separated by commas, then
    /// `tail` (a conflict clause, say).
    public static func sql(head: String, row: String, rows: Int, tail: String = "") -> String {
        head + repeatElement(row, count: rows).joined(separator: ", ") + tail
    }
}
