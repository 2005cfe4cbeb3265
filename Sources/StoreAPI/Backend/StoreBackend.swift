import Foundation

/// A storage engine the framework can load stores from: SQLite, LMDB, XML, in-memory, or your own.
///
/// A backend is a small, stateless, `Sendable` value registered under its ``typeIdentifier`` in a
/// ``BackendRegistry`` (like Core Data's `registerStoreClass(_:type:)`). It answers questions about paths
/// (``sniff(_:)``, ``ownedFiles(ofStoreAt:)``, ``readMetadata(at:)``) without opening anything, and opens stores
/// (``open(at:options:creating:)``) that do the record work.
///
/// Two families exist, as in Core Data:
/// - **Incremental** backends (SQLite, LMDB) implement ``open(at:options:creating:)`` and return a
///   ``PersistentStore`` that reads and writes records one save at a time.
/// - **Atomic** backends (XML) adopt ``AtomicStoreBackend`` instead and only read and write whole files; the
///   framework keeps the records in memory, answers queries and calls the backend to write on save.
///
/// See <doc:WritingABackend> for a walk-through, and run `StoreConformance` against your backend.
public protocol StoreBackend: Sendable {
    /// This backend as an ``AtomicStoreBackend``, or `nil` when it is not one. Answered by the protocols'
    /// extensions (`self` for an atomic backend); a backend does not implement it. Store operations ask this
    /// instead of casting: a process's first cast of a type to a protocol searches every conformance it has, and
    /// most such casts on an operation's path fail.
    var asAtomicStoreBackend: (any AtomicStoreBackend)? { get }

    /// This backend as a ``ServerStoreBackend``, or `nil` (see ``asAtomicStoreBackend``).
    var asServerStoreBackend: (any ServerStoreBackend)? { get }

    /// The identifier stores of this type are registered and described under (`sqlite`, `lmdb`, `xml`, `memory`).
    var typeIdentifier: String { get }
    /// File-name extensions that suggest this type for a path that does not exist yet (`["sqlite", "db"]`).
    var fileExtensions: [String] { get }
    /// What the backend supports; the conformance suite and the operations read this.
    var capabilities: BackendCapabilities { get }

    /// Tells whether `url` holds a store of this backend, without opening it and without writing anything.
    /// Must not throw or crash on any input: garbage, truncated files, directories, unreadable paths.
    func sniff(_ url: URL) -> SniffResult

    /// Every file and directory that exists and belongs to the store at `url`: the main file first, then sidecars
    /// (`-wal`, `-shm`, `-journal`, lock files, external-data folders). Operations copy, move and delete exactly
    /// these. Returns an empty array when nothing exists.
    func ownedFiles(ofStoreAt url: URL) -> [URL]

    /// Where `file`, one of the ``ownedFiles(ofStoreAt:)`` of the store built at the staging path `staged`, goes
    /// when that store is moved into place at `destination`; `nil` leaves it out of the move.
    ///
    /// The default maps the files named after the store: `staged`'s name followed by a suffix (`-wal`, a lock
    /// file, or nothing for the main file) becomes `destination`'s name followed by the same suffix. A backend that
    /// owns files named otherwise (Core Data's `.Name_SUPPORT` folder) maps those itself, or they are lost on every
    /// copy, replace and relocation.
    func placedLocation(of file: URL, staged: URL, destination: URL) -> URL?

    /// Reads the store's metadata without a full open.
    func readMetadata(at url: URL) throws -> StoreMetadata

    /// Replaces the store's metadata without a full open, atomically.
    func writeMetadata(_ metadata: StoreMetadata, at url: URL) throws

    /// Opens the store at `url` (`nil` only for backends whose capabilities lack ``BackendCapabilities/persistent``).
    ///
    /// If a store exists there, it is opened with its own stored schema and `creating` is ignored. If none exists
    /// and `creating` is non-nil (and ``StoreOptions/createIfMissing`` is true), a new empty store is created with
    /// exactly that metadata (UUID, schema, custom keys). Otherwise ``StoreError/storeNotFound(_:)``.
    /// Creation must leave nothing behind if it fails.
    func open(at url: URL?, options: StoreOptions, creating: StoreMetadata?) throws -> any PersistentStore

