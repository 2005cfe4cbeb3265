@_spi(BackendKit) @testable import CoreDataBackend
import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// A Core Data store an app has open must not be destroyed, replaced or relocated from under it: its next commit
/// would go to deleted files. The probe sees an app's connection (here a plain SQLite connection in WAL mode, as
/// Core Data opens its stores) and the framework's own open store, and disturbs neither.
@Suite struct CoreDataInUseTests {
    /// A created Core Data store with a few records, closed.
    static func makeStore(in dir: TemporaryDirectory) throws -> URL {
        let url = dir.path("App.sqlite")
        let (coordinator, context, loaded) = try CoreDataWriteTests.coordinator(url, schema: try CoreDataWriteTests.schema())
        for i in 0..<3 { _ = try context.insert("Author", ["name": .string("author \(i)")]) }
        try context.save()
        try coordinator.removeStore(loaded)
        return url
    }

    /// A connection as an app's Core Data stack holds one: WAL mode, after a read.
    final class AppConnection {
        private var db: OpaquePointer?
        init(_ url: URL) throws {
            try #require(sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK)
            var statement: OpaquePointer?
            try #require(sqlite3_prepare_v2(db, "SELECT count(*) FROM Z_METADATA", -1, &statement, nil) == SQLITE_OK)
            #expect(sqlite3_step(statement) == SQLITE_ROW)
            sqlite3_finalize(statement)
        }
        func close() { sqlite3_close_v2(db); db = nil }
        deinit { if db != nil { sqlite3_close_v2(db) } }
    }

    static func expectLocked(_ error: StoreError?, _ url: URL, sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .locked(let at, _)? = error else {
            Issue.record("expected StoreError.locked, got \(String(describing: error))", sourceLocation: sourceLocation)
            return
        }
        #expect(at.path == url.path, sourceLocation: sourceLocation)
    }

    @Test func destroyReplaceAndRelocateRefuseAStoreAnAppHasOpen() throws {
        let dir = try TemporaryDirectory("coredata-inuse")
        let url = try Self.makeStore(in: dir)
        let other = dir.path("Other.sqlite")
        try FileManager.default.copyItem(at: url, to: other)
        let backend = CoreDataStoreBackend()
        let operations = StoreOperations(registry: BackendRegistry(backends: [backend]))
        #expect(try backend.isInUse(at: url) == false)

        let app = try AppConnection(url)
        #expect(try backend.isInUse(at: url))
        let before = ExternalDataFixture.hashes(dir.url).filter { !$0.key.hasSuffix("-shm") }
        Self.expectLocked(#expect(throws: StoreError.self) { try operations.destroyStore(at: url) }, url)
        Self.expectLocked(#expect(throws: StoreError.self) { try operations.replaceStore(at: url, with: other) }, url)
        Self.expectLocked(#expect(throws: StoreError.self) { try operations.relocateStore(from: url, to: dir.path("Moved.sqlite")) }, url)
        #expect(ExternalDataFixture.hashes(dir.url).filter { !$0.key.hasSuffix("-shm") } == before, "a refused operation changed a file")
        // The probe took nothing from the app: its connection still reads and writes.
        #expect(try backend.isInUse(at: url))

        app.close()
        #expect(try backend.isInUse(at: url) == false)
        try operations.destroyStore(at: url)
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test func theFrameworksOwnOpenStoreIsInUse() throws {
        let dir = try TemporaryDirectory("coredata-inuse")
        let url = try Self.makeStore(in: dir)
        let backend = CoreDataStoreBackend()
        let (coordinator, _, loaded) = try CoreDataWriteTests.coordinator(url, schema: try CoreDataWriteTests.schema())
        #expect(try backend.isInUse(at: url))
        try coordinator.removeStore(loaded)
        #expect(try backend.isInUse(at: url) == false)
    }
}
