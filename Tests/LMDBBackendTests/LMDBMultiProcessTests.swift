import Foundation
import LMDBBackend
import StoreAPI
import Testing

/// Other processes: liblmdb's own tools read our stores, and a store another process holds open is not destroyed.
@Suite struct LMDBMultiProcessTests {
    /// Runs a program and returns its exit status and standard output, or `nil` when it is not installed.
    static func run(_ program: String, _ arguments: [String]) throws -> (status: Int32, output: String)? {
        guard let path = ["/usr/bin/", "/usr/local/bin/", "/bin/"].map({ $0 + program }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return nil
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test func liblmdbToolsReadAStoreWhileItIsOpen() throws {
        let dir = try TemporaryDirectory()
        let schema = try LMDBFixture.schema()
        let url = dir.path("tools.lmdb")
        let store = try LMDBFixture.create(url, schema: schema)
        defer { try? store.close() }
        try store.save(StoreChanges(inserted: try (1...25).map { try LMDBFixture.record(schema, "Tag", Int64($0), ["name": .string("t\($0)")]) }))
        guard let stat = try Self.run("mdb_stat", ["-a", url.path]) else {
            Issue.record("mdb_stat (lmdb-utils) is not installed; the second-process check did not run")
            return
        }
        #expect(stat.status == 0)
        #expect(stat.output.contains("records:Tag") && stat.output.contains("storeapi.meta") && stat.output.contains("unique:Tag:name"))
        #expect(stat.output.contains("Entries: 25"), "mdb_stat sees the 25 committed records:\n\(stat.output)")
        if let dump = try Self.run("mdb_dump", ["-s", "storeapi.meta", "-p", url.path]) {
            #expect(dump.status == 0 && dump.output.contains("storeapi.lmdb"))
        }
        // The other process shares our lock file (mdb_stat exits 1 after printing the table, by design).
        let readers = try Self.run("mdb_stat", ["-r", url.path])
        #expect(readers?.output.contains("Reader Table Status") == true)
    }

    @Test func aStoreOpenInAnotherProcessIsNotDestroyed() throws {
        let dir = try TemporaryDirectory()
        let schema = try LMDBFixture.schema()
        let url = dir.path("held.lmdb")
        try LMDBFixture.create(url, schema: schema).close()
        let lock = url.appendingPathComponent("lock.mdb")
        // Another process takes the shared lock every liblmdb process holds on byte 0 of the lock file.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = ["python3", "-c", """
            import fcntl, sys, time
            f = open(sys.argv[1], 'r+b')
            fcntl.lockf(f, fcntl.LOCK_SH, 1, 0)
            print('held', flush=True)
            sys.stdin.read()
            """, lock.path]
        let out = Pipe()
        let input = Pipe()
        holder.standardOutput = out
        holder.standardInput = input
        holder.standardError = FileHandle.nullDevice
        do { try holder.run() } catch {
            Issue.record("python3 is not available; the second-process destroy check did not run")
            return
        }
        let ready = String(decoding: out.fileHandleForReading.availableDataOrLine(), as: UTF8.self)
        guard ready.contains("held") else {
            Issue.record("the helper process did not take the lock: \(ready)")
            holder.terminate()
            return
        }
        let error = storeError { try LMDBFixture.backend.destroyStore(at: url) }
        #expect(error?.kind == "locked" && error?.description.contains("pid \(holder.processIdentifier)") == true, "\(String(describing: error))")
        #expect(LMDBFixture.backend.sniff(url) == .store)
        try input.fileHandleForWriting.close()
        holder.waitUntilExit()
        try LMDBFixture.backend.destroyStore(at: url)
        #expect(dir.listing().isEmpty)
    }
}

extension FileHandle {
    /// Reads until a newline or the end.
    func availableDataOrLine() -> Data {
        var data = Data()
        while let chunk = try? read(upToCount: 1), !chunk.isEmpty {
            data.append(chunk)
            if chunk == Data([0x0A]) { break }
        }
        return data
    }
}
