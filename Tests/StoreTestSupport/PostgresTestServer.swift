import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A private PostgreSQL server for the tests: a cluster in a temporary directory (`initdb -A trust`, fsync off),
/// listening on a Unix socket in that directory and a free loopback port, started once per test process on first
/// use.
///
/// PostgreSQL refuses to run as root, so as root the cluster belongs to the `postgres` user and every server
/// command runs through `runuser -u postgres --`. The server runs under a small shell watchdog that stops it
/// (fast shutdown) and deletes the cluster when the test process is gone — however it ended, a crash included —
/// so no server outlives its tests.
///
/// Each test makes its own store with ``storeURL(_:)``: a schema of its own in the one database.
/// Without the server binaries, ``isAvailable`` is false and PostgreSQL tests skip, saying why — unless
/// `STOREAPI_REQUIRE_POSTGRES=1` (set by `scripts/test.sh`, so CI never skips them silently).
public final class PostgresTestServer: Sendable {
    /// The directory holding the socket and the cluster.
    public let directory: URL
    /// The loopback TCP port.
    public let port: Int
    /// The server's process ID (the watchdog's child).
    public let database = "postgres"
    public let user = "postgres"

    /// Where the server binaries are (`STOREAPI_PG_BINDIR`, `pg_config --bindir`, `/usr/lib/postgresql/N/bin`),
    /// or `nil`.
    public static let binDirectory: URL? = findBinaries()

    /// Whether PostgreSQL tests can run here; when `STOREAPI_REQUIRE_POSTGRES=1`, they run and fail without it.
    public static var isAvailable: Bool {
        binDirectory != nil || ProcessInfo.processInfo.environment["STOREAPI_REQUIRE_POSTGRES"] == "1"
    }

    /// Why PostgreSQL tests skip here.
    public static let skipReason: Comment = "PostgreSQL server binaries not found (install postgresql, or set STOREAPI_PG_BINDIR)"

    /// The server of this test process, started on first use.
    public static func shared() throws -> PostgresTestServer {
        try started.get()
    }

    private static let started: Result<PostgresTestServer, Error> = Result { try PostgresTestServer(tls: false) }

    /// A second server of this test process that also speaks TLS (`ssl=on`, with a certificate for `127.0.0.1` and
    /// `localhost` signed by a certificate authority made for it with `openssl`), started on first use. Its
    /// ``certificates`` name the files a client needs.
    public static func sharedTLS() throws -> PostgresTestServer {
        try startedTLS.get()
    }

    private static let startedTLS: Result<PostgresTestServer, Error> = Result { try PostgresTestServer(tls: true) }

    /// Whether `openssl` is here to make the TLS server's certificates.
    public static let isOpenSSLAvailable: Bool = (try? run(["openssl", "version"], asPostgres: false)) != nil

    /// Why TLS tests skip here.
    public static let openSSLSkipReason: Comment = "openssl not found: it makes the TLS test server's certificates"

    /// The files of a TLS server's certificates, all PEM.
    public struct Certificates: Sendable {
        /// The certificate authority that signed the server's certificate: the `sslrootcert` that verifies it.
        public let rootCertificate: URL
        /// Another certificate authority, which signed nothing of this server: a root that fails to verify it.
        public let otherRootCertificate: URL
    }

