import Foundation
import StoreTestSupport
import Testing
@_spi(BackendKit) @testable import StoreAPI

/// Fetch indexes and indexed attributes in the schema: read from Xcode models, kept in the JSON form (documents
/// without them still read), validated, and left out of every version hash.
struct FetchIndexTests {
    private func load(_ body: String) throws -> Schema {
        let tmp = try TemporaryDirectory("fetch-index-tests")
        defer { tmp.remove() }
        return try Schema(xcodeModelAt: try tmp.model("M.xcdatamodel", body: body))
    }

    static let indexedModel = """
        <entity name="Base" isAbstract="YES">
          <attribute name="key" attributeType="String" indexed="YES"/>
          <attribute name="rank" optional="YES" attributeType="Integer 32" usesScalarValueType="YES"/>
          <fetchIndex name="byKeyAndRank">
            <fetchIndexElement property="key" type="Binary" order="ascending"/>
            <fetchIndexElement property="rank" type="Binary" order="descending"/>
          </fetchIndex>
        </entity>
        <entity name="Leaf" parentEntity="Base">
          <attribute name="area" optional="YES" attributeType="Double" usesScalarValueType="YES"/>
          <relationship name="owner" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Leaf"/>
          <fetchIndex name="byArea"><fetchIndexElement property="area" type="RTree"/></fetchIndex>
          <fetchIndex name="byOwner"><fetchIndexElement property="owner" type="Binary" order="ascending"/></fetchIndex>
          <fetchIndex name="byExpression"><fetchIndexElement expression="area * 2" expressionType="Double" type="Binary" order="ascending"/></fetchIndex>
        </entity>
        """

