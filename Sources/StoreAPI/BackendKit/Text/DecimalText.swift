import Foundation

/// The text form of decimals that stores write and read: the same strings as `Decimal.description` and
/// `Decimal(string:locale:)` with the POSIX locale, made fast for the common case.
///
/// Foundation's conversions cost microseconds per value, which made decimals the most expensive attribute in a
/// conversion. Values whose significand fits in 64 bits — prices,
/// quantities, nearly every decimal a model holds — are formatted and parsed here with integer arithmetic;
/// anything else goes to Foundation, so the results are always exactly Foundation's.
@_spi(BackendKit) public enum DecimalText {
    private static let posix = Locale(identifier: "en_US_POSIX")

    /// The text of `value`: `Decimal.description` (`"NaN"` for NaN, `"-12.5"`, `"1000"`, `"0.001"`).
    public static func string(for value: Decimal) -> String {
        if value.isNaN { return "NaN" }
        if value.isZero { return "0" }
        // Below 1.8e19 (UInt64.max is 1.84e19) even an approximate conversion to Double proves that the
        // significand fits in 64 bits; comparing Decimals to prove it cost three times as much.
        let significand = NSDecimalNumber(decimal: value.significand.magnitude)
        guard significand.doubleValue < 1.8e19 else { return value.description }
        return format(mantissa: significand.uint64Value, exponent: value.exponent, negative: value.sign == .minus)
    }

    /// `mantissa × 10^exponent` as `Decimal.description` writes it: no exponent notation, no trailing zeros after
    /// the point. Written straight into the string's storage.
    static func format(mantissa: UInt64, exponent: Int, negative: Bool) -> String {
        var m = mantissa
        var scale = -exponent  // digits after the point
        while scale > 0 && m != 0 && m % 10 == 0 {
            m /= 10
            scale -= 1
        }
        if m == 0 { return "0" }
        var digitCount = 1
        var rest = m / 10
        while rest != 0 {
            digitCount += 1
            rest /= 10
        }
        let trailingZeros = max(0, -scale)  // an integer times a power of ten
        scale = max(0, scale)
        let sign = negative ? 1 : 0
        let length: Int
        if scale == 0 {
            length = sign + digitCount + trailingZeros
        } else if digitCount > scale {
            length = sign + digitCount + 1
        } else {
            length = sign + 2 + scale  // "0." and leading zeros
        }
        return String(unsafeUninitializedCapacity: length) { out in
            out.initialize(repeating: UInt8(ascii: "0"))
            if negative { out[0] = UInt8(ascii: "-") }
            // The digits end before the trailing zeros, or at the end when there is a fractional part.
            var end = scale == 0 ? sign + digitCount : length
            let point = scale > 0 ? length - scale - 1 : -1
            if point >= 0 { out[point] = UInt8(ascii: ".") }
            var value = m
            while value != 0 {
                end -= 1
                if end == point { end -= 1 }
                out[end] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
            }
            return length
        }
    }

    /// The decimal a whole string spells (`"NaN"` is NaN), or `nil` when it is not one. Accepts what
    /// `Decimal(string:locale:)` accepts with the POSIX locale, except that trailing text is refused rather than
    /// ignored (`"12abc"` is not 12).
    public static func decimal(from text: some StringProtocol) -> Decimal? {
        if text == "NaN" { return .nan }
        if let fast = parseSimple(text.utf8) { return fast }
        guard isWholeLiteral(text.utf8), let value = Decimal(string: String(text), locale: posix), !value.isNaN else { return nil }
        return value
    }

    /// The same for a `String`, the usual case: other modules call the generic
    /// form unspecialised, and walking the text through protocol witnesses costs more than the parse itself.
    public static func decimal(from text: String) -> Decimal? {
        if text == "NaN" { return .nan }
        if let fast = parseSimple(text.utf8) { return fast }
        guard isWholeLiteral(text.utf8), let value = Decimal(string: text, locale: posix), !value.isNaN else { return nil }
        return value
    }

    /// The decimal that UTF-8 `text` spells, as ``decimal(from:)-(String)`` reads it, and whether `text` is already
    /// its canonical text (``string(for:)``) — so a store copying decimal text can copy it as it is.
    public static func decimal(utf8 text: UnsafeRawBufferPointer) -> (value: Decimal, isCanonical: Bool)? {
        if let fast = parseSimple(text) {
            // What parseSimple reads, string(for:) writes back in one plain form: checking the bytes' shape answers
            // without formatting the value.
            return (fast, isPlainCanonical(text))
        }
        guard let s = String(validating: text, as: UTF8.self), let value = decimal(from: s) else { return nil }
        var canonical = string(for: value)
        let same = canonical.withUTF8 { $0.elementsEqual(text) }
        return (value, same)
    }

