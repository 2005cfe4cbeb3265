import Foundation

/// An open store: the record-level interface the coordinator, contexts and store operations use.
///
/// Implementations are shared between threads (the coordinator hands one to every context), so they must be
/// `Sendable` and do their own locking. Every method may be called from any thread, never concurrently with
/// ``close()``.
public protocol PersistentStore: AnyObject, Sendable {
    /// Where the store lives; `nil` for anonymous in-memory stores.
    var url: URL? { get }
    /// The store's metadata as of the last save. Its schema is the one records are laid out against.
    var metadata: StoreMetadata { get }

    /// Records matching the request, filtered, sorted and sliced. Implementations translate what they can and
    /// may use ``PredicateEvaluator`` for the rest.
    func fetch(_ request: FetchRequest) throws -> [Record]

    /// The number of records matching the request's entity and predicate (offset and limit applied).
    func count(_ request: FetchRequest) throws -> Int

    /// The records of hierarchy `root` (``Entity/rootName``) with the given keys, in any order; keys with no
    /// record are left out.
    func records(withKeys keys: [Int64], root: String) throws -> [Record]

    /// Up to `limit` records of exactly `entity` (not its sub-entities) whose key is greater than `primaryKey`
    /// (or all, from the smallest, for `nil`), in increasing key order. The transfer engine pages through a store
    /// with this, so memory stays bounded however large the store is.
    func scan(entity: String, after primaryKey: Int64?, limit: Int) throws -> [Record]

    /// The primary keys ``scan(entity:after:limit:)`` would return, without reading the records. A default
    /// implementation scans the records; backends that can list keys alone (from a table's key or a database's
    /// keys) should, since a writer that needs a first pass over which records exist calls this for every record.
    func scanKeys(entity: String, after primaryKey: Int64?, limit: Int) throws -> [Int64]

    /// Applies a set of changes atomically: either all of it is stored, or none of it and the error says why.
    func save(_ changes: StoreChanges) throws

    /// Reserves `count` consecutive primary keys in hierarchy `root` that no other record has had or will get,
    /// even from another process; returns the first.
    func allocatePrimaryKeys(root: String, count: Int) throws -> Int64

    /// History transactions with a token greater than `token` (all for `nil`), in token order.
    func history(after token: Int64?) throws -> [HistoryTransaction]

    /// Flushes and releases the store. Further calls fail.
    func close() throws
}

/// What one save writes.
public struct StoreChanges: Sendable {
    /// New records. Their primary keys were allocated by ``PersistentStore/allocatePrimaryKeys(root:count:)`` or
    /// come from another store (a transfer); either way the store's key allocator must stay above them.
    public var inserted: [Record]
    /// Records whose new full state replaces the stored one.
    public var updated: [Record]
    /// For each of ``updated`` (same positions), which of its values the change touched; where this is shorter
    /// than ``updated`` or holds `nil`, every value counts as changed. A store may skip writing what did not change
    /// — a row whose only change is the derived side of a relationship stored elsewhere, say — and must write the
    /// full state otherwise.
    public var updatedProperties: [ChangedProperties?] = []
    /// Records to remove.
    public var deleted: [RecordKey]
    /// History to append. A transaction whose token is ``HistoryTransaction/assignToken`` gets the next token;
    /// others (copied from another store) keep theirs.
    public var history: [HistoryTransaction]
    /// New metadata to store with the changes, if it changed.
    public var metadata: StoreMetadata?

    /// Creates a change set.
    public init(
        inserted: [Record] = [], updated: [Record] = [], deleted: [RecordKey] = [],
        history: [HistoryTransaction] = [], metadata: StoreMetadata? = nil
    ) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.history = history
        self.metadata = metadata
    }

    /// What ``updatedProperties`` says changed in the updated record at `index` (`nil`: everything).
    public func changedProperties(ofUpdated index: Int) -> ChangedProperties? {
        index < updatedProperties.count ? updatedProperties[index] : nil
    }

    /// Whether nothing would be written.
    public var isEmpty: Bool {
        inserted.isEmpty && updated.isEmpty && deleted.isEmpty && history.isEmpty && metadata == nil
    }
}

extension HistoryTransaction {
    /// The placeholder token of a new transaction: the store assigns the next one when it saves.
    public static let assignToken: Int64 = 0
}

extension PersistentStore {
    /// Scans whole records and keeps their keys.
    public func scanKeys(entity: String, after primaryKey: Int64?, limit: Int) throws -> [Int64] {
        try scan(entity: entity, after: primaryKey, limit: limit).map(\.primaryKey)
    }
}

/// Which values of an updated record changed: positions in ``Record/attributes`` and ``Record/relationships``.
public struct ChangedProperties: Sendable, Hashable {
    /// Positions of changed attributes, ascending.
    public var attributes: [Int]
    /// Positions of changed relationships, ascending.
    public var relationships: [Int]

    /// Creates a change description.
    public init(attributes: [Int] = [], relationships: [Int] = []) {
        self.attributes = attributes
        self.relationships = relationships
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { attributes.isEmpty && relationships.isEmpty }
}
