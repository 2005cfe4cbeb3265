import Foundation
import StoreAPI

/// The timeouts a store's connections use, from its description's options and its URL.
///
/// - Connect: the URL's `connect_timeout`, else `postgres.connect_timeout` in ``StoreAPI/StoreOptions/backend``,
///   else ``StoreAPI/StoreOptions/timeout`` (seconds; libpq counts whole seconds, so at least 1).
/// - Statements: the URL's `statement_timeout`, else `postgres.statement_timeout` (seconds), else none. The server
///   cancels a statement that runs longer; the save or fetch fails with a typed error saying so.
struct PostgresSessionOptions: Sendable, Hashable {
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
