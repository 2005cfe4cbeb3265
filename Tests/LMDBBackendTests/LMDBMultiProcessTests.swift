import Foundation
@testable import LMDBBackend
import StoreAPI
import StoreTestSupport
import Testing

/// Other processes: liblmdb's own tools read our stores, and a store another process holds open is not destroyed.
@Suite struct LMDBMultiProcessTests {
    /// Runs a program and returns its exit status and standard output, or `nil` when it is not installed.
    static func run(_ program: String, _ arguments: [String]) throws -> (status: Int32, output: String)? {
        guard let path = ["/usr/bin/", "/usr/local/bin/", "/bin/"].map({ $0 + program }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return nil
        }
        let child = try Child(URL(fileURLWithPath: path), arguments)
        child.wait()
        return (child.status, child.stdout)
    }

    @Test func liblmdbToolsReadAStoreWhileItIsOpen() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let url = dir.path("tools.lmdb")
        let store = try LMDBFixture.create(url, schema: schema)
        defer { try? store.close() }
        try store.save(StoreChanges(inserted: (1...25).map { schema.record("Tag", Int64($0), ["name": .string("t\($0)")]) }))
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

    @Test func aMapGrownByAnotherProcessIsAdopted() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let url = dir.path("resized.lmdb")
        let store = try LMDBFixture.create(url, schema: schema, options: ["lmdb.mapSize": "1M"])
        defer { try? store.close() }
        try store.save(StoreChanges(inserted: [schema.record("Tag", 1, ["name": "before"])]))
        let mapBefore = store.mapSize
        #expect(mapBefore < 4 << 20)

        // Another process (mdb_load) grows the map to 256 MiB and writes 6 MiB beyond our map.
        var dump = "VERSION=3\nformat=bytevalue\ntype=btree\nmapsize=268435456\nHEADER=END\n"
        let value = String(repeating: "ab", count: 2048)
        for i in 0..<3000 { dump += " " + Array("key\(100_000 + i)".utf8).map { String(format: "%02x", $0) }.joined() + "\n " + value + "\n" }
        dump += "DATA=END\n"
        let input = dir.path("dump.txt")
        try Data(dump.utf8).write(to: input)
        guard let load = try Self.run("mdb_load", ["-s", "elsewhere", "-f", input.path, url.path]) else {
            Issue.record("mdb_load (lmdb-utils) is not installed; the map-resize check did not run")
            return
        }
        #expect(load.status == 0)

        // Our next transactions meet MDB_MAP_RESIZED and adopt the new size instead of failing.
        #expect(try store.fetch(FetchRequest(entity: "Tag")).count == 1)
        try store.save(StoreChanges(inserted: [schema.record("Tag", 2, ["name": "after"])]))
        #expect(try store.count(FetchRequest(entity: "Tag")) == 2)
        #expect(store.mapSize >= 256 << 20)
        #expect(try LMDBFixture.backend.checkIntegrity(at: url).isEmpty)
    }

    @Test func metadataChangedByAnotherProcessIsNeverOverwritten() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
        let schema = try LMDBFixture.schema()
        let url = dir.path("shared-meta.lmdb")
        let store = try LMDBFixture.create(url, schema: schema)
        defer { try? store.close() }

        // Another process rewrites the stored metadata (as another program using the store would).
        var theirs = store.metadata
        theirs.custom["writer"] = .string("the other process")
        let hex = { (bytes: [UInt8]) in " " + bytes.map { String(format: "%02x", $0) }.joined() }
        let dump = "VERSION=3\nformat=bytevalue\ntype=btree\nHEADER=END\n" + hex(Array("metadata".utf8)) + "\n"
            + hex(Array(try theirs.encoded())) + "\nDATA=END\n"
        let input = dir.path("meta.txt")
        try Data(dump.utf8).write(to: input)
        guard let load = try Self.run("mdb_load", ["-s", "storeapi.meta", "-f", input.path, url.path]) else {
            Issue.record("mdb_load (lmdb-utils) is not installed; the cross-process metadata check did not run")
            return
        }
        #expect(load.status == 0)

        // A metadata change based on the old metadata is refused, and the store now shows theirs.
        var mine = LMDBFixture.metadata(schema).withUUID(store.metadata.storeUUID)
        mine.custom["writer"] = .string("this process")
        #expect(storeError { try store.save(StoreChanges(metadata: mine)) }?.caseName == "modifiedOnDisk")
        #expect(store.metadata.custom["writer"] == .string("the other process"))
        // Saving records is unaffected (and keeps their metadata).
        try store.save(StoreChanges(inserted: [schema.record("Tag", 1, ["name": "x"])]))
        #expect(try LMDBFixture.backend.readMetadata(at: url).custom["writer"] == .string("the other process"))
        // Now based on the current metadata, a change goes through.
        var next = store.metadata
        next.custom["writer"] = .string("this process, later")
        try store.save(StoreChanges(metadata: next))
        #expect(try LMDBFixture.backend.readMetadata(at: url).custom["writer"] == .string("this process, later"))
    }

    @Test func aStoreOpenInAnotherProcessIsNotDestroyed() throws {
        let dir = try TemporaryDirectory("lmdb-tests")
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
        #expect(error?.caseName == "locked" && error?.description.contains("pid \(holder.processIdentifier)") == true, "\(String(describing: error))")
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
