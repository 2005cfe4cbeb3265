@_spi(BackendKit) import CoreDataBackend
import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// The store reader on damaged copies of a corpus store: each damage is a `StoreError` naming the file and the
/// table, and custom metadata keys come through.
@Suite struct CoreDataStoreFileTests {
    /// A writable copy of the corpus store without a `-wal` that has the most entities, or `nil` without the corpus.
    static func copyOfAStore(in dir: TemporaryDirectory) throws -> URL? {
        guard let root = PackagePaths.corpus("stores") else { return nil }
        let source = root.appendingPathComponent("alemar11__CoreDataPlus/SampleModel_V1.sqlite")
        guard FileManager.default.fileExists(atPath: source.path) else { return nil }
        let copy = dir.path("Copy.sqlite")
        try FileManager.default.copyItem(at: source, to: copy)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: copy.path)
        return copy
    }

    /// Runs `sql` with one blob parameter on a read-write connection.
    static func execute(_ url: URL, _ sql: String, blob: [UInt8]) throws {
        var db: OpaquePointer?
        guard sqlite3_open(url.path, &db) == SQLITE_OK, let db else { throw StoreError.io(url, operation: "open", reason: "") }
        defer { sqlite3_close(db) }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw StoreError.io(url, operation: sql, reason: String(cString: sqlite3_errmsg(db)))
        }
        defer { sqlite3_finalize(statement) }
        // SQLITE_TRANSIENT: SQLite copies the bytes before the call returns.
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        _ = blob.withUnsafeBytes { sqlite3_bind_blob(statement, 1, $0.baseAddress, Int32($0.count), transient) }
        guard sqlite3_step(statement) == SQLITE_DONE else {
            throw StoreError.io(url, operation: sql, reason: String(cString: sqlite3_errmsg(db)))
        }
    }

    static func expectCorrupt(_ url: URL, _ fragment: String, _ body: () throws -> Void,
                              sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            try body()
            Issue.record("no error", sourceLocation: sourceLocation)
        } catch StoreError.corruptStore(let at, let reason) {
            #expect(at == url, sourceLocation: sourceLocation)
            #expect(reason.contains(fragment), "\(reason)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func aDamagedModelCacheIsACorruptStore() throws {
        let dir = try TemporaryDirectory("coredata-damaged")
        guard let url = try Self.copyOfAStore(in: dir) else { return }
        try Self.execute(url, "UPDATE Z_MODELCACHE SET Z_CONTENT = ?", blob: [0xFF, 0x00, 0x12, 0x34])
        let file = try CoreDataStoreFile.read(at: url)
        Self.expectCorrupt(url, "Z_MODELCACHE") { _ = try file.model() }
        // A cache that inflates to something that is not a keyed archive.
        try Self.execute(url, "UPDATE Z_MODELCACHE SET Z_CONTENT = ?",
                         blob: try RawDeflate.deflate(BinaryPropertyListWriter.write(.array([.integer(1)]))))
        Self.expectCorrupt(url, "not a dictionary") { _ = try CoreDataStoreFile.read(at: url).schema() }
    }

    @Test func aDamagedMetadataPlistIsACorruptStore() throws {
        let dir = try TemporaryDirectory("coredata-damaged")
        guard let url = try Self.copyOfAStore(in: dir) else { return }
        try Self.execute(url, "UPDATE Z_METADATA SET Z_PLIST = ?", blob: Array("bplist00 but not really".utf8))
        Self.expectCorrupt(url, "Z_METADATA") { _ = try CoreDataStoreFile.read(at: url) }
        let shortHash = PropertyListValue.dictionary([
            ("NSStoreType", .string("SQLite")), ("NSStoreModelVersionHashes", .dictionary([("Car", .data(Data([1])))])),
        ])
        try Self.execute(url, "UPDATE Z_METADATA SET Z_PLIST = ?", blob: BinaryPropertyListWriter.write(shortHash))
        Self.expectCorrupt(url, "not 32 bytes") { _ = try CoreDataStoreFile.read(at: url) }
    }

    @Test func customMetadataKeysComeThrough() throws {
        let dir = try TemporaryDirectory("coredata-custom")
        guard let url = try Self.copyOfAStore(in: dir) else { return }
        var metadata = try CoreDataStoreFile.read(at: url).metadata
        metadata.custom["com.example.lastSync"] = .date(Date(timeIntervalSinceReferenceDate: 1000))
        metadata.custom["com.example.tags"] = .array([.string("a"), .integer(2)])
        try Self.execute(url, "UPDATE Z_METADATA SET Z_PLIST = ?", blob: BinaryPropertyListWriter.write(metadata.propertyList))
        let again = try CoreDataStoreFile.read(at: url).metadata
        #expect(again == metadata)
        #expect(again.custom["com.example.tags"] == .array([.string("a"), .integer(2)]))
    }
}
