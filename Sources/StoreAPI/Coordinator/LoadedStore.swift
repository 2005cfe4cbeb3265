import Foundation
import Synchronization

/// A store added to a ``StoreCoordinator``: its description, backend and open ``PersistentStore``.
///
/// A loaded store stays valid until it is removed from its coordinator or replaced by a store operation
/// (replace, restore, migrate); after that, objects fetched from it throw ``StoreError/objectInvalidated(_:reason:)``
/// instead of reading stale data.
public final class LoadedStore: Sendable, CustomStringConvertible {
    /// The description the store was loaded from.
    public let storeDescription: StoreDescription
    /// The backend that opened it.
    public let backend: any StoreBackend
    /// The open store.
    public let store: any PersistentStore
    /// The store's UUID, the first part of every object ID it hands out.
    public let identifier: UUID
    /// The names of the entities this store holds (its configuration, sub-entities included).
    public let entityNames: Set<String>

    private let invalidation = Mutex<String?>(nil)
    private let allocator = Mutex<[String: KeyBlock]>([:])

    struct KeyBlock {
        var next: Int64
        var end: Int64
        var blockSize: Int
    }

    init(description: StoreDescription, backend: any StoreBackend, store: any PersistentStore, entityNames: Set<String>) {
        self.storeDescription = description
        self.backend = backend
        self.store = store
        self.identifier = store.metadata.storeUUID
        self.entityNames = entityNames
    }

    /// The store's URL, if it has one.
    public var url: URL? { store.url }

    /// The store's type identifier.
    public var type: String { storeDescription.type }

    public var description: String { "LoadedStore(\(type), \(url?.path ?? "anonymous"), \(identifier))" }

    /// `nil` while valid; otherwise why the store is no longer valid.
    public var invalidationReason: String? { invalidation.withLock { $0 } }

    /// Marks the store invalid; objects from it fail from now on.
    func invalidate(_ reason: String) {
        invalidation.withLock { if $0 == nil { $0 = reason } }
    }

    /// Up to `wanted` (at least one) consecutive unused primary keys of hierarchy `root`, from blocks reserved in
    /// the store, so that inserting does not cost a store transaction per record. Blocks grow while the store keeps
    /// handing out keys (16 → 4096 keys); keys of a block a process does not use are skipped, never reused. A
    /// context inserting many
    /// records takes growing runs of keys with this, so it locks and looks the hierarchy up once per run instead of
    /// once per record; it never takes more than it asked for, so a context that inserts little wastes nothing.
    func takePrimaryKeys(root: String, upTo wanted: Int) throws -> Range<Int64> {
        try allocator.withLock { blocks -> Result<Range<Int64>, any Error> in
            // Modified in place: one hash of the root's name per run, not two.
            Self.take(from: &blocks[root, default: KeyBlock(next: 0, end: 0, blockSize: 8)], upTo: max(1, wanted),
                      root: root, store: store)
        }.get()
    }

    private static func take(from block: inout KeyBlock, upTo wanted: Int, root: String, store: any PersistentStore)
        -> Result<Range<Int64>, any Error>
    {
        if block.next >= block.end {
            let size = min(block.blockSize * 2, 4096)
            do {
                let first = try store.allocatePrimaryKeys(root: root, count: size)
                block = KeyBlock(next: first, end: first + Int64(size), blockSize: size)
            } catch {
                return .failure(error)
            }
        }
        let first = block.next
        let end = first + min(Int64(wanted), block.end - first)
        block.next = end
        return .success(first..<end)
    }
}
