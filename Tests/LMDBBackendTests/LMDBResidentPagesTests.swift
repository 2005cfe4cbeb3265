import Foundation
import LMDBBackend
import StoreAPI
import StoreTestSupport
import Testing

/// A bulk write or scan does not leave the whole map resident in the process (where it counts as the process's
/// memory): the store releases the pages it walked. Measured on the store's own mapping in `/proc/self/smaps`, so
/// other tests running alongside do not blur it.
@Suite struct LMDBResidentPagesTests {
    /// Resident kilobytes of every mapping of `file` in this process; nil where `/proc` is not there.
    static func residentKilobytes(of file: URL) -> Int? {
        // Read to the end: /proc files report no size, and smaps runs to hundreds of kilobytes.
        guard let handle = FileHandle(forReadingAtPath: "/proc/self/smaps"), let data = try? handle.readToEnd() else { return nil }
        try? handle.close()
        let smaps = String(decoding: data, as: UTF8.self)
        let path = file.resolvingSymlinksInPath().path
        var inside = false
        var total = 0
        for line in smaps.split(separator: "\n") {
            if let first = line.first, first.isHexDigit, line.contains("-"), line.split(separator: " ").count >= 5 {
                inside = line.hasSuffix(" " + path)
            } else if inside, line.hasPrefix("Rss:") {
                total += line.split(separator: " ").compactMap { Int($0) }.first ?? 0
            }
        }
        return total
    }

    /// Saves `saves` batches of `perSave` Tag records whose names are `length` bytes long.
    static func fill(_ store: any PersistentStore, _ schema: Schema, saves: Int, perSave: Int, length: Int) throws {
        let blob = String(repeating: "r", count: length)
        var key: Int64 = 0
        for _ in 0..<saves {
            let batch = (0..<perSave).map { _ in
                key += 1
                return schema.record("Tag", key, ["name": .string("\(key) " + blob)])
            }
            try store.save(StoreChanges(inserted: batch))
        }
    }

    /// Scans every Tag record page by page; returns how many there were.
    static func scanAll(_ store: any PersistentStore) throws -> Int {
        var scanned = 0
        var after: Int64?
        while true {
            let page = try store.scan(entity: "Tag", after: after, limit: 500)
            guard let last = page.last else { return scanned }
            scanned += page.count
            after = last.primaryKey
        }
    }

    @Test func bulkWritesAndScansReleaseTheMap() throws {
        #if os(Linux)
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let url = dir.path("resident.lmdb")
        let store = try LMDBFixture.create(url, schema: schema)
        defer { try? store.close() }
        let dataFile = url.appendingPathComponent("data.mdb")
        // 24 MB of records in saves of 2 MB: six times the release threshold.
        try Self.fill(store, schema, saves: 12, perSave: 1_000, length: 2_000)
        let fileKB = (try FileManager.default.attributesOfItem(atPath: dataFile.path)[.size] as? Int ?? 0) / 1024
        #expect(fileKB > 24_000)
        let afterWrites = try #require(Self.residentKilobytes(of: dataFile))
        #expect(afterWrites < 12_000, "after writing \(fileKB) kB, \(afterWrites) kB of the map stayed resident")

        #expect(try Self.scanAll(store) == 12_000)
        let afterScan = try #require(Self.residentKilobytes(of: dataFile))
        #expect(afterScan < 12_000, "after scanning \(fileKB) kB, \(afterScan) kB of the map stayed resident")
        #endif
    }

    /// A small store's pages are left resident: no more of the map than the file holds can be, so releasing them
    /// would free little, and cost more (the advice, the faults that bring them back) than it frees. A store of
    /// twice the release threshold, under the small-file bound, keeps what a scan of it touched.
    @Test func aSmallStoreKeepsWhatAScanTouched() throws {
        #if os(Linux)
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let url = dir.path("small.lmdb")
        let store = try LMDBFixture.create(url, schema: schema)
        defer { try? store.close() }
        let dataFile = url.appendingPathComponent("data.mdb")
        try Self.fill(store, schema, saves: 2, perSave: 2_000, length: 1_000)
        let fileKB = (try FileManager.default.attributesOfItem(atPath: dataFile.path)[.size] as? Int ?? 0) / 1024
        #expect(fileKB > 3_000 && fileKB < 8_000)
        #expect(try Self.scanAll(store) == 4_000)
        let afterScan = try #require(Self.residentKilobytes(of: dataFile))
        #expect(afterScan > fileKB / 2, "after scanning \(fileKB) kB, only \(afterScan) kB of the map stayed resident")
        #endif
    }
}
