import Foundation

/// A store that reads pages of records straight into a ``RecordPage``, its values never becoming Swift objects.
///
/// The transfer engine uses it when the destination is a ``PageInsertingStore``: a conversion then moves bytes,
/// not records — no string, data, decimal, array or record is made and released per value. A page must hold
/// exactly what ``PersistentStore/scan(entity:after:limit:)`` returns for the same arguments (both sides of every
/// relationship, in order), with every value checked as a scan checks it: a store may not pass on a value it
/// would refuse to read.
@_spi(BackendKit) public protocol PageScanningStore: PersistentStore {
    /// The records of exactly `entity` whose primary key is greater than `primaryKey`, in key order, at most
    /// `limit` of them, as one page.
    func scanPage(entity: String, after primaryKey: Int64?, limit: Int) throws -> RecordPage
}

/// A store that inserts a ``RecordPage`` as a save inserting the same records would, without decoding it into
/// records first.
///
/// The insert is one transaction, checks every value against the entity as a save does (a page that does not fit
/// is refused with the save's error), and keeps every index a save keeps.
@_spi(BackendKit) public protocol PageInsertingStore: PersistentStore {
    /// Inserts every record of `page`.
    func insert(_ page: RecordPage) throws

    /// Inserts the records of `count` pages in one transaction: every record of every page, or — when a page does
    /// not fit, a record is already stored, or `page` throws — none of them.
    ///
    /// `page(i)` is called for each `i` in `0..<count`, in order, while the store's write transaction is open, so
    /// it must not use the store. A store that restarts its transaction (a map grown under it) asks for the pages
    /// again from the first: `page` must return the same page for the same index every time, and what it throws
    /// is thrown by this call unchanged. Pages go into the transaction one at a time, so a store implementing this
    /// holds one page in memory, not all of them.
    ///
    /// The default implementation decodes every page into records and inserts them with one
    /// ``PersistentStore/save(_:)`` (atomic, but holding every record at once).
    func insertPages(count: Int, page: (Int) throws -> RecordPage) throws
}

extension PageInsertingStore {
    /// Decodes every page into records and inserts them all with one ``PersistentStore/save(_:)``: atomic, but
    /// every record is held at once. Stores override it to stream the pages into one transaction.
    public func insertPages(count: Int, page: (Int) throws -> RecordPage) throws {
        let schema = metadata.schema
        var records: [Record] = []
        for i in 0..<count { records += try page(i).records(in: schema) }
        guard !records.isEmpty else { return }
        try save(StoreChanges(inserted: records))
    }
}
