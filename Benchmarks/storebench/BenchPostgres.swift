import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A private PostgreSQL server for the sync section: a cluster in a temporary directory on a Unix socket and a free
/// loopback port, stopped and deleted by ``stop()``. As root, the cluster belongs to the `postgres` user (PostgreSQL
/// refuses to run as root). `nil` from ``start()`` when the server binaries are not installed.
final class BenchPostgres {
    let directory: URL
    let port: Int
    let bin: URL
    private let asPostgres: Bool
    private var server: Process?

    static func start() throws -> BenchPostgres? {
        guard let bin = findBinaries() else { return nil }
        return try BenchPostgres(bin: bin)
    }

    private init(bin: URL) throws {
        self.bin = bin
        asPostgres = getuid() == 0
        directory = URL(fileURLWithPath: "/tmp/storebench-pg-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if asPostgres { try Self.run(["/bin/chown", "postgres:", directory.path], asPostgres: false) }
        port = Int.random(in: 20_000..<60_000)
        let data = directory.appendingPathComponent("data").path
        try Self.run([bin.appendingPathComponent("initdb").path, "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8",
                      "--locale=C", "--no-sync"], asPostgres: asPostgres)
        // Durable commits as a default server has them: the figures include what a real server of record pays. The
        // server runs as a child of this process until stop() shuts it down: started through `pg_ctl start`, the
        // daemonised server kept the wait for pg_ctl from ever returning.
        let server = Process()
        let command = [bin.appendingPathComponent("postgres").path, "-D", data, "-k", directory.path, "-p", String(port),
                       "-c", "listen_addresses=127.0.0.1"]
        if asPostgres {
            server.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            server.arguments = ["-u", "postgres", "--"] + command
        } else {
            server.executableURL = URL(fileURLWithPath: command[0])
            server.arguments = Array(command.dropFirst())
        }
        server.standardInput = FileHandle.nullDevice
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        self.server = server
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if (try? Self.run([bin.appendingPathComponent("pg_isready").path, "-q", "-h", directory.path, "-p", String(port)],
                              asPostgres: false)) != nil { return }
            guard server.isRunning else { break }
            usleep(100_000)
        }
        stop()
        throw BenchFailure("the benchmark's PostgreSQL server did not start")
    }

    /// A URL of the server over loopback, with `schema`.
    func url(schema: String) -> URL {
        URL(string: "postgres://postgres@127.0.0.1:\(port)/postgres?schema=\(schema)") ?? directory
    }

    /// Runs `psql` with one command; returns its output.
    @discardableResult
    func psql(_ command: String) throws -> String {
        try Self.run([bin.appendingPathComponent("psql").path, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
                      "-p", String(port), "-U", "postgres", "-d", "postgres", "-c", command], asPostgres: false)
    }

    func stop() {
        _ = try? Self.run([bin.appendingPathComponent("pg_ctl").path, "-D", directory.appendingPathComponent("data").path,
                           "-m", "fast", "-w", "stop"], asPostgres: asPostgres)
        if let server, server.isRunning { server.waitUntilExit() }
        try? FileManager.default.removeItem(at: directory)
    }

    @discardableResult
    static func run(_ arguments: [String], asPostgres: Bool) throws -> String {
        let p = Process()
        if asPostgres {
            p.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            p.arguments = ["-u", "postgres", "--"] + arguments
        } else {
            p.executableURL = URL(fileURLWithPath: arguments[0])
            p.arguments = Array(arguments.dropFirst())
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
            throw BenchFailure("\(arguments.joined(separator: " ")) exited with \(p.terminationStatus): \(text)")
        }
        return text
    }

    private static func findBinaries() -> URL? {
        let fm = FileManager.default
        func has(_ dir: String) -> URL? {
            fm.isExecutableFile(atPath: dir + "/initdb") && fm.isExecutableFile(atPath: dir + "/psql")
                ? URL(fileURLWithPath: dir, isDirectory: true) : nil
        }
        if let env = ProcessInfo.processInfo.environment["STOREAPI_PG_BINDIR"], let d = has(env) { return d }
        let versions = ((try? fm.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).compactMap(Int.init).sorted(by: >)
        for v in versions { if let d = has("/usr/lib/postgresql/\(v)/bin") { return d } }
        for dir in ["/usr/local/bin", "/opt/homebrew/bin"] { if let d = has(dir) { return d } }
        return nil
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