    /// Whether text that ``parseSimple(_:)`` reads is the form ``format(mantissa:exponent:negative:)`` writes:
    /// `0`, or an optional `-`, an integer part without leading zeros (`0` before a point), and a fraction that does
    /// not end in `0` — no `+`, no exponent, no `-0`.
    static func isPlainCanonical(_ text: UnsafeRawBufferPointer) -> Bool {
        let zero = UInt8(ascii: "0"), nine = UInt8(ascii: "9"), point = UInt8(ascii: ".")
        var i = 0
        let n = text.count
        let negative = n > 0 && text[0] == UInt8(ascii: "-")
        if negative { i = 1 }
        guard i < n, text[i] >= zero, text[i] <= nine else { return false }
        let leadingZero = text[i] == zero
        var integerDigits = 0
        while i < n, text[i] >= zero, text[i] <= nine {
            integerDigits += 1
            i += 1
        }
        if leadingZero && integerDigits > 1 { return false }
        guard i < n else { return !(leadingZero && negative) }  // "0" is zero's text, "-0" is not
        guard text[i] == point, i + 1 < n else { return false }
        i += 1
        while i < n, text[i] >= zero, text[i] <= nine { i += 1 }
        return i == n && text[n - 1] != zero
    }

    /// `[+-]digits[.digits][(e|E)[+-]digits]` with at most 19 significant digits and a small exponent; `nil`
    /// for everything else (which Foundation then parses).
    static func parseSimple(_ utf8: some Collection<UInt8>) -> Decimal? {
        var i = utf8.makeIterator()
        var c = i.next()
        var negative = false
        if c == UInt8(ascii: "-") || c == UInt8(ascii: "+") {
            negative = c == UInt8(ascii: "-")
            c = i.next()
        }
        var mantissa: UInt64 = 0
        var significant = 0
        var exponent = 0
        var sawDigit = false
        var afterPoint = false
        while let ch = c {
            if ch >= UInt8(ascii: "0") && ch <= UInt8(ascii: "9") {
                sawDigit = true
                if mantissa != 0 || ch != UInt8(ascii: "0") { significant += 1 }
                guard significant <= 19 else { return nil }
                mantissa = mantissa * 10 + UInt64(ch - UInt8(ascii: "0"))
                if afterPoint { exponent -= 1 }
            } else if ch == UInt8(ascii: ".") && !afterPoint {
                afterPoint = true
            } else {
                break
            }
            c = i.next()
        }
        guard sawDigit else { return nil }
        if let e = c {
            guard e == UInt8(ascii: "e") || e == UInt8(ascii: "E") else { return nil }
            c = i.next()
            var exponentNegative = false
            if c == UInt8(ascii: "-") || c == UInt8(ascii: "+") {
                exponentNegative = c == UInt8(ascii: "-")
                c = i.next()
            }
            var value = 0
            var sawExponentDigit = false
            while let ch = c {
                guard ch >= UInt8(ascii: "0") && ch <= UInt8(ascii: "9"), value < 1000 else { return nil }
                value = value * 10 + Int(ch - UInt8(ascii: "0"))
                sawExponentDigit = true
                c = i.next()
            }
            guard sawExponentDigit else { return nil }
            exponent += exponentNegative ? -value : value
        }
        guard exponent >= -100 && exponent <= 100 else { return nil }
        if mantissa == 0 { return Decimal(0) }
        return Decimal(sign: negative ? .minus : .plus, exponent: exponent, significand: Decimal(mantissa))
    }

    /// Whether the text is a decimal literal and nothing more (Foundation stops at the first character it does
    /// not understand and returns what it read so far).
    static func isWholeLiteral(_ utf8: some Collection<UInt8>) -> Bool {
        var i = utf8.makeIterator()
        var c = i.next()
        if c == UInt8(ascii: "-") || c == UInt8(ascii: "+") { c = i.next() }
        var digits = 0
        var point = false
        while let ch = c, (ch >= UInt8(ascii: "0") && ch <= UInt8(ascii: "9")) || (ch == UInt8(ascii: ".") && !point) {
            if ch == UInt8(ascii: ".") { point = true } else { digits += 1 }
            c = i.next()
        }
        guard digits > 0 else { return false }
        guard let e = c else { return true }
        guard e == UInt8(ascii: "e") || e == UInt8(ascii: "E") else { return false }
        c = i.next()
        if c == UInt8(ascii: "-") || c == UInt8(ascii: "+") { c = i.next() }
        var exponentDigits = 0
        while let ch = c {
            guard ch >= UInt8(ascii: "0") && ch <= UInt8(ascii: "9") else { return false }
            exponentDigits += 1
            c = i.next()
        }
        return exponentDigits > 0
    }
}
