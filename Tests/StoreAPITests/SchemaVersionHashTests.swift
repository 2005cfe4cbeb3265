import Foundation
import Testing
@testable import StoreAPI

struct SchemaVersionHashTests {
    @Test(.enabled(if: SchemaCorpus.isPresent, SchemaCorpus.absentMessage))
    func restKitVersionFourHashesEqualVersionTwo() throws {
        let bundle = "RestKit__RestKit__VersionedModel.xcdatamodeld/"
        let v1 = try SchemaCorpus.load(bundle + "VersionedModel.xcdatamodel")
        let v2 = try SchemaCorpus.load(bundle + "VersionedModel 2.xcdatamodel")
        let v3 = try SchemaCorpus.load(bundle + "VersionedModel 3.xcdatamodel")
        let v4 = try SchemaCorpus.load(bundle + "VersionedModel 4.xcdatamodel")
        #expect(v4.versionHashes.keys.sorted() == ["Article", "Tag"])
        #expect(v4.versionHashes == v2.versionHashes)
        // The other versions differ exactly where their Article differs; Tag never changes.
        #expect(v3.versionHashes["Article"] != v2.versionHashes["Article"])
        #expect(v1.versionHashes["Article"] != v2.versionHashes["Article"])
        #expect(v1.versionHashes["Tag"] == v2.versionHashes["Tag"])
        #expect(v3.versionHashes["Tag"] == v2.versionHashes["Tag"])
    }

    private static let base: [EntityDescription] = [
        EntityDescription(
            name: "Author",
            attributes: [
                AttributeDescription(name: "name", type: .string, isOptional: false, defaultValue: "x", userInfo: ["k": "v"]),
                AttributeDescription(name: "born", type: .date),
            ],
            relationships: [
                RelationshipDescription(name: "books", destination: "Book", inverse: "author", isToMany: true),
            ],
            uniquenessConstraints: [["name"]]),
        EntityDescription(
            name: "Book",
            attributes: [AttributeDescription(name: "title", type: .string)],
            relationships: [RelationshipDescription(name: "author", destination: "Author", inverse: "books")]),
    ]

    private func hashes(_ change: (inout [EntityDescription]) -> Void) throws -> [String: String] {
        var defs = Self.base
        change(&defs)
        return try Schema(entities: defs).versionHashes
    }

    @Test func hashesAreStableAndDistinct() throws {
        let a = try hashes { _ in }
        let b = try hashes { _ in }
        #expect(a == b)
        #expect(a["Author"] != a["Book"])
        // Core Data's 32-byte hashes, in base64 as its metadata shows them.
        #expect(a.values.allSatisfy { Data(base64Encoded: $0)?.count == 32 })
    }

    /// The framework's version hash is Core Data's: the same bytes `coreDataVersionHashes` computes (which the
    /// corpus tests hold to real Core Data stores and models).
    @Test func versionHashesAreCoreDatas() throws {
        let schema = try Schema(entities: Self.base)
        #expect(schema.versionHashes == schema.coreDataVersionHashes.base64EntityHashes)
        for entity in schema.entities {
            #expect(Data(base64Encoded: entity.versionHash) == schema.coreDataVersionHash(ofEntity: entity.name))
        }
    }

    @Test func storedChangesChangeTheHash() throws {
        let original = try hashes { _ in }["Author"]
        let changes: [(String, (inout [EntityDescription]) -> Void)] = [
            ("attribute type", { $0[0].attributes[1].type = .string }),
            ("optionality", { $0[0].attributes[0].isOptional = true }),
            ("added attribute", { $0[0].attributes.append(AttributeDescription(name: "bio", type: .string)) }),
            ("renamed attribute", { $0[0].attributes[1].name = "birth" }),
            ("ordered", { $0[0].relationships[0].isOrdered = true }),
            ("max count", { $0[0].relationships[0].maxCount = 5 }),
            ("uniqueness", { $0[0].uniquenessConstraints = [] }),
            ("modifier", { $0[0].versionHashModifier = "2" }),
            ("abstract", { $0[0].isAbstract = true }),
        ]
        for (label, change) in changes {
            #expect(try hashes(change)["Author"] != original, "\(label)")
        }
        // A relationship change on Book shows on Book, not on Author.
        let toMany = try hashes { $0[1].relationships[0].isToMany = true; $0[1].relationships[0].maxCount = 0 }
        #expect(toMany["Book"] != (try hashes { _ in })["Book"])
    }

    /// Resolutions of equal definitions share their hashes (kept per process): each resolution still gets the
    /// hashes of its own definitions, whatever was resolved in between, and they are what a fresh hasher computes.
    @Test func resolvingAgainGivesEachDefinitionsItsOwnHashes() throws {
        let original = try hashes { _ in }
        let modified = try hashes { $0[0].attributes[1].versionHashModifier = "again" }
        #expect(modified["Author"] != original["Author"])
        #expect(modified["Book"] == original["Book"])
        #expect(try hashes { _ in } == original)
        #expect(try hashes { $0[0].attributes[1].versionHashModifier = "again" } == modified)
        let schema = try Schema(entities: Self.base)
        #expect(original["Author"] == schema.coreDataVersionHash(ofEntity: "Author")?.base64EncodedString())
    }

    @Test func nonStoredChangesKeepTheHash() throws {
        let original = try hashes { _ in }
        let changes: [(String, (inout [EntityDescription]) -> Void)] = [
            ("default value", { $0[0].attributes[0].defaultValue = "y" }),
            ("no default", { $0[0].attributes[0].defaultValue = nil }),
            ("attribute userInfo", { $0[0].attributes[0].userInfo = ["other": "1"] }),
            ("entity userInfo", { $0[0].userInfo = ["k": "v"] }),
            ("relationship userInfo", { $0[0].relationships[0].userInfo = ["k": "v"] }),
            ("delete rule", { $0[0].relationships[0].deleteRule = .cascade }),
            ("class name", { $0[0].representedClassName = "AuthorMO" }),
            ("declaration order", { $0[0].attributes.reverse() }),
            ("transient attribute", { $0[0].attributes.append(AttributeDescription(name: "cache", type: .binary, isTransient: true)) }),
        ]
        for (label, change) in changes {
            #expect(try hashes(change) == original, "\(label)")
        }
    }
}
