import Foundation
import StoreAPI
import Synchronization
import Testing

extension ConformanceSuite {
    /// Collects what a coordinator's change observer receives.
    final class ReceivedChanges: Sendable {
        private let list = Mutex<[SavedChanges]>([])
        var all: [SavedChanges] { list.withLock { $0 } }
        func add(_ c: SavedChanges) { list.withLock { $0.append(c) } }
    }

    func checkObservation(_ h: Harness) throws {
        let url = h.storeURL()
        var options = StoreOptions()
        options.historyTracking = h.backend.capabilities.contains(.history)
        let (c, store) = try h.coordinator(url, options: options)
        let received = ReceivedChanges()
        let observation = c.observeChanges { received.add($0) }
        defer { observation.cancel() }

        // Each committed save is reported once, with its records and the entities they belong to (ancestors too).
        let writer = c.newContext()
        let author = try writer.insert("Author", ["name": "Le Guin"])
        let novel = try writer.insert("Novel", ["title": "The Dispossessed"])
        try writer.save()
        try novel.setValue("Always Coming Home", forKey: "title")
        try writer.save()
        try writer.delete(novel)
        try writer.save()
        let batch = try writer.insertBatch("Tag", [["name": "sf"], ["name": "classic"]])
        let agent = try writer.insert("Agent", ["name": "Virginia Kidd"])
        try agent.setObject(author, forKey: "client")
        try writer.save()
        // A save that fails (two works with one ISBN) is not reported.
        _ = try writer.insert("Book", ["title": "One", "isbn": "isbn-1"])
        _ = try writer.insert("Book", ["title": "Two", "isbn": "isbn-1"])
        #expect(throws: StoreError.self, "the uniqueness constraint refuses the save") { try writer.save() }
        writer.rollback()

        var all = received.all
        try #require(all.count == 5, "one report per committed save, none for the failed one (got \(all.count))")
        #expect(Set(all[0].inserted) == [author.objectID, novel.objectID])
        #expect(all[0].entities.isSuperset(of: ["Author", "Novel", "Book", "Work"]))
        #expect(all[1].updated == [novel.objectID] && all[1].inserted.isEmpty && all[1].deleted.isEmpty)
        #expect(all[2].deleted.contains(novel.objectID))
        #expect(all[3].inserted == batch && all[3].entities == ["Tag"] && !all[3].mayTouch(["Work"]))
        #expect(all.allSatisfy { $0.isComplete && $0.store == store.identifier && $0.origin == .context(writer.contextID) })

        // A merging context sees the other context's saves at its next fetch; its own unsaved changes stay.
        let merging = c.newContext()
        merging.automaticallyMergesChanges = true
        let seen = try merging.object(with: author.objectID)
        let seenAgent = try merging.object(with: agent.objectID)
        try (try writer.object(with: author.objectID)).setValue("Ursula K. Le Guin", forKey: "name")
        try writer.save()
        _ = try merging.fetch(FetchRequest(entity: "Tag"))
        #expect(try seen.value(forKey: "name") == "Ursula K. Le Guin", "a merging context shows another context's save")
        #expect(try seenAgent.value(forKey: "name") == "Virginia Kidd")

        // Another coordinator on the same store (as another process) saves: a check finds it, once.
        guard h.backend.capabilities.contains(.multiProcess), h.isPersistent else { return }
        #expect(try c.checkForExternalChanges().isEmpty, "the first check only notes where the store stands")
        let (other, _) = try h.coordinator(url, options: options)
        defer { try? h.close(other) }
        let elsewhere = other.newContext()
        _ = try elsewhere.insert("Tag", ["name": "short"])
        try elsewhere.save()
        let before = received.all.count
        let found = try c.checkForExternalChanges()
        #expect(found.count == 1 && found.first?.origin == .otherProcess, "another writer's save is found")
        all = received.all
        #expect(all.count == before + found.count, "what a check finds is reported to the observers")
        let after = try c.checkForExternalChanges()
        #expect(after.allSatisfy { $0.origin == .otherProcess })
        #expect(try c.checkForExternalChanges().isEmpty, "a change is reported once")
        let tags = try merging.fetch(FetchRequest(entity: "Tag")).compactMap { try $0.value(forKey: "name").stringValue }
        #expect(tags.contains("short"))
        try checkProbedChanges(h)
    }

    /// Without history tracking, a store that probes for changes (``StoreAPI/ChangeProbingStore``) still finds
    /// another writer's save, without saying which records changed.
    func checkProbedChanges(_ h: Harness) throws {
        let url = h.storeURL("probed")
        let (c, loaded) = try h.coordinator(url)
        defer { try? h.close(c) }
        guard loaded.store is any ChangeProbingStore else { return }
        #expect(try c.checkForExternalChanges().isEmpty, "the first check only notes where the store stands")
        let (other, _) = try h.coordinator(url)
        defer { try? h.close(other) }
        let elsewhere = other.newContext()
        _ = try elsewhere.insert("Tag", ["name": "probed"])
        try elsewhere.save()
        let found = try c.checkForExternalChanges()
        #expect(found.count == 1 && found.allSatisfy { $0.origin == .otherProcess && !$0.isComplete },
                "another writer's save is found by the probe: \(found)")
        // A probe may count this coordinator's own commits too; a change is still reported once.
        _ = try c.checkForExternalChanges()
        #expect(try c.checkForExternalChanges().isEmpty, "a change is reported once")
        let reader = c.newContext()
        let tags = try reader.fetch(FetchRequest(entity: "Tag")).compactMap { try $0.value(forKey: "name").stringValue }
        #expect(tags == ["probed"])
    }
}
