import Foundation
import StoreAPI

extension HistoryTransaction {
    /// The transaction as ``HistoryTransaction/encoded()`` wrote it before history was stored in its binary
    /// encoding: the `Codable` JSON through a default `JSONEncoder`. Tests write it into a store's history to
    /// stand for a store written by an earlier version.
    public func legacyJSONEncoded() throws -> Data {
        try JSONEncoder().encode(self)
    }
}
