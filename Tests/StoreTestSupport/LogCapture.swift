import Logging
import Synchronization

/// A swift-log handler that keeps every line, so a test can read what the framework logged.
public final class LogCapture: Sendable {
    /// One log line as the handler received it, metadata rendered as text.
    public struct Line: Sendable {
        public let level: Logger.Level
        public let message: String
        public let metadata: [String: String]
    }

    private let lines = Mutex<[Line]>([])

    public init() {}

    /// Every line logged so far, in order.
    public var all: [Line] { lines.withLock { $0 } }

    /// A logger whose lines (at `level` and above) this capture keeps.
    public func logger(level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: "test") { _ in Handler(capture: self) }
        logger.logLevel = level
        return logger
    }

    fileprivate func append(_ line: Line) { lines.withLock { $0.append(line) } }

    private struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            capture.append(Line(level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" }))
        }
    }
}
