import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// Finds the file references in a store's external-storage columns while reading no more of each value than a
/// reference can hold.
///
/// A save needs them (``CoreDataExternalDataWriter``), and the columns also hold values kept inline, up to the
/// threshold each. Any SQL function of a blob (`length`, `substr`, a comparison) makes SQLite load the whole value,
/// so the rows are listed with `typeof` (which loads nothing) and each value is opened with SQLite's incremental
/// blob API: its size comes from the row's header, and only values short enough to be a reference are read.
///
/// It has its own read-only connection to the store (a writer's store, which has its `-wal` and `-shm` while the
/// writer is open), so it sees what was last committed.
final class CoreDataExternalReferenceScanner {
    private let url: URL
    private let db: OpaquePointer

    init(_ url: URL) throws(StoreError) {
        self.url = url
        var handle: OpaquePointer?
        let rc = sqlite3_open_v2(url.path, &handle, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_close_v2(handle)
            throw .io(url, operation: "opening the store to find its external data references", reason: message)
        }
        sqlite3_busy_timeout(handle, 5000)
        db = handle
    }

    deinit { sqlite3_close_v2(db) }

    private func fail(_ operation: String) -> StoreError {
        .io(url, operation: operation, reason: String(cString: sqlite3_errmsg(db)))
    }

    /// The rows of `columns` whose value is a file reference or not a value Core Data writes (no longer than
    /// ``CoreDataExternalData/longestReference``); inline values are left out.
    func references(in columns: [CoreDataExternalData.Column]) throws(StoreError) -> [CoreDataExternalData.Reference] {
        var out: [CoreDataExternalData.Reference] = []
        for c in columns {
            let sql = "SELECT Z_PK FROM \(CoreDataSQL.quoted(c.table)) "
                + "WHERE typeof(\(CoreDataSQL.quoted(c.column))) = 'blob'"
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let stmt = statement else {
                sqlite3_finalize(statement)
                throw fail(sql)
            }
            defer { sqlite3_finalize(stmt) }
            var blob: OpaquePointer?
            defer { if let blob { sqlite3_blob_close(blob) } }
            while true {
                let step = sqlite3_step(stmt)
                if step == SQLITE_DONE { break }
                guard step == SQLITE_ROW else { throw fail(sql) }
                let pk = sqlite3_column_int64(stmt, 0)
                let opened = blob.map { sqlite3_blob_reopen($0, pk) }
                    ?? sqlite3_blob_open(db, "main", c.table, c.column, pk, 0, &blob)
                guard opened == SQLITE_OK, let handle = blob else {
                    let error = fail("reading \(c.table).\(c.column) of row Z_PK \(pk)")
                    if let b = blob { sqlite3_blob_close(b) }
                    blob = nil
                    throw error
                }
                let size = sqlite3_blob_bytes(handle)
                guard size > 0, Int(size) <= CoreDataExternalData.longestReference else { continue }
                var bytes = [UInt8](repeating: 0, count: Int(size))
                guard sqlite3_blob_read(handle, &bytes, size, 0) == SQLITE_OK else {
                    throw fail("reading \(c.table).\(c.column) of row Z_PK \(pk)")
                }
                guard bytes[0] != CoreDataExternalData.inlineMarker else { continue }
                out.append(.init(column: c, primaryKey: pk, content: CoreDataExternalData.content(of: bytes)))
            }
        }
        return out
    }
}