    /// The TLS files, for a server started by ``sharedTLS()``; `nil` for one without TLS.
    public let certificates: Certificates?

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private init(tls: Bool) throws {
        guard let bin = Self.binDirectory else { throw Failure(description: "\(Self.skipReason)") }
        let asPostgres = getuid() == 0
        directory = URL(fileURLWithPath: "/tmp/storeapi-pg-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if asPostgres {
            try Self.run(["chown", "postgres:", directory.path], asPostgres: false)
        }
        port = try Self.freePort()
        let data = directory.appendingPathComponent("data").path
        try Self.run([bin.appendingPathComponent("initdb").path, "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8",
                      "--locale=C", "--no-sync"], asPostgres: asPostgres)
        let postgres = bin.appendingPathComponent("postgres").path
        var tlsSettings = ""
        if tls {
            let files = try Self.makeCertificates(in: directory, asPostgres: asPostgres)
            certificates = files.certificates
            tlsSettings = "-c ssl=on -c ssl_cert_file=\(Self.shellQuote(files.serverCertificate.path)) "
                + "-c ssl_key_file=\(Self.shellQuote(files.serverKey.path)) "
        } else {
            certificates = nil
        }
        // The watchdog: the server in the background; when this process (or the server) is gone, stop the server
        // and remove the cluster. `kill -0` cannot probe another user's process, so /proc is asked too.
        let parent = getpid()
        let script = """
            \(Self.shellQuote(postgres)) -D \(Self.shellQuote(data)) -k \(Self.shellQuote(directory.path)) -p \(port) \
            -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
            -c max_connections=200 -c shared_buffers=32MB \(tlsSettings)>\(Self.shellQuote(directory.path))/server.log 2>&1 &
            pg=$!
            alive() { kill -0 "$1" 2>/dev/null || [ -d "/proc/$1" ]; }
            while alive \(parent) && kill -0 $pg 2>/dev/null; do sleep 1; done
            kill -INT $pg 2>/dev/null; wait $pg
            rm -rf \(Self.shellQuote(directory.path))
            """
        let watchdog = Process()
        if asPostgres {
            watchdog.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            watchdog.arguments = ["-u", "postgres", "--", "/bin/sh", "-c", script]
        } else {
            watchdog.executableURL = URL(fileURLWithPath: "/bin/sh")
            watchdog.arguments = ["-c", script]
        }
        watchdog.standardInput = FileHandle.nullDevice
        watchdog.standardOutput = FileHandle.nullDevice
        watchdog.standardError = FileHandle.nullDevice
        try watchdog.run()
        let isready = bin.appendingPathComponent("pg_isready").path
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if (try? Self.run([isready, "-q", "-h", directory.path, "-p", String(port)], asPostgres: false)) != nil { return }
            guard watchdog.isRunning else { break }
            usleep(100_000)
        }
        let log = (try? String(contentsOf: directory.appendingPathComponent("server.log"), encoding: .utf8)) ?? ""
        throw Failure(description: "the test PostgreSQL server did not start:\n\(log)")
    }

    /// A URL for a new store in a schema of its own, over the loopback port.
    public func storeURL(_ label: String = "t") -> URL {
        let schema = "\(label.prefix(20))_\(UUID().uuidString.prefix(12).lowercased())"
        return URL(string: "postgres://\(user)@127.0.0.1:\(port)/\(database)?schema=\(schema)") ?? directory
    }

    /// The same kind of URL over the Unix socket (`host=` the socket directory).
    public func socketStoreURL(_ label: String = "s") -> URL {
        let schema = "\(label.prefix(20))_\(UUID().uuidString.prefix(12).lowercased())"
        var c = URLComponents()
        c.scheme = "postgres"
        c.host = ""
        c.path = "/\(database)"
        c.queryItems = [URLQueryItem(name: "host", value: directory.path), URLQueryItem(name: "port", value: String(port)),
                        URLQueryItem(name: "user", value: user), URLQueryItem(name: "schema", value: schema)]
        return c.url ?? directory
    }

    // MARK: Helpers

    /// Makes a certificate authority, a server key and certificate for `127.0.0.1` and `localhost` signed by it,
    /// and a second, unrelated authority, in `directory`; the server's key readable by the server alone (PostgreSQL
    /// refuses a key others can read).
    private static func makeCertificates(in directory: URL, asPostgres: Bool) throws
        -> (certificates: Certificates, serverCertificate: URL, serverKey: URL)
    {
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        for (name, subject) in [("ca", "/CN=StoreAPI test CA"), ("other-ca", "/CN=Another test CA")] {
            try run(["openssl", "req", "-x509"] + ec + ["-keyout", path("\(name).key"), "-out", path("\(name).crt"),
                     "-days", "2", "-subj", subject], asPostgres: false)
        }
        try run(["openssl", "req"] + ec + ["-keyout", path("server.key"), "-out", path("server.csr"), "-subj", "/CN=127.0.0.1"],
                asPostgres: false)
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(toFile: path("server.ext"), atomically: true, encoding: .utf8)
        try run(["openssl", "x509", "-req", "-in", path("server.csr"), "-CA", path("ca.crt"), "-CAkey", path("ca.key"),
                 "-CAcreateserial", "-out", path("server.crt"), "-days", "2", "-extfile", path("server.ext")], asPostgres: false)
        if asPostgres { try run(["chown", "postgres:", path("server.key"), path("server.crt")], asPostgres: false) }
        try run(["chmod", "600", path("server.key")], asPostgres: false)
        return (Certificates(rootCertificate: URL(fileURLWithPath: path("ca.crt")),
                             otherRootCertificate: URL(fileURLWithPath: path("other-ca.crt"))),
                URL(fileURLWithPath: path("server.crt")), URL(fileURLWithPath: path("server.key")))
    }

    @discardableResult
    static func run(_ arguments: [String], asPostgres: Bool) throws -> String {
        let p = Process()
        if asPostgres {
            p.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            p.arguments = ["-u", "postgres", "--"] + arguments
        } else {
            p.executableURL = URL(fileURLWithPath: arguments[0].hasPrefix("/") ? arguments[0] : "/usr/bin/env")
            p.arguments = arguments[0].hasPrefix("/") ? Array(arguments.dropFirst()) : arguments
        }
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard p.terminationStatus == 0 else {
            throw Failure(description: "\(arguments.joined(separator: " ")) exited with \(p.terminationStatus): \(text)")
        }
        return text
    }

    static func shellQuote(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    /// A loopback port nothing listens on: bound to port 0, read back, released.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed") }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw Failure(description: "bind() failed") }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        guard named == 0 else { throw Failure(description: "getsockname() failed") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    private static func findBinaries() -> URL? {
        let fm = FileManager.default
        func has(_ dir: String) -> URL? {
            fm.isExecutableFile(atPath: dir + "/initdb") && fm.isExecutableFile(atPath: dir + "/postgres")
                ? URL(fileURLWithPath: dir, isDirectory: true) : nil
        }
        if let env = ProcessInfo.processInfo.environment["STOREAPI_PG_BINDIR"], let d = has(env) { return d }
        if let out = try? run(["pg_config", "--bindir"], asPostgres: false),
           let d = has(out.trimmingCharacters(in: .whitespacesAndNewlines)) { return d }
        let versions = ((try? fm.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).compactMap(Int.init).sorted(by: >)
        for v in versions { if let d = has("/usr/lib/postgresql/\(v)/bin") { return d } }
        for dir in ["/usr/local/bin", "/opt/homebrew/bin", "/usr/bin"] { if let d = has(dir) { return d } }
        return nil
    }
}
