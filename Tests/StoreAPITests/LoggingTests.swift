import Foundation
import Logging
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// The framework logs what an operator needs through the logger it is given (or `Logger.current`): operations with
/// their durations, stores opened and closed, recoveries — and never a record's values.
@Suite struct LoggingTests {
    static let schema: Schema = {
        do {
            return try Schema(entities: [
                EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)]),
            ])
        } catch {
            preconditionFailure("the test schema is valid: \(error)")
        }
    }()

    static func memoryURL() -> URL { URL(fileURLWithPath: "/memory/logging-\(UUID().uuidString)") }

    /// A coordinator given a logger logs the store it created and the migration, with where to and how long it took;
    /// the secret in a record's value never appears in any line.
    @Test func coordinatorLogsOperationsToTheGivenLogger() throws {
        let capture = LogCapture()
        let coordinator = StoreCoordinator(schema: Self.schema, logger: capture.logger())
        let source = Self.memoryURL(), destination = Self.memoryURL()
        let store = try coordinator.addStore(StoreDescription(url: source, type: InMemoryBackend.typeIdentifier))
        let context = coordinator.newContext()
        _ = try context.insert("Note", ["text": "secret-value-4711"])
        try context.save()
        let moved = try coordinator.migrateStore(store, to: destination)
        try coordinator.removeStore(moved)
        defer { for url in [source, destination] { try? InMemoryBackend().destroyStore(at: url) } }

        let lines = capture.all
        #expect(lines.contains { $0.message == "store created" && $0.metadata["store"] == source.path })
        let finished = try #require(lines.first { $0.message == "migrate store finished" })
        #expect(finished.level == .debug)
        #expect(finished.metadata["destination"] == destination.path)
        #expect(Int(finished.metadata["duration_ms"] ?? "") != nil)
        #expect(lines.contains { $0.message == "store opened" && $0.metadata["store"] == destination.path })
        #expect(lines.contains { $0.message == "store closed" && $0.metadata["store"] == destination.path })
        #expect(!lines.contains { $0.message.contains("secret-value") || $0.metadata.values.contains { $0.contains("secret-value") } })
        // Routine work is never above debug: a library must not flood an application's logs.
        #expect(lines.allSatisfy { $0.level <= .debug })
    }

    /// A failed operation logs why, naming the path, and still throws the same error.
    @Test func failedOperationIsLoggedAndThrown() throws {
        let capture = LogCapture()
        let operations = StoreOperations(logger: capture.logger())
        let missing = Self.memoryURL()
        #expect(throws: StoreError.self) {
            try operations.destroyStore(at: missing, type: InMemoryBackend.typeIdentifier)
        }
        let failed = try #require(capture.all.first { $0.message == "destroy store failed" })
        #expect(failed.metadata["store"] == missing.path)
        #expect(failed.metadata["error"]?.isEmpty == false)
    }

    /// Without a logger of its own, the framework logs to the caller's task-local `Logger.current`.
    @Test func operationsWithoutALoggerUseLoggerCurrent() throws {
        let capture = LogCapture()
        let url = Self.memoryURL()
        try withLogger(capture.logger()) { _ in
            let coordinator = StoreCoordinator(schema: Self.schema)
            let store = try coordinator.addStore(StoreDescription(url: url, type: InMemoryBackend.typeIdentifier))
            try coordinator.removeStore(store)
            try coordinator.destroyStore(at: url)
        }
        #expect(capture.all.contains { $0.message == "destroy store finished" && $0.metadata["store"] == url.path })
    }

    /// Removing staging an interrupted operation left behind is a recovery, logged at info with the path.
    @Test func removedStagingIsLoggedAsARecovery() throws {
        let tmp = try TemporaryDirectory("logging")
        let dir = tmp.url
        let leftover = dir.appendingPathComponent("\(AtomicFile.stagingPrefix)\(UUID().uuidString)-a.sqlite")
        try Data("x".utf8).write(to: leftover)
        let capture = LogCapture()
        withLogger(capture.logger(level: .info)) { _ in
            AtomicFile.removeStaleStaging(near: dir.appendingPathComponent("a.sqlite"))
        }
        #expect(!FileManager.default.fileExists(atPath: leftover.path))
        let line = try #require(capture.all.first)
        #expect(line.level == .info)
        #expect(line.metadata["path"] == leftover.path)
    }
}
