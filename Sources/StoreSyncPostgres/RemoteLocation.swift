import Foundation
import StoreAPI
import StoreSync

/// Where a PostgreSQL remote lives, parsed from its URL:
/// `postgres://[user[:password]@]host[:port]/database[?schema=NAME][&libpq parameter=value…]`.
///
/// `schema` names the PostgreSQL schema that holds the remote's tables (`storesync` when left out); the other query
/// items are libpq connection parameters passed as keywords, never spliced into a connection string. Credentials
/// left out of the URL come from libpq's usual places (`PGUSER`, `PGPASSWORD`, `~/.pgpass`). The password never
/// leaves this value except into libpq: ``displayName`` names the remote without it.
struct RemoteLocation: Sendable {
    /// The URL as given.
    let url: URL
    /// The PostgreSQL schema holding the remote's tables.
    let schema: String
    /// libpq keywords and values, in order.
    let parameters: [(String, String)]

    /// The schema used when the URL names none.
    static let defaultSchema = "storesync"

    /// Whether `url` is a PostgreSQL URL.
    static func isPostgresURL(_ url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased() else { return false }
        return scheme == "postgres" || scheme == "postgresql"
    }

    init(_ url: URL) throws {
        guard Self.isPostgresURL(url), let components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            throw SyncError.unsupportedRemote(SyncRemotes.displayName(of: url), reason: "not a postgres:// URL")
        }
        self.url = url
        var parameters: [(String, String)] = []
        if let host = components.host, !host.isEmpty { parameters.append(("host", host)) }
        if let port = components.port { parameters.append(("port", String(port))) }
        if let user = components.user, !user.isEmpty { parameters.append(("user", user)) }
        if let password = components.password { parameters.append(("password", password)) }
        let database = String(components.path.drop(while: { $0 == "/" }))
        if !database.isEmpty { parameters.append(("dbname", database)) }
        var schema = Self.defaultSchema
        for item in components.queryItems ?? [] where !item.name.isEmpty {
            let value = item.value ?? ""
            if item.name == "schema" {
                schema = value
            } else {
                parameters.removeAll { $0.0 == item.name }
                parameters.append((item.name, value))
            }
        }
        guard !schema.isEmpty, schema.utf8.count <= 63, !schema.utf8.contains(0) else {
            throw SyncError.unsupportedRemote(SyncRemotes.displayName(of: url), reason: "the schema name must be 1 to 63 bytes without NUL")
        }
        guard !schema.lowercased().hasPrefix("pg_"), schema.lowercased() != "information_schema" else {
            throw SyncError.unsupportedRemote(SyncRemotes.displayName(of: url), reason: "'\(schema)' is a PostgreSQL system schema")
        }
        self.schema = schema
        self.parameters = parameters
    }

    /// The URL without its password.
    var displayName: String { SyncRemotes.displayName(of: url) }

    /// The host connected to, for messages.
    var hostDescription: String {
        let host = parameters.last { $0.0 == "host" }?.1 ?? "the default socket"
        let port = parameters.last { $0.0 == "port" }?.1
        return port.map { "\(host) port \($0)" } ?? host
    }

    /// `message` without the password, should the server or libpq echo it.
    func scrub(_ message: String) -> String {
        guard let password = parameters.last(where: { $0.0 == "password" })?.1, !password.isEmpty else { return message }
        return message.replacingOccurrences(of: password, with: "***")
    }

    /// `name` quoted as an SQL identifier.
    static func quote(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
}
