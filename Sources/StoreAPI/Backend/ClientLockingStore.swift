import Foundation

/// A store on a server, where there is no file for its clients to lock, that takes locks its clients name on the
/// server itself: exclusive across every process and machine that opens the store, and released by the server when
/// the holder's connection ends, so a client that dies never leaves one held.
///
/// The sync engine takes one so that the syncs of a server store take turns, as a file store's do through a lock
/// file beside it (``StoreCompanionFiles/syncLock(beside:)``). The PostgreSQL backend implements it with a
/// session-level advisory lock on a connection of its own.
@_spi(BackendKit) public protocol ClientLockingStore: PersistentStore {
    /// Takes the lock `name` of this store if no client holds it, without waiting: the lock, held until released;
    /// `nil` when another client (of any process) holds it. Throws when the server cannot be reached.
    func tryClientLock(named name: String) throws -> (any ClientLock)?
}

/// A lock a ``ClientLockingStore`` holds for a client until ``release()``.
@_spi(BackendKit) public protocol ClientLock: Sendable {
    /// Releases the lock. Idempotent.
    func release()
}
