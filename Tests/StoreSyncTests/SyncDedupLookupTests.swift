import Foundation
import StoreAPI
@testable import StoreSync
import StoreTestSupport
import Testing

/// Deduplication looks up only the keys a pull brings, by a predicate fetch on the key (an index lookup where the
/// backend has one) or, for a store kept in memory, one pass matching keys by hash: on every backend, with one- and
/// two-attribute keys, the same records merge as before — the lowest global ID wins, links move to it, and every
/// peer ends up the same.
@Suite("Sync deduplication by key lookup")
struct SyncDedupLookupTests {
    /// Editions are unique by ISBN and printing together; shelves hold them.
    static let schema: Schema = {
        do {
            return try Schema(entities: [
                EntityDescription(name: "Edition", attributes: [
                    AttributeDescription(name: "isbn", type: .string),
                    AttributeDescription(name: "printing", type: .integer32, isOptional: true),
                    AttributeDescription(name: "note", type: .string, isOptional: true),
                ], relationships: [
                    RelationshipDescription(name: "shelf", destination: "Shelf", inverse: "editions"),
                ], uniquenessConstraints: [["isbn", "printing"]]),
                EntityDescription(name: "Shelf", attributes: [
                    AttributeDescription(name: "label", type: .string),
                ], relationships: [
                    RelationshipDescription(name: "editions", destination: "Edition", inverse: "shelf", isToMany: true),
                ]),
            ])
        } catch {
            preconditionFailure("the dedup test schema is invalid: \(error)")
        }
    }()

    /// One store of `schema` with its engine.
    final class Peer {
        let coordinator: StoreCoordinator
        let loaded: LoadedStore
        let engine: SyncEngine

        init(_ url: URL?, type: String, remote: any SyncRemote, schema: Schema = SyncDedupLookupTests.schema) throws {
            coordinator = StoreCoordinator(schema: schema, registry: SyncFixtures.registry)
            var description = StoreDescription(url: url, type: type, syncOptions: SyncFixtures.options)
            description.options.historyTracking = true
            loaded = try coordinator.addStore(description)
            engine = try SyncEngine(store: loaded, coordinator: coordinator, remote: remote)
        }

        @discardableResult
        func sync() async throws -> SyncReport { try await engine.sync() }
    }

    static let types = ["sqlite", "lmdb", "xml", "memory"]

