import Foundation
import StoreAPI
import StoreModels
import StoreTestSupport
import Testing

/// The articles' code compiles (it is in ArticleCode.swift) and does what they say.
@Suite("Article code")
struct ArticleCodeTests {
    static let catalog = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Sources/StoreModels/StoreModels.docc").standardizedFileURL
    static let code = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("ArticleCode.swift")

    @Test("Every Swift block of the articles is in ArticleCode.swift", arguments: ["Observation.md", "Concurrency.md", "AggregatesAndUpserts.md"])
    func blocksAreCompiled(article: String) throws {
        let markdown = try String(contentsOf: Self.catalog.appendingPathComponent(article), encoding: .utf8)
        let source = try String(contentsOf: Self.code, encoding: .utf8)
        var blocks: [[String]] = []
        var lines = markdown.components(separatedBy: "\n")[...]
        while let start = lines.firstIndex(of: "```swift") {
            lines = lines[(start + 1)...]
            let end = lines.firstIndex(of: "```") ?? lines.endIndex
            blocks.append(Array(lines[..<end]))
            lines = lines[end...]
        }
        #expect(blocks.count >= 2)
        for block in blocks {
            let text = block.joined(separator: "\n")
            #expect(source.contains(text), "\(article) has code that ArticleCode.swift does not compile:\n\(text)")
        }
    }

    @Test("The Concurrency article's actor saves where an observation sees it")
    func importerIsObserved() async throws {
        let db = try StoreKind.memory.open(in: try TemporaryDirectory("article-importer"))
        var changes = db.observe(Book.self).makeAsyncIterator()
        _ = try await changes.next()
        let importer = Importer(coordinator: db.coordinator)
        let id = try await importer.add(title: "The Lathe of Heaven", pages: 184)
        let change = try #require(try await changes.next())
        #expect(change.inserted.map(\.title) == ["The Lathe of Heaven"])
        #expect(change.inserted.first?.persistentID?.objectID == id)
        let context = try mergingContext(of: db)
        #expect(context.automaticallyMergesChanges)
        try db.close()
    }
}
