import Foundation

/// A private PostgreSQL server for the `postgres` and `sync` sections: a cluster in a temporary directory (`initdb -A trust`),
/// on a Unix socket there and a free loopback port, as root run as the `postgres` user (PostgreSQL refuses root),
/// under a shell watchdog that stops it and deletes the cluster when storebench is gone, however it ended.
///
/// The tests' starter (`PostgresTestServer` in StoreTestSupport) does the same; it is not shared because the test
/// support target is not a product of the package (and links the Testing module), so this package cannot depend on
/// it. Unlike the tests' cluster this one keeps `fsync` on — the figures are of a server as it runs — and reports
/// its processes' CPU time, so that every figure counts the server's work beside the client's. Autovacuum is off:
/// its workers would vacuum and analyze each freshly loaded table while a later row is measured, and their CPU time
/// would count against whichever row that is.
final class BenchPostgresServer {
    let directory: URL
    let port: Int
    let dataDirectory: URL
    private let watchdog: Process

    /// Where the server binaries are, or `nil` (the section then skips, saying so).
    static let binDirectory: URL? = {
        let fm = FileManager.default
        func has(_ dir: String) -> URL? {
            fm.isExecutableFile(atPath: dir + "/initdb") && fm.isExecutableFile(atPath: dir + "/postgres")
                ? URL(fileURLWithPath: dir, isDirectory: true) : nil
        }
        if let env = ProcessInfo.processInfo.environment["STOREAPI_PG_BINDIR"], let d = has(env) { return d }
        let versions = ((try? fm.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).compactMap(Int.init).sorted(by: >)
        for v in versions { if let d = has("/usr/lib/postgresql/\(v)/bin") { return d } }
        for dir in ["/usr/local/bin", "/opt/homebrew/bin", "/usr/bin"] { if let d = has(dir) { return d } }
        return nil
    }()

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    init() throws {
        guard let bin = Self.binDirectory else { throw Failure(description: "PostgreSQL server binaries not found") }
        let asPostgres = getuid() == 0
        directory = URL(fileURLWithPath: "/tmp/storebench-pg-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if asPostgres { try Self.run(["/bin/chown", "postgres:", directory.path], asPostgres: false) }
        port = try Self.freePort()
        dataDirectory = directory.appendingPathComponent("data")
        try Self.run([bin.appendingPathComponent("initdb").path, "-D", dataDirectory.path, "-A", "trust", "-U", "postgres",
                      "-E", "UTF8", "--locale=C", "--no-sync"], asPostgres: asPostgres)
        let q = { (s: String) in "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let script = """
            \(q(bin.appendingPathComponent("postgres").path)) -D \(q(dataDirectory.path)) -k \(q(directory.path)) -p \(port) \
            -c listen_addresses=127.0.0.1 -c max_connections=50 -c shared_buffers=128MB -c autovacuum=off >\(q(directory.path))/server.log 2>&1 &
            pg=$!
            alive() { kill -0 "$1" 2>/dev/null || [ -d "/proc/$1" ]; }
            while alive \(getpid()) && kill -0 $pg 2>/dev/null; do sleep 1; done
            kill -INT $pg 2>/dev/null; wait $pg
            rm -rf \(q(directory.path))
            """
        watchdog = Process()
        watchdog.executableURL = URL(fileURLWithPath: asPostgres ? "/usr/sbin/runuser" : "/bin/sh")
        watchdog.arguments = (asPostgres ? ["-u", "postgres", "--", "/bin/sh"] : []) + ["-c", script]
        watchdog.standardInput = FileHandle.nullDevice
        watchdog.standardOutput = FileHandle.nullDevice
        watchdog.standardError = FileHandle.nullDevice
        try watchdog.run()
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if (try? Self.run([bin.appendingPathComponent("pg_isready").path, "-q", "-h", directory.path, "-p", String(port)],
                              asPostgres: false)) != nil { return }
            guard watchdog.isRunning else { break }
            usleep(100_000)
        }
        let log = (try? String(contentsOf: directory.appendingPathComponent("server.log"), encoding: .utf8)) ?? ""
        throw Failure(description: "the benchmark PostgreSQL server did not start:\n\(log)")
    }

    /// Stops the server (the watchdog sees it gone and removes the cluster).
    func stop() {
        if let pid = postmasterPID { kill(pid, SIGINT) }
        watchdog.waitUntilExit()
    }

    /// A URL for a store in schema `schema`, over the loopback port.
    func url(schema: String) -> URL {
        URL(string: "postgres://postgres@127.0.0.1:\(port)/postgres?schema=\(schema)") ?? directory
    }

    /// Runs `psql` with one command against the server's database (as this user: `\copy` files are this
    /// process's); returns its output.
    @discardableResult
    func psql(_ command: String) throws -> String {
        guard let bin = Self.binDirectory else { throw Failure(description: "PostgreSQL binaries not found") }
        return try Self.run([bin.appendingPathComponent("psql").path, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
                             "-p", String(port), "-U", "postgres", "-d", "postgres", "-c", command], asPostgres: false)
    }

    /// libpq connection parameters for the same server and database.
    var conninfo: String { "host=127.0.0.1 port=\(port) user=postgres dbname=postgres" }

    private var postmasterPID: pid_t? {
        let text = try? String(contentsOf: dataDirectory.appendingPathComponent("postmaster.pid"), encoding: .utf8)
        return text?.split(separator: "\n").first.flatMap { pid_t($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// CPU seconds the server has used so far: the postmaster with its reaped children, plus its live children
    /// (the backends serving connections, the WAL writer, the checkpointer).
    func cpuSeconds() -> Double {
        guard let root = postmasterPID else { return 0 }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var total = 0.0
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            // Fields after the command name: state, ppid, …; utime and stime are fields 14 and 15, cutime and cstime 16, 17.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 14, let ppid = pid_t(fields[1]) else { continue }
            let own = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
            if pid == root {
                total += own + (Double(fields[13]) ?? 0) + (Double(fields[14]) ?? 0)
            } else if ppid == root {
                total += own
            }
        }
        return total / ticks
    }

    /// Runs `body` and returns its result with the CPU seconds of this process and the server together, and the
    /// wall-clock seconds.
    func timing<T>(_ body: () throws -> T) rethrows -> (T, Timing) {
        let server = cpuSeconds()
        let (value, t) = try Measure.timing(body)
        return (value, Timing(cpu: t.cpu + cpuSeconds() - server, wall: t.wall))
    }

    @discardableResult
    static func run(_ arguments: [String], asPostgres: Bool) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: asPostgres ? "/usr/sbin/runuser" : arguments[0])
        p.arguments = asPostgres ? ["-u", "postgres", "--"] + arguments : Array(arguments.dropFirst())
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

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed") }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
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
}