    @Test(arguments: types)
    func editionsCreatedOnTwoPeersUnderOneCompoundKeyMerge(type: String) async throws {
        let dir = try TemporaryDirectory("sync-dedup-compound")
        let remote = InMemoryRemote()
        let url: URL? = type == "memory" ? nil : dir.path(SyncFixtures.file("a", type: type))
        let a = try Peer(url, type: type, remote: remote)
        let b = try Peer(dir.path("b.sqlite"), type: "sqlite", remote: remote)
        try await b.sync()
        try await a.sync()

        // A: many editions, printing 1 of every ISBN.
        let stored = 3_000
        let aIDs = (0..<stored).map { _ in UUID() }
        let ca = a.coordinator.newContext()
        _ = try ca.insertBatch("Edition", count: stored, globalIDs: aIDs) { i, row in
            try row.set("isbn", .string("isbn-\(i)"))
            try row.set("printing", .integer32(1))
        }
        try ca.save()
        try await a.sync()

        // B, before it hears of them: a shelf of editions, some the same (ISBN, printing) as A's, some the same
        // ISBN in another printing, some without a printing (a key with a missing value matches nothing).
        let cb = b.coordinator.newContext()
        let shelf = try cb.insert("Shelf", ["label": "B's shelf"])
        var same: [String: UUID] = [:]
        for i in stride(from: 0, to: stored, by: 30) {
            let e = try cb.insert("Edition", ["isbn": .string("isbn-\(i)"), "printing": .integer32(1), "note": "from B"])
            try e.setObject(shelf, forKey: "shelf")
            same["isbn-\(i)"] = e.globalID
        }
        for i in stride(from: 1, to: stored, by: 30) {
            let e = try cb.insert("Edition", ["isbn": .string("isbn-\(i)"), "printing": .integer32(2)])
            try e.setObject(shelf, forKey: "shelf")
        }
        for i in stride(from: 2, to: stored, by: 300) {
            try cb.insert("Edition", ["isbn": .string("isbn-\(i)")])
        }
        try cb.save()
        let made = stored + same.count + stored / 30 + stored / 300

        let pulledByB = try await b.sync()
        let pulledByA = try await a.sync()
        try await b.sync()
        #expect(pulledByB.mergedDuplicates + pulledByA.mergedDuplicates == same.count,
                "B merged \(pulledByB.mergedDuplicates), A \(pulledByA.mergedDuplicates)")
        for peer in [a, b] {
            let context = peer.coordinator.newContext()
            let editions = try context.fetch(FetchRequest(entity: "Edition"))
            #expect(editions.count == made - same.count)
            var byKey: [String: ManagedObject] = [:]
            for e in editions {
                let printing = try e.value(forKey: "printing")
                let key = "\(try e.value(forKey: "isbn")) \(printing)"
                let earlier = byKey.updateValue(e, forKey: key)
                #expect(earlier == nil || printing == .null, "\(key) twice")
            }
            for (i, isbn) in same.keys.sorted().enumerated() where i % 7 == 0 {
                let n = try #require(Int(isbn.dropFirst("isbn-".count)))
                let winner = [aIDs[n], same[isbn] ?? aIDs[n]].min { $0.uuidString < $1.uuidString }
                let kept = try #require(byKey["\(StoreValue.string(isbn)) \(StoreValue.integer32(1))"])
                #expect(kept.globalID == winner, "\(isbn): the lowest global ID wins on every peer")
                #expect(try kept.object(forKey: "shelf")?.value(forKey: "label") == "B's shelf", "\(isbn): the shelf moved to the winner")
            }
        }
        let d = try StoreComparison(comparesMetadata: false, comparesHistory: false).compare(a.loaded.store, b.loaded.store)
        #expect(d.isIdentical, "\(d.summary)")
    }

    /// A pull of many tags into a store of ten times as many, some of the same name: the pull's figure is printed
    /// (`STORESYNC_DEDUP_STORE` sets the store's size; the pull is a tenth of it, a tenth of that duplicates).
    @Test(arguments: ["sqlite", "lmdb"])
    func aPullOfManyTagsIntoALargeStoreMergesEachDuplicateOnce(type: String) async throws {
        let size = ProcessInfo.processInfo.environment["STORESYNC_DEDUP_STORE"].flatMap(Int.init) ?? 10_000
        let pulled = size / 10
        let duplicates = pulled / 10
        let dir = try TemporaryDirectory("sync-dedup-scale")
        let shared = InMemoryRemote()
        let a = try Peer(dir.path(SyncFixtures.file("a", type: type)), type: type, remote: shared, schema: SyncFixtures.schema)
        let c = a.coordinator.newContext()
        let aIDs = (0..<size).map { _ in UUID() }
        _ = try c.insertBatch("Tag", count: size, globalIDs: aIDs) { i, row in try row.set("name", .string("tag \(i)")) }
        try c.save()
        try await a.sync()

        // B's tags reach the shared remote as its change files, without B pulling A's.
        let own = InMemoryRemote()
        let b = try Peer(dir.path("b.sqlite"), type: "sqlite", remote: own, schema: SyncFixtures.schema)
        try await b.sync()
        let cb = b.coordinator.newContext()
        let bIDs = (0..<pulled).map { _ in UUID() }
        // Every tenth of B's names is one of A's.
        _ = try cb.insertBatch("Tag", count: pulled, globalIDs: bIDs) { i, row in
            try row.set("name", .string(i % 10 == 0 ? "tag \(i * 7)" : "b tag \(i)"))
        }
        try cb.save()
        try await b.sync()
        for name in try await own.list(after: nil).names { _ = try await shared.put(try await own.fetch(name), as: name) }

        let start = ContinuousClock.now
        let report = try await a.sync()
        let elapsed = ContinuousClock.now - start
        print("dedup pull (\(type)): \(pulled) tags into \(size), \(duplicates) duplicates: \(elapsed)")
        #expect(report.insertedRecords == pulled)
        #expect(report.mergedDuplicates == duplicates)
        let context = a.coordinator.newContext()
        let tags = try context.fetch(FetchRequest(entity: "Tag"))
        #expect(tags.count == size + pulled - duplicates)
        let byName = Dictionary(try tags.map { (try $0.value(forKey: "name"), $0.globalID) }, uniquingKeysWith: { x, _ in x })
        #expect(byName.count == tags.count, "a name is there twice")
        for i in stride(from: 0, to: pulled, by: 10) {
            let winner = [aIDs[i * 7], bIDs[i]].min { $0.uuidString < $1.uuidString }
            #expect(byName[.string("tag \(i * 7)")] == winner, "tag \(i * 7): the lowest global ID wins")
        }
    }
}
