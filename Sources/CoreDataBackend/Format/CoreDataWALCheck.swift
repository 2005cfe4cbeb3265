import Foundation
@_spi(BackendKit) import StoreAPI

/// Whether a store's `-wal` is whole.
///
/// SQLite reads a `-wal` up to its last whole committed transaction and ignores the rest without a word: a `-wal`
/// cut short (a copy interrupted, a download truncated) reads as an older store, or an empty one when, as in every
/// corpus store with a `-wal`, all the data is in it. A whole `-wal` is empty, or a 32-byte header (magic
/// `0x377f0682` or `0x377f0683`, page size at offset 8, salts at 16) followed by frames of 24 bytes plus a page.
/// Its size need not be a whole number of frames (a `journal_size_limit` cuts the stale frames of an earlier
/// generation anywhere), but a frame of the current generation (its salts are the header's) is never partial: SQLite
/// writes them whole. A `-wal` that ends inside one was cut, or its writer died mid-write; the backend refuses to
/// read or copy it rather than show a store that silently lacks data, and says how to let SQLite recover it.
enum CoreDataWALCheck {
    static let headerSize = 32
    static let frameHeaderSize = 24

    /// What is wrong with the `-wal` of the store at `url`, or `nil` when there is none or it is whole.
    static func problem(ofStoreAt url: URL) -> String? {
        let wal = CoreDataStoreBackend.sidecar(url, "-wal")
        guard let handle = try? FileHandle(forReadingFrom: wal) else { return nil }
        defer { try? handle.close() }
        guard let size = try? handle.seekToEnd(), size > 0 else { return nil }
        let cut = "\(wal.path) was cut short (\(size) bytes"
        let lost = "SQLite would read the store without the transactions in it; copy the whole -wal again"
        guard size >= UInt64(headerSize) else { return "\(cut), less than its \(headerSize)-byte header): \(lost)" }
        guard (try? handle.seek(toOffset: 0)) != nil, let header = try? handle.read(upToCount: headerSize),
            header.count == headerSize
        else { return nil }
        let bytes = [UInt8](header)
        func u32(_ at: Int) -> UInt32 { bytes[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) } }
        let magic = u32(0), pageSize = u32(8)
        guard magic == 0x377f_0682 || magic == 0x377f_0683, pageSize >= 512, pageSize <= 65536,
            pageSize & (pageSize - 1) == 0
        else {
            return "\(wal.path) does not start with a WAL header: \(lost)"
        }
        let frame = UInt64(frameHeaderSize) + UInt64(pageSize)
        let partial = (size - UInt64(headerSize)) % frame
        guard partial > 0 else { return nil }
        // The partial frame's salts, or (when too little of it is left to hold them) the last whole frame's: a
        // current-generation frame right before the end means the current generation was cut. Cut inside the
        // first frame, with no salts to read, it was cut too.
        let salts = bytes[16..<24]
        let whole = size - partial
        let at: UInt64? = partial >= 16 ? whole : (whole >= UInt64(headerSize) + frame ? whole - frame : nil)
        if let at {
            guard (try? handle.seek(toOffset: at)) != nil, let frameHeader = try? handle.read(upToCount: 16),
                frameHeader.count == 16, [UInt8](frameHeader)[8..<16].elementsEqual(salts)
            else { return nil }
        }
        return "\(cut), which ends inside a frame of \(frame) bytes): \(lost). If an app died while writing it, "
            + "open the store once with the sqlite3 tool to let SQLite keep its whole transactions"
    }

    /// Throws ``StoreError/corruptStore(_:reason:)`` naming the `-wal` when it was cut short.
    static func requireWhole(_ url: URL) throws(StoreError) {
        if let problem = problem(ofStoreAt: url) { throw .corruptStore(url, reason: problem) }
    }
}
