import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// The importer's checks: every bad line is reported with its number, and a rejected file writes nothing (the
/// importer saves through `PersistentStore.save` only, so an in-memory store is as good as any).
@Suite("NDJSON import validation")
struct ImporterValidationTests {
    static let schema: Schema? = try? Schema(xcodeModelAt: PackagePaths.libraryModel)

    let a1 = "A0000000-0000-0000-0000-000000000001"
    let a2 = "A0000000-0000-0000-0000-000000000002"
    let b1 = "B0000000-0000-0000-0000-000000000001"
    let b2 = "B0000000-0000-0000-0000-000000000002"
    let t1 = "C0000000-0000-0000-0000-000000000001"
    let u1 = "D0000000-0000-0000-0000-000000000001"
    let u2 = "D0000000-0000-0000-0000-000000000002"

    func author(_ id: String, _ name: String, books: [String]? = nil, extra: String = "") -> String {
        let rel = books.map { ",\"relationships\":{\"books\":[\($0.map { "\"\($0)\"" }.joined(separator: ","))]}" } ?? ""
        return "{\"entity\":\"Author\",\"id\":\"\(id)\",\"attributes\":{\"name\":\"\(name)\"\(extra)}\(rel)}"
    }

    func book(_ id: String, uid: String, author: String? = nil, tags: [String] = []) -> String {
        var rel = "\"tags\":[\(tags.map { "\"\($0)\"" }.joined(separator: ","))]"
        if let author { rel += ",\"author\":\"\(author)\"" }
        return "{\"entity\":\"Book\",\"id\":\"\(id)\",\"attributes\":{\"title\":\"T\",\"uid\":\"\(uid)\"},\"relationships\":{\(rel)}}"
    }

    func withStore(_ body: (any PersistentStore) throws -> Void) throws {
        let schema = try #require(Self.schema, "the sample model at \(PackagePaths.libraryModel.path) must load")
        let store = try MemoryStores.create(schema: schema)
        try body(store)
    }

    /// Imports `lines` and returns the error; the store must be unchanged.
    func rejection(_ lines: [String], into store: any PersistentStore, sourceLocation: SourceLocation = #_sourceLocation) throws -> InterchangeError {
        let before = try recordsByID(store)
        let text = Data(lines.joined(separator: "\n").utf8)
        do {
            try NDJSONImporter().importRecords(from: text, named: "t.ndjson", into: store)
        } catch let error as InterchangeError {
            #expect(try recordsByID(store) == before, "a rejected import must not change the store", sourceLocation: sourceLocation)
            #expect(error.file == "t.ndjson", sourceLocation: sourceLocation)
            return error
        }
        Issue.record("the import should have been rejected", sourceLocation: sourceLocation)
        throw CancellationError()
    }

    func expectRejected(_ lines: [String], line: Int, _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try withStore { store in
            let error = try rejection(lines, into: store, sourceLocation: sourceLocation)
            #expect(error.line == line, "\(error)", sourceLocation: sourceLocation)
            #expect(error.message.contains(fragment), "\(error.message)", sourceLocation: sourceLocation)
        }
    }

    @Test func malformedJSON() throws {
        try expectRejected([author(a1, "A"), author(a2, "B"), "{\"entity\":\"Tag\",\"attributes\":{\"name\":"], line: 3, "malformed JSON")
    }

    @Test func notAnObject() throws {
        try expectRejected(["[1,2,3]"], line: 1, "expected a JSON object")
    }

    @Test func unknownEntity() throws {
        try expectRejected([author(a1, "A"), "{\"entity\":\"Dragon\"}"], line: 2, "unknown entity 'Dragon'")
    }

    @Test func abstractEntity() throws {
        try expectRejected(["{\"entity\":\"Publication\",\"attributes\":{\"title\":\"x\",\"uid\":\"\(u1)\"}}"], line: 1,
                           "abstract and cannot have records of its own; use one of Book, Magazine")
    }

    @Test func unknownKeys() throws {
        try expectRejected([author(a1, "A", extra: ",\"shoeSize\":44")], line: 1, "entity 'Author' has no attribute 'shoeSize'")
        try expectRejected(["{\"entity\":\"Author\",\"attributes\":{\"name\":\"A\"},\"relationships\":{\"friends\":[]}}"], line: 1,
                           "entity 'Author' has no relationship 'friends'")
        try expectRejected(["{\"entity\":\"Author\",\"attributes\":{\"name\":\"A\"},\"relationships\":{\"name\":\"x\"}}"], line: 1,
                           "'name' is an attribute of Author; put it under \"attributes\"")
        try expectRejected(["{\"entity\":\"Tag\",\"attributes\":{\"name\":\"x\"},\"colour\":\"red\"}"], line: 1, "unknown key \"colour\"")
    }

    @Test func wrongValueTypes() throws {
        try expectRejected(["{\"entity\":\"Book\",\"attributes\":{\"title\":\"T\",\"uid\":\"\(u1)\",\"pages\":\"many\"}}"], line: 1,
                           "attribute 'pages' of Book is an integer32; got the string \"many\"")
        try expectRejected(["{\"entity\":\"Book\",\"attributes\":{\"title\":\"T\",\"uid\":\"\(u1)\",\"edition\":70000}}"], line: 1,
                           "attribute 'edition' of Book is an integer16; got the number 70000")
        try expectRejected(["{\"entity\":\"Book\",\"attributes\":{\"title\":\"T\",\"uid\":\"\(u1)\",\"available\":1}}"], line: 1,
                           "attribute 'available' of Book is a boolean")
        try expectRejected(["{\"entity\":\"Book\",\"attributes\":{\"title\":\"T\",\"uid\":\"\(u1)\",\"published\":\"yesterday\"}}"], line: 1,
                           "attribute 'published' of Book is a date")
        try expectRejected(["{\"entity\":\"Book\",\"attributes\":{\"title\":\"T\",\"uid\":\"\(u1)\",\"price\":\"12abc\"}}"], line: 1,
                           "attribute 'price' of Book is a decimal")
    }

    @Test func badUUIDs() throws {
        try expectRejected(["{\"entity\":\"Tag\",\"id\":\"not-a-uuid\",\"attributes\":{\"name\":\"x\"}}"], line: 1, "\"id\" is not a UUID")
        try expectRejected([author(a1, "A", books: ["nope"])], line: 1, "relationship 'books' of Author: element 1 is not a UUID")
    }

    @Test func duplicateID() throws {
        try expectRejected([author(a1, "A"), author(a2, "B"), author(a1, "C")], line: 3, "is used twice (first on line 1)")
    }

    @Test func danglingReference() throws {
        try expectRejected([author(a1, "A"), book(b1, uid: u1, author: a2)], line: 2,
                           "refers to \(a2), which is neither in the file nor in the store")
    }

    @Test func toOneGivenAnArray() throws {
        try expectRejected([author(a1, "A"), "{\"entity\":\"Book\",\"attributes\":{\"title\":\"T\",\"uid\":\"\(u1)\"},\"relationships\":{\"author\":[\"\(a1)\"]}}"],
                           line: 2, "relationship 'author' of Book is to-one; got an array")
    }

    @Test func toManyGivenAString() throws {
        try expectRejected(["{\"entity\":\"Author\",\"attributes\":{\"name\":\"A\"},\"relationships\":{\"books\":\"\(b1)\"}}"], line: 1,
                           "relationship 'books' of Author is to-many")
    }

    @Test func requiredAttributes() throws {
        try expectRejected(["{\"entity\":\"Author\",\"attributes\":{}}"], line: 1, "attribute 'name' of Author is required and has no default value")
        try expectRejected(["{\"entity\":\"Author\",\"attributes\":{\"name\":null}}"], line: 1, "attribute 'name' of Author is required; got null")
    }

    @Test func wrongTargetEntity() throws {
        try expectRejected(["{\"entity\":\"Tag\",\"id\":\"\(t1)\",\"attributes\":{\"name\":\"x\"}}", book(b1, uid: u1, author: t1)], line: 2,
                           "relationship 'author' of Book must point to Author records")
    }

    @Test func uniquenessWithinTheFile() throws {
        try expectRejected(["{\"entity\":\"Tag\",\"attributes\":{\"name\":\"x\"}}", "{\"entity\":\"Tag\",\"attributes\":{\"name\":\"y\"}}",
                            "{\"entity\":\"Tag\",\"attributes\":{\"name\":\"x\"}}"], line: 3,
                           "Tag must be unique on (name): name = \"x\" is already used on line 1")
        // A constraint declared on the abstract parent spans its sub-entities.
        try expectRejected([book(b1, uid: u1), "{\"entity\":\"Magazine\",\"attributes\":{\"title\":\"M\",\"uid\":\"\(u1)\"}}"], line: 2,
                           "Publication must be unique on (uid)")
    }

    @Test func contradictorySides() throws {
        // The book says its author is A1; A2's line lists the book.
        try expectRejected([author(a1, "A"), author(a2, "B", books: [b1]), book(b1, uid: u1, author: a1)], line: 3,
                           "'author' of Book \(b1) (line 3) is Author \(a1) (line 1), but Author \(a2) (line 2) lists it in 'books'")
        // Two authors claim the same book, whose author is to-one.
        try expectRejected([author(a1, "A", books: [b1]), author(a2, "B", books: [b1]), book(b1, uid: u1)], line: 2,
                           "is to-one, but both Author \(a1) (line 1) and Author \(a2) (line 2) list it in 'books'")
    }

    @Test func everyProblemIsReportedWithItsLine() throws {
        try withStore { store in
            let error = try rejection([
                author(a1, "A"),
                "{\"entity\":\"Nope\"}",
                "",
                "{\"entity\":\"Tag\"}",
                "{broken",
                author(a2, "B"),
            ], into: store)
            #expect(error.all.map(\.line) == [2, 4, 5])
            #expect(error.description.split(separator: "\n").count == 3)
            #expect(error.description.hasPrefix("t.ndjson:2: unknown entity 'Nope'"))
        }
    }

    @Test func reportsAreCapped() throws {
        try withStore { store in
            let lines = (0..<500).map { _ in "{\"entity\":\"Nope\"}" }
            var importer = NDJSONImporter()
            importer.maxProblems = 10
            do {
                try importer.importRecords(from: Data(lines.joined(separator: "\n").utf8), into: store)
                Issue.record("should fail")
            } catch let error as InterchangeError {
                #expect(error.all.count == 11)
                #expect(error.all.last?.message == "… and 490 more problems")
                #expect(error.problemCount == 500)
            }
        }
    }

    // MARK: Against the store

    @Test func idAlreadyInTheStore() throws {
        try withStore { store in
            try NDJSONImporter().importRecords(from: Data(author(a1, "A").utf8), into: store)
            let error = try rejection([author(a2, "B"), author(a1, "A again")], into: store)
            #expect(error.line == 2)
            #expect(error.message.contains("id \(a1) already exists in the store"))
        }
    }

    @Test func uniquenessAgainstTheStore() throws {
        try withStore { store in
            try NDJSONImporter().importRecords(from: Data("{\"entity\":\"Tag\",\"attributes\":{\"name\":\"poetry\"}}".utf8), into: store)
            let error = try rejection(["{\"entity\":\"Tag\",\"attributes\":{\"name\":\"prose\"}}",
                                       "{\"entity\":\"Tag\",\"attributes\":{\"name\":\"poetry\"}}"], into: store)
            #expect(error.line == 2)
            #expect(error.message.contains("is already used by a stored record (Tag p"))
        }
    }

    @Test func storedToOneIsNeverRepointed() throws {
        try withStore { store in
            try NDJSONImporter().importRecords(from: Data([author(a1, "A"), book(b1, uid: u1, author: a1)].joined(separator: "\n").utf8), into: store)
            let error = try rejection([author(a2, "B", books: [b1])], into: store)
            #expect(error.line == 1)
            #expect(error.message.contains("already has a 'author'"))
        }
    }

    // MARK: What a good file writes

    @Test func inversesAreFilledFromEitherSide() throws {
        try withStore { store in
            let summary = try NDJSONImporter().importRecords(from: Data([
                book(b1, uid: u1, tags: [t1]),              // many-to-many from the book's side, before the tag
                author(a1, "A", books: [b2, b1]),           // ordered to-many from the author's side
                book(b2, uid: u2),
                "{\"entity\":\"Tag\",\"id\":\"\(t1)\",\"attributes\":{\"name\":\"x\"}}",
                "{\"entity\":\"Author\",\"id\":\"\(a2)\",\"attributes\":{\"name\":\"B\"},\"relationships\":{\"mentor\":\"\(a1)\"}}",
            ].joined(separator: "\n").utf8), into: store)
            #expect(summary.inserted == 5)
            #expect(summary.insertedByEntity == ["Book": 2, "Author": 2, "Tag": 1])
            let records = try recordsByID(store)
            let schema = store.metadata.schema
            func rel(_ id: String, _ name: String) throws -> [UUID] {
                let uuid = try #require(UUID(uuidString: id))
                let r = try #require(records[uuid])
                let e = try #require(schema.entity(named: r.entity))
                let keys = r.relationships[try #require(e.relationshipIndex(name))].keys
                let relationship = try #require(e.relationship(name))
                let root = try #require(schema.entity(named: relationship.destination)).rootName
                let byKey = Dictionary(uniqueKeysWithValues: try store.records(withKeys: keys, root: root).map { ($0.primaryKey, $0.globalID) })
                return keys.compactMap { byKey[$0] }
            }
            #expect(try rel(a1, "books") == [UUID(uuidString: b2), UUID(uuidString: b1)])
            #expect(try rel(b1, "author") == [UUID(uuidString: a1)])
            #expect(try rel(b2, "author") == [UUID(uuidString: a1)])
            #expect(try rel(t1, "publications") == [UUID(uuidString: b1)])
            #expect(try rel(a1, "mentees") == [UUID(uuidString: a2)])
            #expect(try StoreVerifier().verify(store) == [])
        }
    }

    @Test func defaultsAndGeneratedIDs() throws {
        try withStore { store in
            try NDJSONImporter().importRecords(from: Data("\r\n{\"entity\":\"Book\",\"attributes\":{\"title\":\"T\",\"uid\":\"\(u1)\"}}\r\n\r\n".utf8), into: store)
            let books = try store.fetch(FetchRequest(entity: "Book"))
            let book = try #require(books.first)
            #expect(books.count == 1)
            let entity = try #require(store.metadata.schema.entity(named: "Book"))
            #expect(book.attributes[try #require(entity.attributeIndex("edition"))] == .integer16(1))
            #expect(book.attributes[try #require(entity.attributeIndex("available"))] == .boolean(true))
        }
    }

    @Test func referencesToStoredRecordsUpdateTheirInverse() throws {
        try withStore { store in
            try NDJSONImporter().importRecords(from: Data([author(a1, "A"), book(b1, uid: u1, author: a1)].joined(separator: "\n").utf8), into: store)
            var importer = NDJSONImporter()
            importer.historyAuthor = "test-import"
            let summary = try importer.importRecords(from: Data(book(b2, uid: u2, author: a1).utf8), into: store)
            #expect(summary.inserted == 1)
            #expect(summary.updated == 1)
            let schema = store.metadata.schema
            let authorEntity = try #require(schema.entity(named: "Author"))
            let stored = try #require(try store.fetch(FetchRequest(entity: "Author")).first)
            let keys = stored.relationships[try #require(authorEntity.relationshipIndex("books"))].keys
            let ids = try store.records(withKeys: keys, root: "Publication").sorted { keys.firstIndex(of: $0.primaryKey) ?? 0 < keys.firstIndex(of: $1.primaryKey) ?? 0 }.map(\.globalID)
            #expect(ids == [UUID(uuidString: b1), UUID(uuidString: b2)])
            let history = try store.history(after: nil)
            #expect(history.count == 1)
            #expect(history.first?.author == "test-import")
            #expect(history.first?.changes.map(\.kind) == [.insert, .update])
            #expect(history.first?.changes.last?.changedKeys == ["books"])
        }
    }

    @Test func missingFile() throws {
        try withStore { store in
            #expect(throws: InterchangeError.self) {
                try NDJSONImporter().importRecords(fromFileAt: URL(fileURLWithPath: "/nonexistent/x.ndjson"), into: store)
            }
        }
    }
}

/// Every record of a store, by global ID.
func recordsByID(_ store: any PersistentStore) throws -> [UUID: Record] {
    Dictionary(try allRecords(of: store).map { ($0.globalID, $0) }, uniquingKeysWith: { _, last in last })
}
