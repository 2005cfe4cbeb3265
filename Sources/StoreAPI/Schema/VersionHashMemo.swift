import Foundation
import Synchronization

/// The entity version hashes of recently resolved definitions, kept for the life of the process.
///
/// One store's schema is resolved several times while the store opens (from its metadata, from its model, for the
/// store itself), and hashing every property of every entity is most of what a resolution costs. The hashes depend
/// on the definitions alone, and definitions that are equal (every stored field of every entity) hash alike, so an
/// equal set of definitions takes the hashes computed before. A few sets are kept, the most recent first.
enum VersionHashMemo {
    private static let capacity = 8
    private static let recent = Mutex<[(definitions: [EntityDescription], hashes: [String: String])]>([])

    /// The base64 version hash of each entity of `definitions`, by name: remembered ones, or `compute()`'s.
    static func hashes(for definitions: [EntityDescription], compute: () -> [String: String]) -> [String: String] {
        if let known = recent.withLock({ list in list.first { $0.definitions == definitions }?.hashes }) {
            return known
        }
        let hashes = compute()
        recent.withLock { list in
            list.removeAll { $0.definitions == definitions }
            list.insert((definitions, hashes), at: 0)
            if list.count > capacity { list.removeLast(list.count - capacity) }
        }
        return hashes
    }
}
