import Foundation
@testable import PostgresBackend
import StoreAPI
import StoreTestSupport
import Testing

/// Stores over TLS, against a second test server with `ssl=on` and a certificate signed by a certificate authority
/// the test made: `sslmode=require` and `verify-full` in the URL work, a root certificate that did not sign the
/// server's certificate is refused with an error saying why, and `require` against a server without TLS fails.
@Suite(
    .enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason),
    .enabled(if: PostgresTestServer.isOpenSSLAvailable, PostgresTestServer.openSSLSkipReason)
)
struct PostgresTLSTests {
    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Note", attributes: [
                AttributeDescription(name: "title", type: .string), AttributeDescription(name: "rank", type: .integer64),
            ]),
        ])
    }

    /// A new store's URL on `server`, with a password the server ignores (trust) and `parameters` appended.
    static func url(_ server: PostgresTestServer, _ label: String, _ parameters: [(String, String)]) throws -> URL {
        var c = try #require(URLComponents(url: server.storeURL(label), resolvingAgainstBaseURL: false))
        c.password = "pw-secret"
        c.queryItems = (c.queryItems ?? []) + parameters.map { URLQueryItem(name: $0.0, value: $0.1) }
        return try #require(c.url)
    }

    /// Whether the server sees the connection of `location` as encrypted.
    static func isEncrypted(_ location: PostgresLocation) throws -> Bool {
        let c = try PostgresConnection(location, connectTimeout: 10)
        defer { c.close() }
        return try c.execute("SELECT ssl FROM pg_catalog.pg_stat_ssl WHERE pid = pg_backend_pid()").text(0, 0) == "t"
    }

    /// A store created, saved to and read back over TLS, with the server's certificate verified against the root
    /// that signed it (`verify-full`: signature and host name) and, in a second coordinator, merely required.
    @Test func storeWorksOverTLS() throws {
        let server = try PostgresTestServer.sharedTLS()
        let certificates = try #require(server.certificates)
        let url = try Self.url(server, "tls", [("sslmode", "verify-full"), ("sslrootcert", certificates.rootCertificate.path)])
        defer { try? PostgresStoreBackend().destroyStore(at: url) }
        #expect(try Self.isEncrypted(PostgresLocation(url)))
        let registry = BackendRegistry(backends: [PostgresStoreBackend()])
        let writer = StoreCoordinator(schema: try Self.schema(), registry: registry)
        try writer.addStore(StoreDescription(url: url, type: PostgresStoreBackend.typeIdentifier))
        let ctx = writer.newContext()
        for i in 0..<3 { try ctx.insert("Note", ["title": .string("over TLS \(i)"), "rank": .integer64(Int64(i))]) }
        try ctx.save()

        var required = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
        required.queryItems = (required.queryItems ?? []).filter { $0.name != "sslrootcert" && $0.name != "sslmode" }
            + [URLQueryItem(name: "sslmode", value: "require")]
        let requiredURL = try #require(required.url)
        #expect(try Self.isEncrypted(PostgresLocation(requiredURL)))
        let reader = StoreCoordinator(schema: try Self.schema(), registry: registry)
        try reader.addStore(StoreDescription(url: requiredURL, type: PostgresStoreBackend.typeIdentifier))
        let readerContext = reader.newContext()
        let titles = try readerContext.fetch(FetchRequest(entity: "Note", sortDescriptors: [SortKey("rank")]))
            .map { try $0.value(forKey: "title") }
        #expect(titles == [.string("over TLS 0"), .string("over TLS 1"), .string("over TLS 2")])
    }

    /// `verify-full` with a root certificate that did not sign the server's: the open fails with a typed error
    /// naming the server and saying the certificate did not verify, never showing the password.
    @Test func wrongRootCertificateIsRefused() throws {
        let server = try PostgresTestServer.sharedTLS()
        let certificates = try #require(server.certificates)
        let url = try Self.url(server, "tlswrong", [("sslmode", "verify-full"),
                                                   ("sslrootcert", certificates.otherRootCertificate.path)])
        #expect {
            _ = try PostgresStoreBackend().open(at: url, options: StoreOptions(timeout: 10), creating: nil)
        } throws: { error in
            guard case StoreError.io = error else { return false }
            let text = "\(error)"
            return text.contains("127.0.0.1 port \(server.port)") && text.contains("certificate") && !text.contains("pw-secret")
        }
    }

    /// `sslmode=require` against a server without TLS fails, saying the server does not do TLS.
    @Test func requireAgainstAServerWithoutTLSFails() throws {
        let server = try PostgresTestServer.shared()
        let url = try Self.url(server, "notls", [("sslmode", "require")])
        #expect {
            _ = try PostgresStoreBackend().open(at: url, options: StoreOptions(timeout: 10), creating: nil)
        } throws: { error in
            guard case StoreError.io = error else { return false }
            let text = "\(error)"
            return text.contains("127.0.0.1 port \(server.port)") && text.contains("SSL") && !text.contains("pw-secret")
        }
    }
}
