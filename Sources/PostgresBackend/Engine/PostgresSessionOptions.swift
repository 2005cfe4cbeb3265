import Foundation
import StoreAPI

/// The timeouts a store's connections use, from its description's options and its URL.
///
/// - Connect: the URL's `connect_timeout`, else `postgres.connect_timeout` in ``StoreAPI/StoreOptions/backend``,
///   else ``StoreAPI/StoreOptions/timeout`` (seconds; libpq counts whole seconds, so at least 1).
/// - Statements: the URL's `statement_timeout`, else `postgres.statement_timeout` (seconds), else none. The server
///   cancels a statement that runs longer; the save or fetch fails with a typed error saying so.
/// - Answers: the client waits for the server at most the statement timeout plus ``answerGrace``, or
///   ``defaultAnswerTimeout`` without one (see ``answerTimeout(statementTimeoutMilliseconds:)``); a server that
///   stops answering (its process stopped or hung) fails the call with a typed error, and the connection is given up.
struct PostgresSessionOptions: Sendable, Hashable {
    /// How much longer than the statement timeout the client waits: long enough for the server's cancel to arrive
    /// first whenever the server runs at all, so a slow statement is reported as the timeout it is.
    static let answerGrace: Double = 5

    /// How long the client waits for an answer when no statement timeout is set: a bound on a stopped server, far
    /// beyond what a store's statements take (a longer statement needs a statement timeout that long).
    static let defaultAnswerTimeout: Double = 600

    /// The seconds the client waits for the server's answer to any one call, given the statement timeout in
    /// milliseconds (`nil` or 0: none).
    static func answerTimeout(statementTimeoutMilliseconds ms: Int?) -> Double {
        guard let ms, ms > 0 else { return defaultAnswerTimeout }
        return Double(ms) / 1000 + answerGrace
    }

    var connectTimeout: Double
    var statementTimeoutMilliseconds: Int?

    init(connectTimeout: Double, statementTimeoutMilliseconds: Int? = nil) {
        self.connectTimeout = connectTimeout
        self.statementTimeoutMilliseconds = statementTimeoutMilliseconds
    }

    /// Reads the options; a value that is not a number of seconds is ``StoreAPI/StoreError/invalidArgument(_:)``
    /// naming the option.
    init(_ options: StoreOptions, location: PostgresLocation) throws {
        func seconds(_ key: String) throws -> Double? {
            guard let text = options.backend[key] else { return nil }
            guard let v = Double(text.trimmingCharacters(in: .whitespaces)), v >= 0, v < 1e6 else {
                throw StoreError.invalidArgument("\(location.redacted): the option \(key) must be a number of seconds, not '\(text)'")
            }
            return v
        }
        connectTimeout = try seconds(PostgresStoreBackend.connectTimeoutOptionKey) ?? options.timeout
        statementTimeoutMilliseconds = try location.statementTimeoutMilliseconds
            ?? seconds(PostgresStoreBackend.statementTimeoutOptionKey).map { Int(($0 * 1000).rounded()) }
    }
}