    @Test func xcodeModelFetchIndexesAndIndexedAttributes() throws {
        let s = try load(Self.indexedModel)
        let base = try #require(s.entity(named: "Base")?.definition)
        #expect(base.attributes.map(\.isIndexed) == [true, false])
        #expect(base.fetchIndexes == [FetchIndex(name: "byKeyAndRank", elements: [
            FetchIndex.Element(property: "key"), FetchIndex.Element(property: "rank", isAscending: false),
        ])])
        // The indexed attribute is an index of its own, named after it, first.
        #expect(base.allFetchIndexes.map(\.name) == ["key", "byKeyAndRank"])
        let leaf = try #require(s.entity(named: "Leaf")?.definition)
        // An index over an expression is dropped whole; the inherited index stays on the parent.
        #expect(leaf.fetchIndexes == [
            FetchIndex(name: "byArea", elements: [FetchIndex.Element(property: "area", kind: .rTree)]),
            FetchIndex(name: "byOwner", elements: [FetchIndex.Element(property: "owner")]),
        ])
    }

    @Test func unknownFetchIndexTypeOrOrderNamesTheFile() throws {
        for element in [#"<fetchIndexElement property="k" type="Hash" order="ascending"/>"#,
                        #"<fetchIndexElement property="k" type="Binary" order="sideways"/>"#] {
            let tmp = try TemporaryDirectory("fetch-index-tests")
            defer { tmp.remove() }
            let dir = try tmp.model("Bad.xcdatamodel", body: """
                <entity name="E"><attribute name="k" attributeType="String"/><fetchIndex name="i">\(element)</fetchIndex></entity>
                """)
            let error = try #require(throws: SchemaError.self) { try Schema(xcodeModelAt: dir) }
            #expect(error.description.contains("contents") && error.description.contains("fetch index 'i'"), "\(error)")
        }
    }

    @Test func jsonFormKeepsThemAndOldDocumentsRead() throws {
        let schema = try load(Self.indexedModel)
        let json = try schema.jsonData()
        let text = String(decoding: json, as: UTF8.self)
        #expect(text.contains("\"fetchIndexes\"") && text.contains("\"indexed\" : true") && text.contains("\"kind\" : \"rTree\""))
        #expect(text.contains("\"ascending\" : false"))
        // Both readers: the framework's own and Codable.
        #expect(try Schema(jsonData: json) == schema)
        #expect(try JSONDecoder().decode(Schema.self, from: json) == schema)
        // A document written before fetch indexes existed reads with none.
        let old = #"{"entities": [{"name": "E", "attributes": [{"name": "k", "type": "string"}]}]}"#
        let e = try #require(try Schema(jsonData: Data(old.utf8)).entity(named: "E")?.definition)
        #expect(e.fetchIndexes == [] && e.attributes[0].isIndexed == false)
        // A kind the form does not have is named with its path.
        let bad = #"{"entities": [{"name": "E", "attributes": [{"name": "k", "type": "string"}], "fetchIndexes": [{"name": "i", "elements": [{"property": "k", "kind": "hash"}]}]}]}"#
        let error = try #require(throws: SchemaError.self) { try Schema(jsonData: Data(bad.utf8), file: "s.json") }
        #expect(error.description.contains("s.json") && error.description.contains("hash"), "\(error)")
    }

    @Test func invalidFetchIndexesAreRefused() throws {
        func entity(_ indexes: [FetchIndex]) -> EntityDescription {
            EntityDescription(name: "E", attributes: [AttributeDescription(name: "k", type: .string)], fetchIndexes: indexes)
        }
        let cases: [(FetchIndex, FetchIndex?, String)] = [
            (FetchIndex(name: "i", elements: [FetchIndex.Element(property: "missing")]), nil, "'missing' is not a property"),
            (FetchIndex(name: "i", elements: []), nil, "indexes no property"),
            (FetchIndex(name: "", elements: [FetchIndex.Element(property: "k")]), nil, "no name"),
            (FetchIndex(name: "i", elements: [FetchIndex.Element(property: "k")]),
             FetchIndex(name: "i", elements: [FetchIndex.Element(property: "k", isAscending: false)]), "two of that name"),
        ]
        for (first, second, reason) in cases {
            let error = try #require(throws: SchemaError.self) {
                try Schema(entities: [entity([first] + (second.map { [$0] } ?? []))])
            }
            guard case .invalidFetchIndex(entity: "E", _, let why) = error else {
                Issue.record("\(error)")
                continue
            }
            #expect(why.contains(reason), "\(why)")
        }
    }

    /// Indexes change how a store is searched, never what it holds: no version hash covers them, Core Data's
    /// included (the corpus models with fetch indexes reproduce their stored hashes, CoreDataVersionHashTests).
    @Test func fetchIndexesChangeNoVersionHash() throws {
        let indexed = try load(Self.indexedModel)
        let plain = try Schema(entities: indexed.definitions.map { d in
            var d = d
            d.fetchIndexes = []
            d.attributes = d.attributes.map {
                var a = $0
                a.isIndexed = false
                return a
            }
            return d
        })
        #expect(plain != indexed)
        #expect(plain.coreDataVersionHashes.entityHashes == indexed.coreDataVersionHashes.entityHashes)
        #expect(plain.versionHashes == indexed.versionHashes)
    }

    @Test("corpus models with fetch indexes load them", .enabled(if: SchemaCorpus.isPresent, SchemaCorpus.absentMessage))
    func corpusFetchIndexes() throws {
        let bookmarks = try SchemaCorpus.load("duckduckgo__BrowserServicesKit__BookmarksModel.xcdatamodeld/BookmarksModel 5.xcdatamodel")
        #expect(bookmarks.entity(named: "BookmarkEntity")?.definition.fetchIndexes.map(\.name) == ["byUUID", "byURL", "byIsPendingDeletion"])
        let events = try SchemaCorpus.load("drewmccormack__ensembles__CDEEventStoreModel.xcdatamodeld/CDEEventStoreModel_2.xcdatamodel")
        let indexed = events.definitions.flatMap { d in d.attributes.filter(\.isIndexed).map { "\(d.name).\($0.name)" } }
        #expect(indexed.count >= 5, "\(indexed)")
    }
}
