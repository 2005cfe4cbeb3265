import ArgumentParser
import Foundation
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
func runCommand(_ name: String, _ body: () throws -> Void) throws {
    Interrupt.install()
    FaultGuard.install(command: name)
    do {
        try body()
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
        return e.others.isEmpty ? e.description : "\(e.all.count) problems, nothing was imported:\n" + e.description
    case let e as CommandFailure: return e.description
    case let e as CocoaError:
        if let path = e.userInfo[NSFilePathErrorKey] as? String { return "\(path): \(e.localizedDescription)" }
        return e.localizedDescription
    default: return "\(error)"
    }
}
