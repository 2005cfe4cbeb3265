import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a sync did not happen or did not finish. Each case names the store or remote and what is wrong; none of them
/// leaves the store changed half-way: a pull is applied in one save or not at all.
public enum SyncError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The remote failed or answered something unusable (unreachable folder, unreadable file, …).
    case remote(String, reason: String)
    /// The remote did not answer a call within the engine's timeout.
    case timedOut(String, seconds: Double)
    /// The remote holds another dataset than the one the store synced with (another account or container): the
    /// store is not merged into it. Detach the store to sync it with the new remote from scratch.
    case remoteIdentityChanged(store: String, expected: String, found: String)
    /// The store cannot sync: no sync options, loaded read-only, or without history tracking.
    case notSyncable(store: String, reason: String)
    /// A remote URL no remote handles, or one that is malformed.
    case unsupportedRemote(String, reason: String)
    /// The remote purged the history after the cursor listed from: the peer must re-baseline (the engine does so by
    /// itself; see ``PurgeableSyncRemote``).
    case historyPurged(String)
    /// Another sync of the store (in another process, `pid`, or in this one) held it for the whole `waited` seconds:
    /// the syncs of one store take turns, so that none sets back what another wrote. Nothing was changed; sync
    /// again once the other has finished.
    case syncInProgress(store: String, pid: Int32?, waited: Double)

    /// A one-line message naming the store or remote.
    public var description: String {
        switch self {
        case .remote(let r, let why): "\(r): \(why)"
        case .timedOut(let r, let s): "\(r): no answer within \(s) seconds; the store is unchanged and saves keep working"
        case .remoteIdentityChanged(let store, let expected, let found):
            "\(store): the remote now holds another dataset (identity \(found), the store synced with \(expected)); "
                + "not merging them: detach the store to sync it with this remote"
        case .notSyncable(let store, let why): "\(store): cannot sync: \(why)"
        case .unsupportedRemote(let url, let why): "\(url): \(why)"
        case .historyPurged(let r): "\(r): the history after this cursor was purged; the peer re-baselines"
        case .syncInProgress(let store, let pid, let waited):
            "\(store): sync already running (\(pid.map { $0 == getpid() ? "in this process" : "pid \($0)" } ?? "another process")); "
                + "waited \(waited) seconds for it to finish; nothing was changed"
        }
    }
}
