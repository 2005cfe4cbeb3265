import Foundation
@testable import LMDBBackend
@_spi(BackendKit) import StoreAPI
import Testing

/// A stored record read into a page: its values are copied in runs, and one whose stored bytes are not the page
/// form a decoded value has (a decimal in non-canonical text) is rewritten in place, the values around it intact.
@Suite struct LMDBPageDecodeTests {
    @Test func aNonCanonicalDecimalIsRewrittenBetweenCopiedValues() throws {
        let schema = try Schema(entities: [
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "n", type: .integer64), AttributeDescription(name: "d", type: .decimal),
                AttributeDescription(name: "s", type: .string), AttributeDescription(name: "e", type: .decimal),
                AttributeDescription(name: "m", type: .integer64),
            ]),
        ])
        let entity = try schema.requireEntity("Item")
        var record = entity.newRecord(primaryKey: 7, globalID: UUID())
        record.attributes = [.integer64(-3), .decimal(100), .string("middle"), .decimal(200), .integer64(1 << 40)]
        let info = LMDBEntityInfo(entity: entity, id: 4, recordsDatabase: "records:Item", indexes: [])
        var stored = [UInt8](repeating: 0, count: 256)
        let count = try stored.withUnsafeMutableBytes { raw -> Int in
            let base = try #require(raw.baseAddress)
            var w = RawWriter(start: base, capacity: raw.count)
            let fits = withUnsafePointer(to: record) { RecordCodec.encode($0, info, into: &w) }
            #expect(fits && !w.overflowed)
            return w.count
        }
        stored.removeSubrange(count...)
        // The canonical texts "100" and "200" stored as "1E2" and "2E2" (the same lengths), as another writer
        // might have stored them.
        for (canonical, other) in [("100", "1E2"), ("200", "2E2")] {
            let at = try #require(Self.range(of: Array(canonical.utf8), in: stored))
            stored.replaceSubrange(at, with: Array(other.utf8))
        }
        for rewritten in [false, true] {
            var bytes = stored
            if !rewritten {
                // Canonical again: every value copied in one run.
                for (canonical, other) in [("100", "1E2"), ("200", "2E2")] {
                    let at = try #require(Self.range(of: Array(other.utf8), in: bytes))
                    bytes.replaceSubrange(at, with: Array(canonical.utf8))
                }
            }
            var page = RecordPage(entity: "Item")
            try bytes.withUnsafeBytes { try RecordCodec.append($0, primaryKey: 7, entity: entity, entityID: 4, to: &page) }
            #expect(try page.records(in: schema) == [record], "rewritten: \(rewritten)")
            // The page holds what a page built from the decoded record holds, byte for byte.
            var expected = RecordPage(entity: "Item")
            expected.append(record)
            let got = page.withEncodedRecord(at: 0) { values, links in (Array(values), Array(links)) }
            let want = expected.withEncodedRecord(at: 0) { values, links in (Array(values), Array(links)) }
            #expect(got.0 == want.0 && got.1 == want.1, "rewritten: \(rewritten)")
        }
    }

    private static func range(of needle: [UInt8], in haystack: [UInt8]) -> Range<Int>? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where Array(haystack[i..<(i + needle.count)]) == needle {
            return i..<(i + needle.count)
        }
        return nil
    }
}
