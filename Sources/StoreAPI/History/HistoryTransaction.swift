import Foundation

/// One saved unit of work, recorded when a store's description turns on
/// ``StoreOptions/historyTracking``.
///
/// Tokens increase with every save in a store and survive every store operation, so a reader can resume
/// "since token N" after the store was migrated, converted, backed up, restored or relocated.
public struct HistoryTransaction: Sendable, Hashable, Codable {
    /// The transaction's position in the store's history; strictly increasing.
    public var token: Int64
    /// When the save happened.
    public var timestamp: Date
    /// Who saved (``StoreContext/author``), if set.
    public var author: String?
    /// The name of the context that saved (``StoreContext/name``), if set; Core Data's `contextName`.
    public var contextName: String?
    /// The name of the process that saved, as `ProcessInfo.processName` gives it; Core Data's `processID`.
    public var processName: String?
    /// The bundle identifier of the application that saved, when it has one; Core Data's `bundleID`.
    public var bundleIdentifier: String?
    /// What changed, one entry per record.
    public var changes: [HistoryChange]

    /// Creates a transaction.
    ///
    /// Contexts fill ``processName`` and ``bundleIdentifier`` with the saving process's own; a transaction carried
    /// from another store keeps the ones it was saved with, so history read from a Core Data store names the app
    /// that wrote it, not the tool that converted it.
    public init(
        token: Int64, timestamp: Date, author: String?, contextName: String? = nil, processName: String? = nil,
        bundleIdentifier: String? = nil, changes: [HistoryChange]
    ) {
        self.token = token
        self.timestamp = timestamp
        self.author = author
        self.contextName = contextName
        self.processName = processName
        self.bundleIdentifier = bundleIdentifier
        self.changes = changes
    }

    /// A new transaction for a save made in this process: its token assigned by the store, this process's name and
    /// bundle identifier.
    static func saved(
        at timestamp: Date, author: String?, contextName: String?, changes: [HistoryChange]
    ) -> HistoryTransaction {
        HistoryTransaction(
            token: assignToken, timestamp: timestamp, author: author, contextName: contextName,
            processName: thisProcess.name, bundleIdentifier: thisProcess.bundle, changes: changes)
    }

    /// This process's name and bundle identifier, looked up once rather than on every save.
    private static let thisProcess = (name: ProcessInfo.processInfo.processName, bundle: Bundle.main.bundleIdentifier)
}

/// One record's change inside a ``HistoryTransaction``.
public struct HistoryChange: Sendable, Hashable, Codable {
    /// The kind of change.
    public enum Kind: String, Sendable, Hashable, Codable {
        case insert, update, delete
    }

    /// Insert, update or delete.
    public var kind: Kind
    /// The record's concrete entity.
    public var entity: String
    /// The record's primary key.
    public var primaryKey: Int64
    /// The record's global identifier (for deletes, the tombstone that lets a sync peer find its copy).
    public var globalID: UUID
    /// For updates: the names of the attributes and relationships that changed.
    public var changedKeys: [String]
    /// For deletes: the values of the entity's uniqueness-constrained attributes, so a peer can match a record by
    /// its natural key too. Empty for entities without constraints.
    public var tombstone: [String: String]

    /// Creates a change.
    public init(
        kind: Kind, entity: String, primaryKey: Int64, globalID: UUID, changedKeys: [String] = [],
        tombstone: [String: String] = [:]
    ) {
        self.kind = kind
        self.entity = entity
        self.primaryKey = primaryKey
        self.globalID = globalID
        self.changedKeys = changedKeys
        self.tombstone = tombstone
    }
}

extension HistoryTransaction {
    /// The compact binary encoding backends store a transaction as (see ``decode(_:url:)``).
    ///
    /// Storage only: it is not an interchange format. The `Codable` conformance stays the JSON form for exports.
    public func encoded() throws -> Data {
        HistoryBinaryEncoding.encode(self)
    }

    /// Decodes a stored transaction: what ``encoded()`` writes, or the JSON (`Codable`) encoding stores written
    /// before it hold. `url` names the store in the error.
    ///
    /// - Throws: ``StoreError/corruptStore(_:reason:)`` for bytes that are neither.
    public static func decode(_ data: Data, url: URL?) throws -> HistoryTransaction {
        if let first = data.first, HistoryBinaryEncoding.isBinary(first) {
            do { return try HistoryBinaryEncoding.decode(data) } catch {
                throw StoreError.corruptStore(url ?? URL(fileURLWithPath: "/"),
                                              reason: "unreadable history transaction: \(error.reason) at byte \(error.offset)")
            }
        }
        do { return try JSONDecoder().decode(HistoryTransaction.self, from: data) } catch {
            throw StoreError.corruptStore(url ?? URL(fileURLWithPath: "/"), reason: "unreadable history transaction: \(error)")
        }
    }
}
