import Foundation
import Logging
import SQLiteBackend
import StoreAPI
import StoreTestSupport
import Testing

/// A store whose `-wal` was left by a connection that ended without closing (a crash, a kill) opens with every
/// committed transaction, and the recovery is logged at info; a store closed cleanly opens without that line.
@Suite struct SQLiteWALRecoveryTests {
    static let message = "recovered the -wal of a connection that ended without closing"

    @Test func aLeftoverWALIsRecoveredAndLogged() throws {
        let dir = try TemporaryDirectory("sqlite-wal-recovery")
        let schema = try Fixture.schema()
        let live = dir.path("live.sqlite")
        let store = try Fixture.open(live, schema: schema)
        try store.save(StoreChanges(inserted: (1...20).map { schema.record("Tag", Int64($0)) }))
        // What a killed process leaves: the database file and its log as they are while a connection is open.
        let crashed = dir.path("crashed.sqlite")
        let walBytes = try #require(try FileManager.default.attributesOfItem(atPath: live.path + "-wal")[.size] as? Int)
        #expect(walBytes > 0, "the saves are still in the log")
        try FileManager.default.copyItem(at: live, to: crashed)
        try FileManager.default.copyItem(atPath: live.path + "-wal", toPath: crashed.path + "-wal")
        try store.close()

        let capture = LogCapture()
        let reopened = try withLogger(capture.logger()) { _ in
            try SQLiteStoreBackend().open(at: crashed, options: StoreOptions(), creating: nil)
        }
        defer { try? reopened.close() }
        #expect(try reopened.count(FetchRequest(entity: "Tag")) == 20)
        let line = try #require(capture.all.first { $0.message == Self.message })
        #expect(line.level == .info)
        #expect(line.metadata["store"] == crashed.path)
        #expect(line.metadata["wal_bytes"] == String(walBytes))
    }

    @Test func aCleanlyClosedStoreOpensWithoutARecovery() throws {
        let dir = try TemporaryDirectory("sqlite-wal-recovery")
        let schema = try Fixture.schema()
        let url = dir.path("clean.sqlite")
        let store = try Fixture.open(url, schema: schema)
        try store.save(StoreChanges(inserted: [schema.record("Tag", 1)]))
        try store.close()
        let capture = LogCapture()
        let reopened = try withLogger(capture.logger()) { _ in
            try SQLiteStoreBackend().open(at: url, options: StoreOptions(), creating: nil)
        }
        defer { try? reopened.close() }
        #expect(!capture.all.contains { $0.message == Self.message })
    }

    /// A second connection to a store another one has open finds a `-wal` in use: nothing was recovered.
    @Test func aLogInUseIsNotARecovery() throws {
        let dir = try TemporaryDirectory("sqlite-wal-recovery")
        let schema = try Fixture.schema()
        let url = dir.path("shared.sqlite")
        let first = try Fixture.open(url, schema: schema)
        defer { try? first.close() }
        try first.save(StoreChanges(inserted: [schema.record("Tag", 1)]))
        let capture = LogCapture()
        let second = try withLogger(capture.logger()) { _ in
            try SQLiteStoreBackend().open(at: url, options: StoreOptions(), creating: nil)
        }
        defer { try? second.close() }
        #expect(!capture.all.contains { $0.message == Self.message })
    }
}
