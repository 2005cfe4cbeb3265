import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// ``DecimalText`` must give exactly Foundation's text and values: stores written before it (and by Foundation
/// directly) hold those strings, and SQLite's uniqueness indexes compare them.
@Suite struct DecimalTextTests {
    static let posix = Locale(identifier: "en_US_POSIX")

    /// A deterministic spread of decimals: small and large significands, positive and negative exponents,
    /// trailing zeros, zero, both signs, and significands past 64 bits (the Foundation path).
    static func samples() -> [Decimal] {
        var generator = SeededGenerator(seed: 0x5EED)
        var values: [Decimal] = [0, 1, -1, 10, 100, Decimal(UInt64.max), -Decimal(UInt64.max), Decimal(UInt64.max) + 1,
                                 Decimal(string: "123456789012345678901234567890.123", locale: posix)!,
                                 Decimal(string: "0.000000000000000000000000000001", locale: posix)!,
                                 // Either side of the fast path's bound (1.8e19), and trailing zeros to drop.
                                 Decimal(17_999_999_999_999_999_999 as UInt64), Decimal(18_000_000_000_000_000_001 as UInt64),
                                 Decimal(sign: .minus, exponent: -2, significand: 1500),
                                 Decimal(sign: .plus, exponent: -25, significand: 1_000_000_000),
                                 Decimal(sign: .plus, exponent: 20, significand: 7)]
        for _ in 0..<5_000 {
            let digits = Int.random(in: 1...19, using: &generator)
            var m: UInt64 = 0
            for _ in 0..<digits { m = m &* 10 &+ UInt64.random(in: 0...9, using: &generator) }
            let exponent = Int.random(in: -30...20, using: &generator)
            let sign: FloatingPointSign = Bool.random(using: &generator) ? .minus : .plus
            values.append(Decimal(sign: sign, exponent: exponent, significand: Decimal(m)))
        }
        return values
    }

    @Test func formatsExactlyAsFoundation() {
        var mismatches: [String] = []
        for d in Self.samples() where DecimalText.string(for: d) != d.description {
            mismatches.append("\(d.description) formatted as \(DecimalText.string(for: d))")
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(10))")
        #expect(DecimalText.string(for: .nan) == "NaN")
    }

    @Test func parsesExactlyAsFoundation() {
        var texts = Self.samples().map(\.description)
        texts += ["1.50", "000123.4500", ".5", "5.", "+7", "-0", "-0.0", "1e3", "1E+2", "1.5e-3", "-2.5E-10", "0e5",
                  "12345678901234567890", "1234567890123456789012345", "9.999999999999999999e100", "1e-120"]
        for text in texts {
            let ours = DecimalText.decimal(from: text)
            let foundation = Decimal(string: text, locale: Self.posix)
            #expect(ours == foundation, "\(text): \(String(describing: ours)) vs Foundation's \(String(describing: foundation))")
            if let ours, let foundation { #expect(ours.description == foundation.description, "\(text)") }
        }
    }

    @Test func refusesWhatIsNotAWholeDecimal() {
        for text in ["", "-", ".", "e5", "1e", "1e+", "12abc", "1.2.3", "1e5x", " 1", "1 ", "0x10", "NaNa", "--1", "١٢"] {
            #expect(DecimalText.decimal(from: text) == nil, "\(String(reflecting: text)) should not be a decimal")
        }
        #expect(DecimalText.decimal(from: "NaN")?.isNaN == true)
    }
}

extension DecimalTextTests {
    /// Reading UTF-8 bytes says whether they are already the canonical text, so stores copy only that as it is.
    @Test func bytesAreReadAndRecognisedAsCanonical() {
        func read(_ s: String) -> (Decimal, Bool)? {
            var s = s
            return s.withUTF8 { DecimalText.decimal(utf8: UnsafeRawBufferPointer($0)).map { ($0.value, $0.isCanonical) } }
        }
        for d in Self.samples() {
            let text = DecimalText.string(for: d)
            let got = read(text)
            #expect(got?.0 == d && got?.1 == true, "\(text)")
        }
        #expect(read("1.50").map { $0.0 == Decimal(string: "1.5")! && !$0.1 } == true)
        #expect(read("+7").map { $0.0 == 7 && !$0.1 } == true)
        #expect(read("1e3").map { $0.0 == 1000 && !$0.1 } == true)
        #expect(read("12abc") == nil && read("") == nil)
    }

    /// The canonical answer comes from the bytes' shape, not from formatting the value: it must agree with
    /// formatting on canonical texts and on every way a text can spell the same value differently.
    @Test func canonicalAnswerAgreesWithFormatting() {
        func check(_ text: String) -> String? {
            var bytes = text
            guard let got = bytes.withUTF8({ DecimalText.decimal(utf8: UnsafeRawBufferPointer($0)) }) else { return nil }
            let expected = DecimalText.string(for: got.value) == text
            return got.isCanonical == expected ? nil : "\(text): isCanonical \(got.isCanonical), formatting says \(expected)"
        }
        var texts = ["0", "-0", "+0", "0.0", "-0.0", "00", "0.", ".5", "5.", "0.5", "-0.5", "00.5", "0.50", "1", "-1", "+1",
                     "10", "010", "1.0", "1.05", "1.050", "1e0", "1E2", "-12.5", "-12.50", "9999999999999999999",
                     "0.0000000000000000001", "1234567890.123456789", "-", "-.5", "1..2", "1.2.3", "0x10", " 1", "1 "]
        var generator = SeededGenerator(seed: 0xDEC1)
        for d in Self.samples() {
            let canonical = DecimalText.string(for: d)
            texts.append(canonical)
            // Ways of spelling the same value that are not its canonical text.
            texts.append("0" + canonical)
            texts.append("+" + canonical)
            texts.append(canonical.contains(".") ? canonical + "0" : canonical + ".0")
            texts.append(canonical + "e0")
            if Bool.random(using: &generator) { texts.append("-" + canonical) }
        }
        let problems = texts.compactMap(check)
        #expect(problems.isEmpty, "\(problems.prefix(10))")
    }
}
