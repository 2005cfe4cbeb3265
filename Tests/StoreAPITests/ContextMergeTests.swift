import Foundation
import StoreAPI
import StoreTestSupport
import Synchronization
import Testing

/// Change observers of a coordinator and contexts that merge other contexts' saves.
@Suite struct ContextMergeTests {
    static func coordinator() throws -> StoreCoordinator {
        let schema = try Schema(entities: [
            EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string, isOptional: true)]),
            EntityDescription(name: "Label", attributes: [AttributeDescription(name: "name", type: .string)],
                              uniquenessConstraints: [["name"]]),
        ])
        let coordinator = StoreCoordinator(schema: schema)
        try coordinator.addStore(StoreDescription(url: nil, type: "memory"))
        return coordinator
    }

    /// Collects what a coordinator's observer receives.
    final class Received: Sendable {
        let list = Mutex<[SavedChanges]>([])
        var all: [SavedChanges] { list.withLock { $0 } }
        func add(_ c: SavedChanges) { list.withLock { $0.append(c) } }
    }

    @Test("Every committed save is reported once, with its records; a failed save is not")
    func observersSeeEverySave() throws {
        let coordinator = try Self.coordinator()
        let received = Received()
        let observation = coordinator.observeChanges { received.add($0) }
        let writer = coordinator.newContext()
        let note = try writer.insert("Note", ["text": "one"])
        try writer.save()
        try note.setValue("two", forKey: "text")
        try writer.save()
        try writer.delete(note)
        try writer.save()
        let batch = try writer.insertBatch("Label", [["name": "a"], ["name": "b"]])
        // A duplicate unique name fails the save: nothing is reported for it.
        _ = try writer.insert("Label", ["name": "a"])
        #expect(throws: StoreError.self) { try writer.save() }
        writer.rollback()

        let all = received.all
        try #require(all.count == 4)
        #expect(all[0].inserted == [note.objectID] && all[0].updated.isEmpty && all[0].entities == ["Note"])
        #expect(all[1].updated == [note.objectID] && all[1].inserted.isEmpty)
        #expect(all[2].deleted == [note.objectID])
        #expect(all[3].inserted == batch && all[3].entities == ["Label"])
        #expect(all.allSatisfy { $0.isComplete && $0.origin == .context(writer.contextID) })
        #expect(!all[3].mayTouch(["Note"]) && all[3].mayTouch(["Label"]))

        observation.cancel()
        _ = try writer.insert("Note", ["text": "unheard"])
        try writer.save()
        #expect(received.all.count == 4, "a cancelled observation hears nothing more")
    }

    @Test("A merging context sees another context's updates, deletes and inserts; a plain one keeps its values")
    func mergingContextSeesOtherSaves() throws {
        let coordinator = try Self.coordinator()
        let setup = coordinator.newContext()
        let kept = try setup.insert("Note", ["text": "kept"])
        let doomed = try setup.insert("Note", ["text": "doomed"])
        try setup.save()

        let merging = coordinator.newContext()
        merging.automaticallyMergesChanges = true
        let plain = coordinator.newContext()
        let seenKept = try merging.object(with: kept.objectID)
        let seenDoomed = try merging.object(with: doomed.objectID)
        let plainKept = try plain.object(with: kept.objectID)

        let writer = coordinator.newContext()
        try writer.object(with: kept.objectID).setValue("changed", forKey: "text")
        try writer.delete(try writer.object(with: doomed.objectID))
        _ = try writer.insert("Note", ["text": "new"])
        try writer.save()

        #expect(merging.mergeChanges())
        #expect(try seenKept.value(forKey: "text") == "changed")
        #expect(throws: StoreError.self) { try seenDoomed.value(forKey: "text") }
        let texts = try merging.fetch(FetchRequest(entity: "Note")).map { try $0.value(forKey: "text") }
        #expect(Set(texts) == ["changed", "new"])
        #expect(!merging.mergeChanges(), "nothing new to merge")
        #expect(try plainKept.value(forKey: "text") == "kept", "a context that does not merge keeps what it read")
    }

    @Test("A merging context keeps its unsaved changes and does not merge its own saves")
    func unsavedChangesWin() throws {
        let coordinator = try Self.coordinator()
        let setup = coordinator.newContext()
        let note = try setup.insert("Note", ["text": "first"])
        try setup.save()

        let merging = coordinator.newContext()
        merging.automaticallyMergesChanges = true
        let mine = try merging.object(with: note.objectID)
        try mine.setValue("mine", forKey: "text")

        let writer = coordinator.newContext()
        try writer.object(with: note.objectID).setValue("theirs", forKey: "text")
        try writer.save()

        merging.mergeChanges()
        #expect(try mine.value(forKey: "text") == "mine")
        try merging.save()
        #expect(!merging.mergeChanges(), "its own save is not merged back")
        let reader = coordinator.newContext()
        #expect(try reader.object(with: note.objectID).value(forKey: "text") == "mine")
    }
}
