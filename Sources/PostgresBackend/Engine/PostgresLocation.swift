import Foundation
@_spi(BackendKit) import StoreAPI

/// Where a PostgreSQL store lives, parsed from its URL:
/// `postgres://[user[:password]@]host[:port]/database?schema=NAME[&libpq parameter=value…]`.
///
/// `postgresql://` is accepted too. The query's `schema` names the PostgreSQL schema that holds the store; the other
/// query items are libpq connection parameters (`host` a socket directory, `port`, `sslmode`, `connect_timeout`,
/// `application_name`, …) passed to `PQconnectdbParams` as keywords, so no value is ever spliced into a connection
/// string. Two are the backend's own: `statement_timeout` (seconds; every statement of the store's connection is
/// cancelled past it) is sent as a server setting. Credentials left out of the URL come from libpq's usual places:
/// `PGUSER`, `PGPASSWORD`, `~/.pgpass`.
///
/// The password never leaves this value except into libpq: ``redacted`` is the only form that names the store in
/// errors, logs and output.
package struct PostgresLocation: Sendable, Hashable {
    /// The URL as given.
    package let url: URL
    /// The PostgreSQL schema holding the store.
    package let schema: String
    /// libpq keywords and values, in order.
    package let parameters: [(String, String)]
    /// `statement_timeout` in milliseconds, when the URL sets one.
    package let statementTimeoutMilliseconds: Int?

    /// The URL schemes this backend answers to.
    static let schemes: Set<String> = ["postgres", "postgresql"]

    /// The longest identifier PostgreSQL keeps (`NAMEDATALEN - 1` bytes); longer ones would be truncated silently.
    static let maxIdentifierBytes = 63

    package static func == (a: PostgresLocation, b: PostgresLocation) -> Bool {
        a.url == b.url
    }

    package func hash(into hasher: inout Hasher) { hasher.combine(url) }

    /// Whether `url` is a PostgreSQL URL at all (so file backends and this one never argue over a path).
    static func isPostgresURL(_ url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased() else { return false }
        return schemes.contains(scheme)
    }

    /// Parses `url`; a URL that is not a usable PostgreSQL store URL is ``StoreError/invalidArgument(_:)`` naming
    /// what is wrong (and, through ``redact(_:)``, never its password).
    package init(_ url: URL) throws {
        guard Self.isPostgresURL(url),
              let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        else {
            throw StoreError.invalidArgument("\(Self.redact(url)): not a postgres:// URL")
        }
        self.url = url
        var parameters: [(String, String)] = []
        if let host = components.host, !host.isEmpty { parameters.append(("host", host)) }
        if let port = components.port { parameters.append(("port", String(port))) }
        if let user = components.user, !user.isEmpty { parameters.append(("user", user)) }
        if let password = components.password { parameters.append(("password", password)) }
        let database = String(components.path.drop(while: { $0 == "/" }))
        if !database.isEmpty { parameters.append(("dbname", database)) }
        var schema: String?
        var timeout: Int?
        for item in components.queryItems ?? [] {
            let value = item.value ?? ""
            switch item.name {
            case "schema":
                schema = value
            case "statement_timeout":
                guard let seconds = Double(value), seconds >= 0, seconds < 1e6 else {
                    throw StoreError.invalidArgument("\(Self.redact(url)): statement_timeout must be a number of seconds")
                }
                timeout = Int((seconds * 1000).rounded())
            default:
                guard !item.name.isEmpty else { continue }
                parameters.removeAll { $0.0 == item.name }
                parameters.append((item.name, value))
            }
        }
        guard let schema, !schema.isEmpty else {
            throw StoreError.invalidArgument("\(Self.redact(url)): the URL names no schema (add ?schema=NAME)")
        }
        guard schema.utf8.count <= Self.maxIdentifierBytes, !schema.utf8.contains(0) else {
            throw StoreError.invalidArgument(
                "\(Self.redact(url)): the schema name must be 1 to \(Self.maxIdentifierBytes) bytes without NUL")
        }
        guard !schema.hasPrefix("pg_"), schema != "information_schema" else {
            throw StoreError.invalidArgument("\(Self.redact(url)): '\(schema)' is a PostgreSQL system schema")
        }
        self.schema = schema
        self.parameters = parameters
        self.statementTimeoutMilliseconds = timeout
    }

    /// The URL of another schema on the same server and database (staging copies).
    func withSchema(_ name: String) -> URL {
        guard var c = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        var items = (c.queryItems ?? []).filter { $0.name != "schema" }
        items.append(URLQueryItem(name: "schema", value: name))
        c.queryItems = items
        return c.url ?? url
    }

    /// The host the connection goes to, for messages: the URL's host, a `host=` parameter, or libpq's default.
    package var hostDescription: String {
        let host = parameters.last { $0.0 == "host" }?.1 ?? "the default socket"
        let port = parameters.last { $0.0 == "port" }?.1
        return port.map { "\(host) port \($0)" } ?? host
    }

    /// The URL without its password.
    package var redacted: String { Self.redact(url) }

    /// `url` without a password: ``URL/storeName``, the framework's one redaction of server URLs.
    static func redact(_ url: URL) -> String { url.storeName }
}
