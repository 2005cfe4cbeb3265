import Foundation
@_spi(BackendKit) import StoreAPI
import Synchronization

extension PostgresPersistentStore: ChangeProbingStore {
    /// The saves of this store heard so far: the first probe starts a ``PostgresSaveListener`` (a connection of its
    /// own, `LISTEN`ing), each later one asks it, in one round trip to the server, whether a save (by anyone, this
    /// store included) was announced since, and counts one more if so. A listener that lost its connection
    /// reconnects and counts one, since a save may have gone unheard meanwhile. No record or history is read.
    func changeToken() throws -> Int64 {
        try changeProbe.withLock { probe in
            guard !probe.isClosed else {
                throw StoreError.io(location.url, operation: "probing for changes", reason: "the store is closed")
            }
            guard let listener = probe.listener else {
                probe.listener = try PostgresSaveListener(url: location.url, timeout: StoreOptions().timeout)
                return probe.saves
            }
            if try listener.hasHeardSave() { probe.saves += 1 }
            return probe.saves
        }
    }

    /// The listener of ``changeToken()`` and what it counted.
    struct ChangeProbe {
        var listener: PostgresSaveListener?
        var saves: Int64 = 0
        var isClosed = false

        mutating func close() {
            listener?.close()
            listener = nil
            isClosed = true
        }
    }
}
