import Foundation
@_spi(BackendKit) import StoreAPI
import Testing

/// ``PredicateEvaluator/fold(_:_:)`` folds ASCII text itself (backends call it once per row, in SQL): it must
/// give exactly what Foundation's folding gives, which it uses for everything else.
@Suite struct PredicateFoldingTests {
    static let options: [ComparisonOptions] = [.caseInsensitive, .diacriticInsensitive, [.caseInsensitive, .diacriticInsensitive]]

    static func foundation(_ s: String, _ options: ComparisonOptions) -> String {
        var fo: String.CompareOptions = []
        if options.contains(.caseInsensitive) { fo.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { fo.insert(.diacriticInsensitive) }
        return s.folding(options: fo, locale: nil)
    }

    @Test func asciiFoldsAsFoundationDoes() {
        let every = String(decoding: (0..<128).map { UInt8($0) }, as: UTF8.self)
        var texts = (0..<128).map { String(decoding: [UInt8($0)], as: UTF8.self) } + [every, "", "Hello, World! 123 ~^`"]
        var g = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            texts.append(String(decoding: (0..<Int.random(in: 1...12, using: &g)).map { _ in UInt8.random(in: 0..<128, using: &g) }, as: UTF8.self))
        }
        for o in Self.options {
            for t in texts {
                let ours = PredicateEvaluator.fold(t, o)
                let theirs = Self.foundation(t, o)
                #expect(Array(ours.unicodeScalars) == Array(theirs.unicodeScalars), "\(String(reflecting: t)) with \(o.rawValue)")
            }
        }
    }

    @Test func nonASCIIIsFoundationsFolding() {
        // ß → ss, İ → i + U+0307, ﬁ → fi, é → e only with [d]; e + U+0301 stays two scalars without [d].
        let cases: [(String, ComparisonOptions, [UInt32])] = [
            ("ß", .caseInsensitive, [0x73, 0x73]), ("İ", .caseInsensitive, [0x69, 0x307]), ("ﬁ", .caseInsensitive, [0x66, 0x69]),
            ("é", .caseInsensitive, [0xE9]), ("é", .diacriticInsensitive, [0x65]), ("e\u{301}", .caseInsensitive, [0x65, 0x301]),
            ("e\u{301}", .diacriticInsensitive, [0x65]), ("Å", [.caseInsensitive, .diacriticInsensitive], [0x61]),
        ]
        for (text, options, scalars) in cases {
            #expect(PredicateEvaluator.fold(text, options).unicodeScalars.map(\.value) == scalars, "\(text) \(options.rawValue)")
            #expect(PredicateEvaluator.fold(text, options) == Self.foundation(text, options))
        }
    }

    @Test func likeAndMatchesHelpers() throws {
        #expect(PredicateEvaluator.like("straße", pattern: "str*e"))
        #expect(PredicateEvaluator.like("a\u{0}b", pattern: "a?b"))
        #expect(!PredicateEvaluator.like("ab", pattern: "a%"))
        #expect(PredicateEvaluator.like("", pattern: "*"))
        let regex = try PredicateEvaluator.regularExpression("al.*", .caseInsensitive)
        #expect(PredicateEvaluator.matches("ALPHA", regex, .caseInsensitive))
        #expect(!PredicateEvaluator.matches("xALPHA", regex, .caseInsensitive))
        #expect(throws: StoreError.self) { try PredicateEvaluator.regularExpression("(", []) }
    }
}