    /// Deletes every file ``ownedFiles(ofStoreAt:)`` lists, and nothing else. Refuses (with
    /// ``StoreError/wrongStoreType(_:expected:found:)`` or ``StoreError/unrecognizedStore(_:reason:)``) a path that
    /// is not a store of this backend. Interrupted at any point, it leaves the whole store at `url` or nothing of it
    /// (staging names aside, which the framework removes later).
    func destroyStore(at url: URL) throws

    /// Copies the closed or open store at `source` to `destination` (which does not exist) with the engine's own
    /// fast path: SQLite's backup API, `mdb_env_copy2`, a file copy. The copy is the same logical store.
    /// The default implementation throws ``StoreError/unsupported(_:)``; the framework then streams records.
    func copyStore(from source: URL, to destination: URL) throws

    /// The engine's own integrity check. Returns the problems found (empty when healthy).
    func checkIntegrity(at url: URL) throws -> [String]

    /// Whether the store at `url` is open right now — in another process, or through another connection in this
    /// one — so that deleting or replacing its files would pull them from under a live user (whose later writes
    /// would then go to deleted files). Destroy and replace refuse such a store unless forced.
    ///
    /// Must not write anything, and must not disturb the users it looks for (closing a second descriptor of a
    /// file drops this process's POSIX locks on it). The default answers `false`, meaning "cannot tell": a
    /// backend that cannot see its users keeps the unprotected behaviour rather than blocking every destroy.
    func isInUse(at url: URL) throws -> Bool

    /// Deletes the store like ``destroyStore(at:)``; with `force`, also when another process has it open (that
    /// process keeps working on the deleted files until it closes them). The default calls ``destroyStore(at:)``,
    /// which for most backends does not look for users at all.
    func destroyStore(at url: URL, force: Bool) throws
}

extension StoreBackend {
    public func placedLocation(of file: URL, staged: URL, destination: URL) -> URL? {
        let stagedName = staged.lastPathComponent
        let name = file.lastPathComponent
        guard name.hasPrefix(stagedName) else { return nil }
        return destination.deletingLastPathComponent()
            .appendingPathComponent(destination.lastPathComponent + name.dropFirst(stagedName.count))
    }

    public func copyStore(from source: URL, to destination: URL) throws {
        throw StoreError.unsupported("fast copy for \(typeIdentifier) stores")
    }

    public func checkIntegrity(at url: URL) throws -> [String] { [] }

    public func isInUse(at url: URL) throws -> Bool { false }

    public func destroyStore(at url: URL, force: Bool) throws { try destroyStore(at: url) }
}

/// What a backend says about a path.
public enum SniffResult: Sendable, Hashable {
    /// Nothing of this backend is there: a missing path, an empty file, or some unrelated format.
    case none
    /// The engine's own format, but not a store written by this framework (an LMDB environment without our
    /// metadata, a SQLite database without our tables). The string says what it is, for error messages.
    case foreign(String)
    /// A store of this backend.
    case store
}

/// What a backend supports. The conformance suite runs the test groups a backend declares, and operations pick
/// fast paths from it.
public struct BackendCapabilities: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Stores live in files and survive the process.
    public static let persistent = BackendCapabilities(rawValue: 1 << 0)
    /// A failed save leaves the store exactly as it was.
    public static let transactions = BackendCapabilities(rawValue: 1 << 1)
    /// Several processes may open the same store at once.
    public static let multiProcess = BackendCapabilities(rawValue: 1 << 2)
    /// History transactions are stored.
    public static let history = BackendCapabilities(rawValue: 1 << 3)
    /// Ordered to-many relationships keep their order.
    public static let orderedRelationships = BackendCapabilities(rawValue: 1 << 4)
    /// ``StoreBackend/copyStore(from:to:)`` works while writers keep going.
    public static let onlineBackup = BackendCapabilities(rawValue: 1 << 5)
    /// ``StoreBackend/copyStore(from:to:)`` is implemented.
    public static let fastCopy = BackendCapabilities(rawValue: 1 << 6)
    /// The whole store is loaded into memory (atomic family).
    public static let atomic = BackendCapabilities(rawValue: 1 << 7)
    /// Its stores read (``PageScanningStore``) or insert (``PageInsertingStore``) ``RecordPage``s, so transfers
    /// between two such stores move bytes rather than records.
    public static let recordPages = BackendCapabilities(rawValue: 1 << 8)
}
