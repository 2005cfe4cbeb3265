import Foundation
import Logging

/// What the framework logs, and how: through swift-log, at the levels its library guidelines give.
///
/// The framework never makes a logger of its own (that would take the choice of handler and level away from the
/// application). It logs to the logger it was given — `StoreCoordinator(schema:registry:logger:)`,
/// `StoreOperations(registry:logger:)` — and otherwise to swift-log's task-local `Logger.current`, so an
/// application that binds one with `withLogger(_:_:)`, or bootstraps `LoggingSystem`, sees the framework's lines
/// with its own metadata. A given logger is bound as `Logger.current` for the length of the call, so backends,
/// which read `Logger.current`, log to it too.
///
/// - `debug`: an operation started and finished, with its counts and duration; a store opened, created or closed.
/// - `info`: the framework recovered from an earlier failure (staging an interrupted operation left behind removed,
///   a `-wal` of a crashed connection recovered, reader slots of dead processes cleared).
/// - never: record values, metadata values, credentials, or anything per record.
struct OperationLog {
    private let logger: Logger
    private let operation: String
    private var metadata: Logger.Metadata
    private let start = ContinuousClock.now

    /// Logs that `operation` started, with `metadata` (paths, types) that the finishing line repeats.
    init(_ operation: String, _ metadata: Logger.Metadata, logger: Logger = .current) {
        self.logger = logger
        self.operation = operation
        self.metadata = metadata
        logger.debug("\(operation) started", metadata: metadata)
    }

    /// Logs that the operation finished, with `more` (counts) and how long it took.
    func finished(_ more: Logger.Metadata = [:]) {
        logger.debug("\(operation) finished", metadata: metadata.merging(more) { $1 }.merging(["duration_ms": "\(elapsedMilliseconds)"]) { $1 })
    }

    /// Logs that the operation failed and why (the error's description names files, never values).
    func failed(_ error: any Error) {
        logger.debug("\(operation) failed", metadata: metadata.merging(["error": "\(error)", "duration_ms": "\(elapsedMilliseconds)"]) { $1 })
    }

    /// Runs `body` between a started line (already logged) and a finished or failed one.
    func run<T>(_ body: () throws -> T, counts: (T) -> Logger.Metadata = { _ in [:] }) throws -> T {
        do {
            let result = try body()
            finished(counts(result))
            return result
        } catch {
            failed(error)
            throw error
        }
    }

    private var elapsedMilliseconds: String {
        let d = ContinuousClock.now - start
        let ms = Double(d.components.seconds) * 1_000 + Double(d.components.attoseconds) / 1e15
        return String(Int(ms.rounded()))
    }
}

/// Runs `body` with `logger` bound as swift-log's `Logger.current` when one is given, so that everything the body
/// calls (backends included) logs to it; with `nil`, the caller's `Logger.current` stays.
func withLogger<T>(ifGiven logger: Logger?, _ body: () throws -> T) throws -> T {
    guard let logger else { return try body() }
    return try withLogger(logger) { _ in try body() }
}

/// Runs `body` as one logged operation: with `logger` (when given) bound as `Logger.current`, between a started
/// line and a finished or failed one.
func loggedOperation<T>(_ operation: String, _ metadata: Logger.Metadata, logger: Logger?,
                        counts: (T) -> Logger.Metadata = { _ in [:] }, _ body: () throws -> T) throws -> T {
    try withLogger(ifGiven: logger) {
        try OperationLog(operation, metadata).run(body, counts: counts)
    }
}

extension URL {
    /// The path as log metadata.
    var logValue: Logger.MetadataValue { .string(storeName) }
}
