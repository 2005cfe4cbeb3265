import Foundation

/// A store that reads pages of records straight into a ``RecordPage``, its values never becoming Swift objects.
///
/// The transfer engine uses it when the destination is a ``PageInsertingStore``: a conversion then moves bytes,
/// not records — no string, data, decimal, array or record is made and released per value. A page must hold
/// exactly what ``PersistentStore/scan(entity:after:limit:)`` returns for the same arguments (both sides of every
/// relationship, in order), with every value checked as a scan checks it: a store may not pass on a value it
/// would refuse to read.
public protocol PageScanningStore: PersistentStore {
    /// The records of exactly `entity` whose primary key is greater than `primaryKey`, in key order, at most
    /// `limit` of them, as one page.
    func scanPage(entity: String, after primaryKey: Int64?, limit: Int) throws -> RecordPage
}

/// A store that inserts a ``RecordPage`` as a save inserting the same records would, without decoding it into
/// records first.
///
/// The insert is one transaction, checks every value against the entity as a save does (a page that does not fit
/// is refused with the save's error), and keeps every index a save keeps.
public protocol PageInsertingStore: PersistentStore {
    /// Inserts every record of `page`.
    func insert(_ page: RecordPage) throws
}
