import CLMDB
import Foundation
import StoreAPI
import Synchronization

/// The process-wide table of open environments, by the identity (device + inode) of the store directory or data
/// file.
///
/// lmdb.h: "Do not have open an LMDB database twice in the same process at the same time. Not even from a plain
/// open() call – close()ing it breaks flock() advisory locking." So every store on the same files shares one
/// ``LMDBEnvironment``, reference-counted; short looks at a store that is not open (sniffing, reading metadata)
/// happen while holding the table's lock, so no second handle can appear meanwhile.
enum EnvironmentRegistry {
    /// The open environments. A process has a handful open at once, so a list searched by identity serves; a
    /// dictionary keyed by ``FileIdentity`` would cost every process a first-use conformance scan (see
    /// `LMDBLayout.entitiesByID`).
    private static let table = Mutex<[LMDBEnvironment]>([])

    /// The registered environment for `identity`, with a reference taken, or the result of `open` registered with
    /// one reference.
    static func acquire(_ identity: FileIdentity, open: () throws -> LMDBEnvironment) throws -> LMDBEnvironment {
        try table.withLock { envs in
            if let env = envs.first(where: { $0.identity == identity }) {
                env.references += 1
                return env
            }
            let env = try open()
            env.references = 1
            envs.append(env)
            return env
        }
    }

    /// Drops a reference; the last one closes the environment.
    static func release(_ env: LMDBEnvironment) {
        let closing: LMDBEnvironment? = table.withLock { envs in
            env.references -= 1
            guard env.references <= 0, let index = envs.firstIndex(where: { $0 === env }) else { return nil }
            envs.remove(at: index)
            return env
        }
        closing?.close()
    }

    /// Whether an environment is open on `identity` in this process.
    static func isOpen(_ identity: FileIdentity) -> Bool {
        table.withLock { $0.contains { $0.identity == identity } }
    }

    /// Runs `body` with the registered environment when there is one (a reference held meanwhile), and otherwise
    /// with `nil` while holding the table's lock, so `body` may open and close a private handle safely.
    static func withEnvironment<T>(_ identity: FileIdentity, _ body: (LMDBEnvironment?) throws -> T) throws -> T {
        var unregistered: Result<T, any Error>?
        let registered: LMDBEnvironment? = table.withLock { envs in
            if let env = envs.first(where: { $0.identity == identity }) {
                env.references += 1
                return env
            }
            unregistered = Result { try body(nil) }
            return nil
        }
        if let registered {
            defer { release(registered) }
            return try body(registered)
        }
        guard let unregistered else { throw LMDBFailure(code: EINVAL, operation: "looking up an environment") }
        return try unregistered.get()
    }
}
