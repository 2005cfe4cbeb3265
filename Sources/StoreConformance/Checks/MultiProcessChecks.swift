import Foundation
import StoreAPI
import Testing

extension ConformanceSuite {
    /// Two processes write one store at the same time: every save of both lands (no lost updates, no primary key
    /// handed out twice), and each process sees the other's committed saves without reopening.
    /// How the worker is told where the store is: a file's path, or a server store's whole URL.
    static func argument(_ url: URL) -> String { url.isFileURL ? url.path : url.absoluteString }

    func checkMultiProcess(_ h: Harness) throws {
        guard let worker else {
            Issue.record("""
                \(backend.typeIdentifier) declares multiProcess, but the suite has no worker executable to prove it: \
                pass `worker:` (see ConformanceWorker)
                """)
            return
        }
        let url = h.storeURL("shared")
        let (c, _) = try h.coordinator(url)
        defer { try? h.close(c) }
        let perSide = 120

        let other = try WorkerProcess(worker, ["insert", backend.typeIdentifier, Self.argument(url), "worker", "\(perSide)", "6"])
        let context = c.newContext()
        for i in 0..<perSide {
            try context.insert("Tag", ["name": .string("parent-\(i)")])
            if (i + 1) % 6 == 0 { try context.save() }
        }
        try context.save()
        let result = other.wait()
        try #require(result.status == 0, "the worker process failed: \(result.stderr)")

        // The parent still has the store open: the worker's saves must be visible to it now.
        let names = Set(try context.fetch(FetchRequest(entity: "Tag")).map { try $0.value(forKey: "name").stringValue ?? "" })
        let expected = Set((0..<perSide).flatMap { ["parent-\($0)", "worker-\($0)"] })
        #expect(names.count == expected.count, "both processes' records must all be there (\(names.count) of \(expected.count))")
        #expect(names == expected, "missing: \(expected.subtracting(names).sorted().prefix(5))")
        let keys = try c.stores[0].store.fetch(FetchRequest(entity: "Tag")).map(\.primaryKey)
        #expect(Set(keys).count == keys.count, "two processes must never be handed the same primary key")

        // And the other way round: a fresh process sees everything the parent saved.
        let counter = try WorkerProcess(worker, ["count", backend.typeIdentifier, Self.argument(url), "Tag"])
        let counted = counter.wait()
        try #require(counted.status == 0, "the worker process failed: \(counted.stderr)")
        #expect(counted.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\(2 * perSide)")
    }
}

/// A worker process with its output collected in files (pipes could fill up and block it).
private struct WorkerProcess {
    let process = Process()
    let out: URL
    let err: URL

    init(_ executable: URL, _ arguments: [String]) throws {
        let tag = UUID().uuidString
        out = FileManager.default.temporaryDirectory.appendingPathComponent("conformance-worker-\(tag).out")
        err = FileManager.default.temporaryDirectory.appendingPathComponent("conformance-worker-\(tag).err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    func wait() -> (status: Int32, stdout: String, stderr: String) {
        process.waitUntilExit()
        let o = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
        let e = (try? String(contentsOf: err, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(at: out)
        try? FileManager.default.removeItem(at: err)
        return (process.terminationStatus, o, e)
    }
}
