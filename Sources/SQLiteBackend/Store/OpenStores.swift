import Foundation
import Synchronization

/// The SQLite stores this process has open, by file, so ``SQLiteStoreBackend/destroyStore(at:)`` can close them
/// before deleting their files (an open connection would otherwise keep writing to deleted inodes).
enum OpenStores {
    private final class WeakStore: @unchecked Sendable {
        weak var store: SQLitePersistentStore?
        init(_ store: SQLitePersistentStore) { self.store = store }
    }

    private static let stores = Mutex<[String: [WeakStore]]>([:])

    static func key(_ url: URL) -> String { url.standardizedFileURL.resolvingSymlinksInPath().path }

    static func register(_ store: SQLitePersistentStore) {
        let k = key(store.fileURL)
        let box = WeakStore(store)
        stores.withLock { all in
            all[k, default: []].removeAll { $0.store == nil }
            all[k, default: []].append(box)
        }
    }

    static func unregister(_ store: SQLitePersistentStore) {
        let k = key(store.fileURL)
        stores.withLock { all in
            all[k]?.removeAll { $0.store == nil || $0.store === store }
            if all[k]?.isEmpty == true { all.removeValue(forKey: k) }
        }
    }

    /// Closes every store open on `url`; their later calls fail with a clear error.
    static func invalidateAll(at url: URL) {
        let k = key(url)
        let open = stores.withLock { all in all.removeValue(forKey: k) ?? [] }
        for box in open { box.store?.invalidate() }
    }
}
