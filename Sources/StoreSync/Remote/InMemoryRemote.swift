import Foundation
import Synchronization

/// A remote in memory: an append-only log of change files whose cursor is a position in the log, the shape of a
/// server's change table. For tests and for peers inside one process.
public final class InMemoryRemote: SyncRemote {
    private struct State {
        var log: [(name: ChangeFileName, data: Data)] = []
        var index: [ChangeFileName: Int] = [:]
    }

    private let state = Mutex(State())
    private let identityValue: String

    /// Creates an empty remote whose dataset identity is `identity` (a new one by default).
    public init(identity: String = UUID().uuidString) {
        self.identityValue = identity
    }

    /// `memory:` and the identity.
    public var displayName: String { "memory:\(identityValue)" }

    /// The number of change files written.
    public var fileCount: Int { state.withLock { $0.log.count } }

    /// The identity given at creation.
    public func identity() async throws -> String { identityValue }

    /// The files after the cursor's position, in the order they were written.
    public func list(after cursor: SyncCursor?) async throws -> RemoteListing {
        let start = try cursor.map(Self.position) ?? 0
        return state.withLock { s in
            let from = min(start, s.log.count)
            return RemoteListing(names: s.log[from...].map(\.name), cursor: SyncCursor(rawValue: String(s.log.count)))
        }
    }

    /// The file's bytes.
    public func fetch(_ name: ChangeFileName) async throws -> Data {
        guard let data = state.withLock({ s in s.index[name].map { s.log[$0].data } }) else {
            throw SyncError.remote(displayName, reason: "no change file \(name)")
        }
        return data
    }

    /// Appends the file unless its name exists.
    public func put(_ data: Data, as name: ChangeFileName) async throws -> PutOutcome {
        state.withLock { s in
            if s.index[name] != nil { return .alreadyExists }
            s.index[name] = s.log.count
            s.log.append((name, data))
            return .created
        }
    }

    private static func position(_ cursor: SyncCursor) throws -> Int {
        guard let n = Int(cursor.rawValue), n >= 0 else {
            throw SyncError.remote("memory", reason: "'\(cursor.rawValue)' is not a cursor of an in-memory remote")
        }
        return n
    }
}
