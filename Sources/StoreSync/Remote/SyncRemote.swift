import Foundation

/// Where peers exchange their changes: a store of immutable change files, each written once by one peer and never
/// edited.
///
/// The protocol is deliberately small so that any dumb file store or append-only log can be a remote: a folder
/// (``FolderRemote``), memory (``InMemoryRemote``), a database table with a commit-safe cursor, an object store.
/// Implementations must be safe to call from several tasks at once, and must never return a file that is not
/// completely written.
public protocol SyncRemote: Sendable {
    /// What the remote is, for messages and logs. Never holds credentials.
    var displayName: String { get }

    /// The identity of the dataset behind this remote (an account and container). A store remembers the identity it
    /// synced with; when the remote answers another one, the engine refuses to merge the two datasets.
    func identity() async throws -> String

    /// The names of the change files added after `cursor` (all for `nil`), and the cursor that follows them.
    ///
    /// A cursor is the remote's own bookmark, opaque to the engine, which stores it only after it has applied every
    /// listed file. Listing from the same cursor again returns at least the same files, so a pull interrupted at any
    /// point is simply repeated.
    func list(after cursor: SyncCursor?) async throws -> RemoteListing

    /// The bytes of one listed change file.
    func fetch(_ name: ChangeFileName) async throws -> Data

    /// Writes a new change file under `name`, all at once or not at all. A name is written once: when it already
    /// exists, nothing is written and the answer is ``PutOutcome/alreadyExists``.
    func put(_ data: Data, as name: ChangeFileName) async throws -> PutOutcome

    /// The bytes of several listed change files, in the order of `names`: a remote that can answer many files in one
    /// request (a server) saves a round trip per file. The default fetches them one by one.
    func fetch(_ names: [ChangeFileName]) async throws -> [Data]

    /// Writes new change files in order, each all at once or not at all, and stops at the first whose name exists:
    /// the answer holds ``PutOutcome/created`` for each file written, then ``PutOutcome/alreadyExists`` for that one
    /// (the files after it are not written). A remote that can take many files in one request (a server, in one
    /// transaction) saves a round trip per file. The default puts them one by one.
    func put(_ files: [(name: ChangeFileName, data: Data)]) async throws -> [PutOutcome]
}

extension SyncRemote {
    /// Fetches each file with ``fetch(_:)-(ChangeFileName)``.
    public func fetch(_ names: [ChangeFileName]) async throws -> [Data] {
        var result: [Data] = []
        result.reserveCapacity(names.count)
        for name in names { result.append(try await fetch(name)) }
        return result
    }

    /// Puts each file with ``put(_:as:)``, stopping at the first name that exists.
    public func put(_ files: [(name: ChangeFileName, data: Data)]) async throws -> [PutOutcome] {
        var outcomes: [PutOutcome] = []
        outcomes.reserveCapacity(files.count)
        for file in files {
            let outcome = try await put(file.data, as: file.name)
            outcomes.append(outcome)
            if outcome == .alreadyExists { break }
        }
        return outcomes
    }
}

/// The name of one change file: the peer that wrote it and its position among that peer's files (from 1).
public struct ChangeFileName: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The writing peer.
    public var peer: UUID
    /// The file's position among its peer's files, from 1.
    public var sequence: Int64

    /// Creates a name.
    public init(peer: UUID, sequence: Int64) {
        self.peer = peer
        self.sequence = sequence
    }

    /// Orders by peer, then sequence.
    public static func < (a: ChangeFileName, b: ChangeFileName) -> Bool {
        a.peer == b.peer ? a.sequence < b.sequence : a.peer.uuidString < b.peer.uuidString
    }

    /// The file name form, `<PEER UUID>-<sequence, 16 digits>.changes`.
    public var description: String {
        let digits = String(sequence)
        return "\(peer.uuidString)-\(String(repeating: "0", count: max(0, 16 - digits.count)))\(digits).changes"
    }

    /// Parses the file name form exactly; `nil` for any other name (temporary, partial or foreign files).
    public init?(fileName: String) {
        guard fileName.hasSuffix(".changes") else { return nil }
        let stem = fileName.dropLast(".changes".count)
        guard stem.count == 36 + 1 + 16, let sep = stem.index(stem.startIndex, offsetBy: 36, limitedBy: stem.endIndex),
              stem[sep] == "-", let peer = UUID(uuidString: String(stem[..<sep])), peer.uuidString == stem[..<sep],
              stem[stem.index(after: sep)...].allSatisfy({ $0.isASCII && $0.isNumber }),
              let sequence = Int64(stem[stem.index(after: sep)...]), sequence > 0
        else { return nil }
        self.init(peer: peer, sequence: sequence)
    }
}

/// A remote's bookmark in its list of change files; opaque to the engine.
public struct SyncCursor: Sendable, Hashable, Codable {
    /// The remote's own encoding of the position.
    public var rawValue: String

    /// Creates a cursor.
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// What ``SyncRemote/list(after:)`` answers: new change files, in the order to apply them, and the next cursor.
public struct RemoteListing: Sendable, Hashable {
    /// The new change files.
    public var names: [ChangeFileName]
    /// The cursor to list from next time, once every file of ``names`` is applied.
    public var cursor: SyncCursor

    /// Creates a listing.
    public init(names: [ChangeFileName], cursor: SyncCursor) {
        self.names = names
        self.cursor = cursor
    }
}

/// What ``SyncRemote/put(_:as:)`` did.
public enum PutOutcome: Sendable, Hashable {
    /// The file was written.
    case created
    /// A file of that name existed; nothing was written.
    case alreadyExists
}
