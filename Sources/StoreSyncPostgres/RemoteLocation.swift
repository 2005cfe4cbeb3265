import Foundation
import PostgresBackend
import StoreAPI
import StoreSync

/// Where a PostgreSQL remote lives, parsed from its URL:
/// `postgres://[user[:password]@]host[:port]/database[?schema=NAME][&statement_timeout=SECONDS][&libpq parameter=value…]`.
///
/// `schema` names the PostgreSQL schema that holds the remote's tables (`storesync` when left out);
/// `statement_timeout` bounds each statement (the server cancels it) and, with a grace period, each wait for the
/// server's answer (the client gives up); the other query items are libpq connection parameters passed as keywords,
/// never spliced into a connection string. The URL is read as the PostgreSQL store backend reads its own, and the
/// remote connects through that backend's connection, so both wait for a server the same bounded way. Credentials
/// left out of the URL come from libpq's usual places (`PGUSER`, `PGPASSWORD`, `~/.pgpass`). The password never
/// leaves this value except into libpq: ``displayName`` names the remote without it.
struct RemoteLocation: Sendable {
    /// The URL as given.
    let url: URL
    /// The PostgreSQL schema holding the remote's tables.
    let schema: String
    /// The server connection: the URL with the schema named.
    let connection: PostgresLocation

    /// The schema used when the URL names none.
    static let defaultSchema = "storesync"

    /// Whether `url` is a PostgreSQL URL.
    static func isPostgresURL(_ url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased() else { return false }
        return scheme == "postgres" || scheme == "postgresql"
    }

    init(_ url: URL) throws {
        guard Self.isPostgresURL(url), var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            throw SyncError.unsupportedRemote(SyncRemotes.displayName(of: url), reason: "not a postgres:// URL")
        }
        self.url = url
        var items = components.queryItems ?? []
        let schema = items.last(where: { $0.name == "schema" })?.value ?? Self.defaultSchema
        guard !schema.isEmpty, schema.utf8.count <= 63, !schema.utf8.contains(0) else {
            throw SyncError.unsupportedRemote(SyncRemotes.displayName(of: url), reason: "the schema name must be 1 to 63 bytes without NUL")
        }
        guard !schema.lowercased().hasPrefix("pg_"), schema.lowercased() != "information_schema" else {
            throw SyncError.unsupportedRemote(SyncRemotes.displayName(of: url), reason: "'\(schema)' is a PostgreSQL system schema")
        }
        items.removeAll { $0.name == "schema" }
        items.append(URLQueryItem(name: "schema", value: schema))
        // The server lists the remote's sessions as sync's, unless the URL names them.
        if !items.contains(where: { $0.name == "application_name" }) {
            items.append(URLQueryItem(name: "application_name", value: "storesync"))
        }
        components.queryItems = items
        guard let connectionURL = components.url else {
            throw SyncError.unsupportedRemote(SyncRemotes.displayName(of: url), reason: "the URL cannot name its schema")
        }
        do {
            connection = try PostgresLocation(connectionURL)
        } catch {
            throw SyncError.unsupportedRemote(SyncRemotes.displayName(of: url), reason: "\(error)")
        }
        self.schema = schema
    }

    /// The URL without its password.
    var displayName: String { SyncRemotes.displayName(of: url) }

    /// `message` without the password, should the server or libpq echo it.
    func scrub(_ message: String) -> String {
        guard let password = connection.parameters.last(where: { $0.0 == "password" })?.1, !password.isEmpty else { return message }
        return message.replacingOccurrences(of: password, with: "***")
    }

    /// `name` quoted as an SQL identifier.
    static func quote(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
}
