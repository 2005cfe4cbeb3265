import Foundation
import StoreAPI
import StoreModels
import StoreTestSupport
import Synchronization
import Testing

/// Observations see every committed change: other contexts of the coordinator, other processes, none lost and
/// none emitted for changes that leave the results alone.
@Suite("Observation of every change")
struct ExternalObservationTests {
    /// Collects a sequence's emissions in the background, so a test can wait for one with a deadline.
    final class Collector<M: PersistentModel>: Sendable {
        final class Received: Sendable {
            let list = Mutex<[ModelChanges<M>]>([])
        }
        private let received = Received()
        private let task = Mutex<Task<Void, Never>?>(nil)

        init(_ stream: AsyncThrowingStream<ModelChanges<M>, any Error>) {
            let t = Task { [received] in
                do {
                    for try await change in stream { received.list.withLock { $0.append(change) } }
                } catch {}
            }
            task.withLock { $0 = t }
        }

        /// The emissions so far, once there are at least `count` or `seconds` passed.
        func wait(for count: Int, seconds: Double = 15) async -> [ModelChanges<M>] {
            let deadline = ContinuousClock.now + .seconds(seconds)
            while ContinuousClock.now < deadline, received.list.withLock({ $0.count }) < count {
                try? await Task.sleep(for: .milliseconds(10))
            }
            return received.list.withLock { $0 }
        }

        deinit { task.withLock { $0?.cancel() } }
    }

    @Test("Another process importing into the store (the storectl binary) wakes an observer",
          arguments: [StoreKind.sqlite, .lmdb])
    func otherProcessWakesObserver(kind: StoreKind) async throws {
        let dir = try TemporaryDirectory("typed-observe-process")
        let db = try kind.open(in: dir)
        _ = try await db.write { try $0.insert(Book(title: "Lavinia", pages: 279)) }
        let collector = Collector(db.observe(Book.self, where: \.pages > 300, sortedBy: [.ascending(\.title)]))
        #expect(await collector.wait(for: 1).first?.results.isEmpty == true)

        let data = dir.path("books.ndjson")
        let line = #"{"entity":"Book","id":"\#(UUID().uuidString)","attributes":{"title":"The Dispossessed","pages":387,"genre":"fiction"}}"#
        try Data((line + "\n").utf8).write(to: data)
        let store = "books.\(kind.rawValue)"
        let child = try Child.storectl(["import", store, data.path], in: dir)
        #expect(child.status == 0, "\(child.stderr)")

        // Generous: with every suite running at once, the polling task can wait long for a thread.
        let emitted = await collector.wait(for: 2, seconds: 60)
        try #require(emitted.count == 2, "the observer was not woken within 60 seconds")
        #expect(emitted[1].results.map(\.title) == ["The Dispossessed"])
        #expect(emitted[1].inserted.map(\.title) == ["The Dispossessed"])
        // The change was reported once: more polls find nothing new.
        try await Task.sleep(for: .milliseconds(300))
        #expect(await collector.wait(for: 2).count == 2)
        try db.close()
    }

    @Test("Saves of other contexts of the coordinator emit; unrelated ones do not; none is lost",
          arguments: StoreKind.allCases)
    func otherContextsEmit(kind: StoreKind) async throws {
        let dir = try TemporaryDirectory("typed-observe-context")
        let db = try kind.open(in: dir)
        var changes = db.observe(Book.self, where: \.pages > 300, sortedBy: [.ascending(\.title)]).makeAsyncIterator()
        #expect(try await changes.next()?.results.isEmpty == true)

        // Another entity, and a book the predicate leaves out: nothing is emitted for them.
        let context = db.coordinator.newContext()
        _ = try context.insert("Tag", ["label": "sf"])
        try context.save()
        _ = try context.insert("Book", ["title": "Lavinia", "pages": 279, "genre": "fiction"])
        try context.save()
        // Twenty saves in a row, each emitted with what it added: none lost, none merged away.
        for i in 0..<20 {
            _ = try context.insert("Book", ["title": .string("Book \(100 + i)"), "pages": .integer64(Int64(400 + i)),
                                            "genre": "fiction"])
            try context.save()
        }
        for i in 0..<20 {
            let change = try #require(try await changes.next())
            #expect(change.results.count == i + 1)
            #expect(change.inserted.map(\.title) == ["Book \(100 + i)"])
        }
        try db.close()
        #expect(try await changes.next() == nil, "no emission after the last change")
    }

    @Test("An emission names the results that moved")
    func movedResults() async throws {
        let db = try StoreKind.memory.open(in: try TemporaryDirectory("typed-observe-moved"))
        let books = try await db.write { tx in
            try ["A", "B", "C", "D"].map { try tx.insert(Book(title: $0, pages: 400)) }
        }
        var changes = db.observe(Book.self, sortedBy: [.ascending(\.title)]).makeAsyncIterator()
        #expect(try await changes.next()?.results.map(\.title) == ["A", "B", "C", "D"])
        var a = books[0]
        a.title = "E"
        _ = try await db.write { [a] tx in try tx.update(a) }
        let change = try #require(try await changes.next())
        #expect(change.results.map(\.title) == ["B", "C", "D", "E"])
        #expect(change.moved == [try #require(books[0].persistentID)])
        #expect(change.updated.map(\.title) == ["E"] && change.inserted.isEmpty && change.deleted.isEmpty)
        try db.close()
    }
}
