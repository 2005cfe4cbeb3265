import CSQLite

extension SQLiteStoreBackend {
    /// Turns off SQLite's process-wide memory statistics, which every allocation SQLite makes updates under one
    /// global mutex. Returns whether it took effect.
    ///
    /// Call it first thing in a process that uses SQLite heavily (storectl does): SQLite accepts the setting only
    /// before it is initialised — before anything in the process opens a database — and otherwise returns an
    /// error, which leaves everything as it was (then this returns `false`). The statistics feed only
    /// `sqlite3_status` and the soft heap limit, which the backend does not use.
    ///
    /// Why it matters: SQLite's own recommended build turns them off (`SQLITE_DEFAULT_MEMSTATUS=0`), but the
    /// system library on Linux distributions keeps them on and is also built without lookaside memory, so each of
    /// the several allocations per executed statement pays the mutex, a cost every statement of a conversion into
    /// SQLite shares.
    @discardableResult
    public static func disableMemoryStatistics() -> Bool {
        storeapi_sqlite3_config_memstatus(0) == SQLITE_OK
    }
}
