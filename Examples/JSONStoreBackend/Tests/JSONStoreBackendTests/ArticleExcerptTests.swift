import Foundation
import Testing

/// The "Writing a Backend" article (in the framework's DocC catalog) quotes this package. Every quoted block starts
/// with a `// <path>` line naming its source, relative to the repository root; this test fails when the source no
/// longer contains it, so the article cannot drift from the code it teaches.
@Suite struct ArticleExcerptTests {
    /// `…/Examples/JSONStoreBackend/Tests/JSONStoreBackendTests/ArticleExcerptTests.swift`, five levels down.
    static let repositoryRoot = (0..<5).reduce(URL(fileURLWithPath: #filePath)) { url, _ in url.deletingLastPathComponent() }
    static let article = repositoryRoot.appendingPathComponent("Sources/StoreAPI/StoreAPI.docc/WritingABackend.md")

    @Test(.enabled(if: FileManager.default.fileExists(atPath: article.path), "needs the framework's repository around the example"))
    func articleExcerptsMatchTheSource() throws {
        let excerpts = Self.excerpts(in: try String(contentsOf: Self.article, encoding: .utf8))
        #expect(excerpts.count >= 8, "the article quotes the example throughout")
        for excerpt in excerpts {
            let source = try String(contentsOf: Self.repositoryRoot.appendingPathComponent(excerpt.path), encoding: .utf8)
            // The pieces between `// …` elisions appear in the source, in order.
            var rest = source[...]
            for piece in excerpt.pieces {
                guard let found = rest.range(of: piece) else {
                    Issue.record("WritingABackend.md quotes \(excerpt.path), which no longer contains:\n\(piece)")
                    break
                }
                rest = rest[found.upperBound...]
            }
        }
    }

    /// The article's Swift code blocks that start with a `// <path>.swift` line, cut into pieces at `// …` lines.
    static func excerpts(in markdown: String) -> [(path: String, pieces: [String])] {
        var excerpts: [(path: String, pieces: [String])] = []
        var lines = markdown.components(separatedBy: "\n")[...]
        while let start = lines.firstIndex(of: "```swift") {
            lines = lines[(start + 1)...]
            let end = lines.firstIndex(of: "```") ?? lines.endIndex
            let block = lines[..<end]
            lines = lines[end...]
            guard let first = block.first, first.hasPrefix("// "), first.hasSuffix(".swift") else { continue }
            let body = Array(block.dropFirst())
            let pieces = body.split { $0.trimmingCharacters(in: .whitespaces) == "// …" }.map { $0.joined(separator: "\n") }
            excerpts.append((String(first.dropFirst(3)), pieces))
        }
        return excerpts
    }
}
