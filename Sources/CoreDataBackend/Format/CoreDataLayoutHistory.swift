import Foundation
@_spi(BackendKit) import StoreAPI

extension CoreDataLayout {
    /// The persistent-history tables Core Data adds when a store is opened with history tracking on
    /// (`NSPersistentHistoryTrackingKey`): `ACHANGE`, `ATRANSACTION`, `ATRANSACTIONSTRING` and their indexes, as
    /// the corpus stores that track history have them. They do not depend on the model, except for tombstone
    /// columns (`ZTOMBSTONE0`…) for attributes preserved after deletion, which are not laid out here.
    /// [unverified: the tombstone columns; no corpus store with history has a preserved attribute]
    public static let historyStatements: [String] = [
        "CREATE TABLE ACHANGE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCHANGETYPE INTEGER, "
            + "ZENTITY INTEGER, ZENTITYPK INTEGER, ZTRANSACTIONID INTEGER, ZCOLUMNS BLOB )",
        "CREATE TABLE ATRANSACTION ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZAUTHORTS INTEGER, "
            + "ZBUNDLEIDTS INTEGER, ZCONTEXTNAMETS INTEGER, ZPROCESSIDTS INTEGER, ZTIMESTAMP FLOAT, ZAUTHOR VARCHAR, "
            + "ZBUNDLEID VARCHAR, ZCONTEXTNAME VARCHAR, ZPROCESSID VARCHAR, ZQUERYGEN BLOB )",
        "CREATE TABLE ATRANSACTIONSTRING ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR )",
        "CREATE INDEX ACHANGE_ZTRANSACTIONID_INDEX ON ACHANGE (ZTRANSACTIONID)",
        "CREATE INDEX ATRANSACTION_ZAUTHORTS_INDEX ON ATRANSACTION (ZAUTHORTS)",
        "CREATE INDEX ATRANSACTION_ZBUNDLEIDTS_INDEX ON ATRANSACTION (ZBUNDLEIDTS)",
        "CREATE INDEX ATRANSACTION_ZCONTEXTNAMETS_INDEX ON ATRANSACTION (ZCONTEXTNAMETS)",
        "CREATE INDEX ATRANSACTION_ZPROCESSIDTS_INDEX ON ATRANSACTION (ZPROCESSIDTS)",
        "CREATE INDEX Z_TRANSACTION_TransactionAuthorIndex ON ATRANSACTION (ZAUTHOR COLLATE BINARY ASC)",
        "CREATE INDEX Z_TRANSACTION_TransactionTimestampIndex ON ATRANSACTION (ZTIMESTAMP COLLATE BINARY ASC)",
        "CREATE UNIQUE INDEX Z_TRANSACTIONSTRING_UNIQUE_NAME ON ATRANSACTIONSTRING (ZNAME COLLATE BINARY ASC)",
    ]

    /// The `Z_PRIMARYKEY` rows of the history entities (`Z_ENT` 16001–16003, no parent, `Z_MAX` 0).
    public static let historyPrimaryKeyRows: [CoreDataPrimaryKeyRow] = [
        CoreDataPrimaryKeyRow(entityNumber: 16001, name: "CHANGE", superNumber: 0, maxPrimaryKey: 0),
        CoreDataPrimaryKeyRow(entityNumber: 16002, name: "TRANSACTION", superNumber: 0, maxPrimaryKey: 0),
        CoreDataPrimaryKeyRow(entityNumber: 16003, name: "TRANSACTIONSTRING", superNumber: 0, maxPrimaryKey: 0),
    ]

    /// Whether `table` is one of Core Data's persistent-history tables.
    public static func isHistoryTable(_ table: String) -> Bool {
        ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"].contains(table)
    }
}
