import Foundation
import StoreAPI
import StoreModels
import StoreTestSupport
import Testing

/// The reading list's duplicate tag: inserting a `Tag` whose unique label is stored fails the write by default,
/// and becomes the stored tag under a merge policy — on every store type.
@Suite struct ModelMergePolicyTests {
    @Test(arguments: StoreKind.allCases)
    func aDuplicateUniqueTagMergesIntoTheStoredOne(_ kind: StoreKind) async throws {
        let dir = try TemporaryDirectory("model-merge")
        let db = try kind.open(in: dir)
        defer { try? db.close() }
        let stored = try await db.write { tx in
            let sf = try tx.insert(Tag(label: "sf"))
            try tx.insert(Book(title: "The Dispossessed", pages: 387, tags: [sf.ref]))
            return sf
        }
        await #expect(throws: StoreError.self, "by default a duplicate label fails the write") {
            try await db.write { tx in _ = try tx.insert(Tag(label: "sf")) }
        }

        try await db.write { tx in
            let tag = try tx.insert(Tag(label: "sf"), onConflict: .mergeByPropertyObjectTrump)
            try tx.insert(Book(title: "Excession", pages: 451, tags: [tag.ref]))
        }
        try await db.write { tx in
            tx.mergePolicy = .mergeByPropertyObjectTrump
            let tag = try tx.insert(Tag(label: "sf"))
            try tx.insert(Book(title: "Matter", pages: 593, tags: [tag.ref]))
        }
        let (tags, books) = try await db.read { tx in
            (try tx.fetch(Tag.self), try tx.fetch(Book.self, sortedBy: [.ascending(\.title)]))
        }
        #expect(tags.count == 1 && tags.first?.ref == stored.ref, "one tag, the stored one")
        #expect(Set(tags.first?.books ?? []) == Set(books.map(\.ref)), "every book is on the stored tag")
        #expect(books.allSatisfy { $0.tags == [stored.ref] })
    }
}
