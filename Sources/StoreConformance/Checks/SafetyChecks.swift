import Foundation
import Synchronization
import StoreAPI
import Testing

extension ConformanceSuite {
    /// The bytes of every regular file the store owns (lock files excluded: opening may legitimately touch them).
    static func fingerprint(_ backend: any StoreBackend, _ url: URL) -> [String: Data] {
        var out: [String: Data] = [:]
        for f in backend.ownedFiles(ofStoreAt: url) where !f.lastPathComponent.contains("lock") {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: f.path, isDirectory: &isDir), !isDir.boolValue {
                out[f.lastPathComponent] = FileManager.default.contents(atPath: f.path)
            }
        }
        return out
    }

    func checkSchemaCompatibility(_ h: Harness) throws {
        let url = h.storeURL()
        let (c, _) = try h.coordinator(url)
        let ctx = c.newContext()
        try ctx.insert("Tag", ["name": "kept"])
        try ctx.save()
        try h.close(c)
        let before = Self.fingerprint(backend, url)
        let other = try ConformanceSchema.makeIncompatible()
        do {
            _ = try h.coordinator(url, schema: other)
            Issue.record("opening with an incompatible schema must fail")
        } catch let error as StoreError {
            guard case .incompatibleSchema(_, let entities) = error else {
                Issue.record("expected incompatibleSchema, got \(error)")
                return
            }
            #expect(entities.contains("Tag"))
        }
        #expect(Self.fingerprint(backend, url) == before, "a refused open must not touch the store")
        // The store still opens with its own schema, without the caller naming one (self-describing).
        let stored = try backend.readMetadata(at: url).schema
        let (c2, _) = try h.coordinator(url, schema: stored)
        #expect(try c2.newContext().count(FetchRequest(entity: "Tag")) == 1)
        try h.close(c2)
    }

    func checkBadInput(_ h: Harness) throws {
        // Garbage where a store should be.
        let garbage = h.storeURL("garbage")
        var bytes = Data(count: 8192)
        for i in 0..<bytes.count { bytes[i] = UInt8(truncatingIfNeeded: i &* 7919 &+ 13) }
        try bytes.write(to: garbage)
        let listing = h.listing()
        #expect(throws: StoreError.self, "opening garbage must fail with a typed error") { _ = try h.coordinator(garbage) }
        #expect(FileManager.default.contents(atPath: garbage.path) == bytes, "the garbage file must be left as it was")
        #expect(h.listing() == listing, "a failed open must not leave files behind")
        #expect(backend.sniff(garbage) != .store)
        #expect(throws: StoreError.self) { try backend.destroyStore(at: garbage) }
        #expect(FileManager.default.contents(atPath: garbage.path) == bytes, "destroy must refuse what is not a store")

        // A truncated store.
        let url = h.storeURL("truncated")
        let (c, _) = try h.coordinator(url)
        let ctx = c.newContext()
        for i in 0..<200 { try ctx.insert("Tag", ["name": .string("tag \(i) " + String(repeating: "x", count: 100))]) }
        try ctx.save()
        try h.close(c)
        if let main = backend.ownedFiles(ofStoreAt: url).first(where: { !$0.hasDirectoryPath && !$0.lastPathComponent.contains("lock") }),
           let size = try? FileManager.default.attributesOfItem(atPath: main.path)[.size] as? Int, size > 64 {
            let handle = try FileHandle(forWritingTo: main)
            try handle.truncate(atOffset: UInt64(size / 3))
            try handle.close()
            let listingBefore = h.listing()
            do {
                let (c2, s2) = try h.coordinator(url)
                // Some engines open a truncated file and only fail on reading; either way, a typed error.
                #expect(throws: StoreError.self) { _ = try s2.store.fetch(FetchRequest(entity: "Tag")) }
                try? h.close(c2)
            } catch {
                #expect(error is StoreError, "a truncated store must fail with a typed error, got \(error)")
            }
            _ = listingBefore
        }

        // A description pointing into a missing directory, and one whose parent is a file.
        let missing = h.directory.appendingPathComponent("no/such/dir/store." + (backend.fileExtensions.first ?? "store"))
        #expect(throws: StoreError.self) { _ = try h.coordinator(missing) }
        #expect(!FileManager.default.fileExists(atPath: h.directory.appendingPathComponent("no").path))
        let underFile = garbage.appendingPathComponent("store")
        #expect(throws: StoreError.self) { _ = try h.coordinator(underFile) }
        // An unknown type identifier.
        let c3 = StoreCoordinator(schema: h.schema, registry: registry)
        #expect(throws: StoreError.self) { try c3.addStore(StoreDescription(url: h.storeURL("x"), type: "no-such-type")) }
    }

    func checkReadOnly(_ h: Harness) throws {
        let url = h.storeURL()
        let (c, _) = try h.coordinator(url)
        let ctx = c.newContext()
        try ctx.insert("Tag", ["name": "before"])
        try ctx.save()
        try h.close(c)
        let before = Self.fingerprint(backend, url)
        let (ro, store) = try h.coordinator(url, options: StoreOptions(isReadOnly: true))
        let r = ro.newContext()
        let tags = try r.fetch(FetchRequest(entity: "Tag"))
        #expect(tags.count == 1)
        #expect(throws: StoreError.self) { try r.insert("Tag", ["name": "after"]) }
        #expect(throws: StoreError.self) { try tags[0].setValue("changed", forKey: "name") }
        let tag = try #require(h.schema.entity(named: "Tag"))
        #expect(throws: (any Error).self, "a read-only store must refuse a direct save") {
            try store.store.save(StoreChanges(inserted: [tag.newRecord(primaryKey: 1_000_000)]))
        }
        try h.close(ro)
        #expect(Self.fingerprint(backend, url) == before, "a read-only store must not change")
        // Read-only never creates.
        #expect(throws: StoreError.self) { _ = try h.coordinator(h.storeURL("never"), options: StoreOptions(isReadOnly: true)) }
    }

    func checkConcurrentReaders(_ h: Harness) throws {
        let url = h.storeURL()
        let (c, _) = try h.coordinator(url)
        let batches = 15, perBatch = 10
        let problems = Mutex<[String]>([])
        let observed = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 3) { worker in
            do {
                let ctx = c.newContext()
                if worker == 0 {
                    for b in 0..<batches {
                        for i in 0..<perBatch { try ctx.insert("Tag", ["name": .string("t\(b)-\(i)")]) }
                        try ctx.save()
                    }
                } else {
                    var last = 0
                    for _ in 0..<60 {
                        let n = try ctx.count(FetchRequest(entity: "Tag"))
                        let seen = try ctx.fetch(FetchRequest(entity: "Tag")).count
                        if n % perBatch != 0 { problems.withLock { $0.append("saw a partial save: \(n) tags") } }
                        if n < last { problems.withLock { $0.append("count went back from \(last) to \(n)") } }
                        if seen < n { problems.withLock { $0.append("fetch saw \(seen) after count saw \(n)") } }
                        last = n
                        ctx.reset()
                    }
                    observed.withLock { $0.append(last) }
                }
            } catch {
                problems.withLock { $0.append("worker \(worker): \(error)") }
            }
        }
        #expect(problems.withLock { $0 } == [])
        #expect(try c.newContext().count(FetchRequest(entity: "Tag")) == batches * perBatch)
        try h.close(c)
    }
}
