import Foundation
@_spi(BackendKit) import StoreAPI

/// How many bytes of the map a large save will take, estimated before its transaction begins.
///
/// A write that fills the map is aborted, the map doubled and the whole transaction run again (see
/// ``LMDBEnvironment/write(timeout:_:)``): for a bulk insert several times larger than the map, that is several
/// complete runs thrown away. Growing the map once, up front, by this estimate avoids them; the estimate only needs
/// to be generous, since map size is address space, not disk (the file grows only by the pages written).
enum SaveSizeEstimate {
    /// Saves smaller than this are not estimated (the map's own doubling handles them cheaply).
    static let threshold = 2048

    /// The estimated bytes the inserts of `changes` will add, from the encoded size of a sample of the records,
    /// or `nil` for small saves and records whose entity is unknown (the save reports those).
    static func bytes(for changes: StoreChanges, layout: LMDBLayout) -> Int? {
        let records = changes.inserted
        guard records.count >= threshold else { return nil }
        var buffer = ByteWriter(capacity: 4096)
        var sampled = 0
        var sampledBytes = 0
        var indexEntries = 0
        let step = max(1, records.count / 64)
        for i in stride(from: 0, to: records.count, by: step) {
            guard let info = try? layout.info(records[i].entity) else { return nil }
            withUnsafePointer(to: records[i]) { r in
                _ = buffer.encode { RecordCodec.encode(r, info, into: &$0) }
            }
            sampled += 1
            sampledBytes += buffer.count
            indexEntries += info.indexes.count
        }
        guard sampled > 0 else { return nil }
        // Per record: the value, its 8-byte key and node header, and a global-ID entry (16 + 12 bytes and a
        // header); per index entry about 64 bytes. Pages end up around two-thirds full at worst and branch pages,
        // freed pages of the copy-on-write and the history come on top: twice the sum covers them.
        let perRecord = sampledBytes / sampled + 8 + 10 + 16 + 12 + 10 + (indexEntries * 64) / sampled
        let (total, overflow) = perRecord.multipliedReportingOverflow(by: 2 * records.count)
        return overflow ? Int.max : total
    }

    /// The same for a page: its bytes are the records' values as stored.
    static func bytes(for page: RecordPage, layout: LMDBLayout) -> Int? {
        guard page.count >= threshold, let info = try? layout.info(page.entity) else { return nil }
        let perRecord = page.encodedByteCount / page.count + 1 + 5 + 16 + 8 + 10 + 16 + 12 + 10 + info.indexes.count * 64
        let (total, overflow) = perRecord.multipliedReportingOverflow(by: 2 * page.count)
        return overflow ? Int.max : total
    }
}
