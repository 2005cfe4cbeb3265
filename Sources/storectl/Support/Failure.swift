import ArgumentParser
import Foundation
import Logging
import StoreAPI

/// A command failed for a reason the message explains completely (exit code 2).
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ message: String) { description = message }
}

/// Exit codes, as documented in `storectl --help`.
enum ExitStatus {
    static let differences = ExitCode(1)
    static let failure = ExitCode(2)
    static let interrupted = ExitCode(130)
}

/// Runs a command body, turning every error into a message on standard error and exit code 2 (130 when the user
/// interrupted), instead of ArgumentParser's generic exit code 1, which storectl reserves for "differences found".
/// The framework's log lines go to standard error at `logLevel` (else `STORECTL_LOG_LEVEL`, else warning), never to
/// standard output, which holds the command's results.
func runCommand(_ name: String, logLevel: Logger.Level? = nil, _ body: () throws -> Void) throws {
    Interrupt.install()
    FaultGuard.install(command: name)
    do {
        try withLogger(CommandLogging.logger(command: name, level: logLevel)) { _ in try body() }
    } catch let code as ExitCode {
        throw code
    } catch {
        if Interrupt.wasRequested, case StoreError.cancelled = error {
            Console.error("storectl \(name): interrupted; nothing was left behind")
            throw ExitStatus.interrupted
        }
        Console.error("storectl \(name): error: \(message(for: error))")
        throw ExitStatus.failure
    }
}

/// The sentence an error deserves.
func message(for error: Error) -> String {
    switch error {
    case let e as StoreError: return e.description
    case let e as SchemaError: return e.description
    case let e as InterchangeError:
        return e.others.isEmpty ? e.description : "\(e.problemCount) problems, nothing was imported:\n" + e.description
    case let e as CommandFailure: return e.description
    case let e as CocoaError:
        if let path = e.userInfo[NSFilePathErrorKey] as? String { return "\(path): \(e.localizedDescription)" }
        return e.localizedDescription
    default: return "\(error)"
    }
}

/// storectl's logger: swift-log's stream handler on standard error.
enum CommandLogging {
    static let environmentVariable = "STORECTL_LOG_LEVEL"

    static func logger(command: String, level: Logger.Level?) throws -> Logger {
        var resolved = Logger.Level.warning
        if let level {
            resolved = level
        } else if let text = ProcessInfo.processInfo.environment[environmentVariable], !text.isEmpty {
            guard let fromEnvironment = Logger.Level(rawValue: text.lowercased()) else {
                throw CommandFailure("\(environmentVariable)=\(text) is not a log level (trace, debug, info, notice, warning, error, critical)")
            }
            resolved = fromEnvironment
        }
        var logger = Logger(label: "storectl") { label in StreamLogHandler.standardError(label: label) }
        logger.logLevel = resolved
        logger[metadataKey: "command"] = .string(command)
        return logger
    }
}
