import Foundation
@_spi(BackendKit) import StoreAPI

/// The REAL a decimal column holds for a decimal's text: the double its canonical text (``DecimalText/string(for:)``)
/// spells, as the record path writes it.
///
/// Text that is already canonical and plain — `[-](0|[1-9][0-9]*)[.[0-9]*[1-9]]`, not a negative zero, with at most
/// 19 significant digits — is read as the double it spells as it stands: parsing it into a `Decimal` and writing it
/// again would give the same text back, and costs more than the rest of the value's writing; most such text is
/// read exactly without a parser (``exactly(_:)``). Anything else takes the general path.
enum CoreDataDecimalReal {
    /// The double for decimal text `utf8`, or `nil` when the text is not a decimal.
    static func real(utf8 text: UnsafeRawBufferPointer) -> Double? {
        if isCanonicalPlain(text) { return exactly(text) ?? Double(String(decoding: text, as: UTF8.self)) }
        guard let (d, isCanonical) = DecimalText.decimal(utf8: text) else { return nil }
        return Double(isCanonical ? String(decoding: text, as: UTF8.self) : DecimalText.string(for: d))
    }

    /// The double that canonical plain `text` spells, when its digits read as one integer stay within 2^53 and at
    /// most 22 of them follow the point: that integer and the power of ten are then exact doubles, so their quotient
    /// is the correctly rounded value, the one a full parse of the text gives. `nil` otherwise.
    static func exactly(_ text: UnsafeRawBufferPointer) -> Double? {
        var digits: UInt64 = 0
        var afterPoint = 0
        var seenPoint = false
        for c in text {
            if c == UInt8(ascii: "-") { continue }
            if c == UInt8(ascii: ".") {
                seenPoint = true
                continue
            }
            // At most 19 significant digits (and leading zeros): no overflow.
            digits = digits &* 10 &+ UInt64(c &- UInt8(ascii: "0"))
            if seenPoint { afterPoint += 1 }
        }
        guard digits <= 1 << 53, afterPoint < powersOfTen.count else { return nil }
        let magnitude = Double(digits) / powersOfTen[afterPoint]
        return text.first == UInt8(ascii: "-") ? -magnitude : magnitude
    }

    /// 10^0 … 10^22, every one exactly a double.
    private static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
        1e20, 1e21, 1e22,
    ]

    /// Whether `text` is canonical decimal text of the plain form above.
    static func isCanonicalPlain(_ text: UnsafeRawBufferPointer) -> Bool {
        // Well inside what the general parser reads exactly (19 significant digits, exponents to ±100).
        guard !text.isEmpty, text.count <= 40 else { return false }
        let zero = UInt8(ascii: "0"), nine = UInt8(ascii: "9")
        var i = 0
        let negative = text[0] == UInt8(ascii: "-")
        if negative { i = 1 }
        // The integer part: "0", or digits without a leading zero.
        guard i < text.count, text[i] >= zero, text[i] <= nine else { return false }
        let leadingZero = text[i] == zero
        var significant = 0
        while i < text.count, text[i] >= zero, text[i] <= nine {
            if leadingZero, i > (negative ? 1 : 0) { return false }
            if significant > 0 || text[i] != zero { significant += 1 }
            i += 1
        }
        if i < text.count {
            // The fraction: a point, then digits that do not end in a zero.
            guard text[i] == UInt8(ascii: "."), i + 1 < text.count, text[text.count - 1] != zero else { return false }
            i += 1
            while i < text.count {
                guard text[i] >= zero, text[i] <= nine else { return false }
                if significant > 0 || text[i] != zero { significant += 1 }
                i += 1
            }
        }
        // Zero is written "0", never "-0".
        return significant <= 19 && !(negative && significant == 0)
    }
}
