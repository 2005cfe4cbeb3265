import Foundation
@_spi(BackendKit) import StoreAPI

/// Parsing and formatting on raw bytes for the hot paths of loading and saving (keys, UUIDs, base64), where going
/// through `String` and Foundation's `sscanf`-based UUID parser costs more than the XML itself.
enum XMLBytes {
    /// A decimal `Int64` (optional sign) spanning all of `bytes`.
    static func int64<C: Collection>(_ bytes: C) -> Int64? where C.Element == UInt8 {
        var it = bytes.makeIterator()
        guard var c = it.next() else { return nil }
        let negative = c == UInt8(ascii: "-")
        if negative || c == UInt8(ascii: "+") {
            guard let next = it.next() else { return nil }
            c = next
        }
        var value: Int64 = 0
        var digits = 0
        while true {
            let d = c &- 0x30
            guard d < 10 else { return nil }
            // Accumulate negatively so Int64.min parses.
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (v, o2) = m.subtractingReportingOverflow(Int64(d))
            guard !o1, !o2 else { return nil }
            value = v
            digits += 1
            guard let next = it.next() else { break }
            c = next
        }
        guard digits > 0 else { return nil }
        if negative { return value }
        return value == .min ? nil : -value
    }

    /// A decimal number as digits and a power of ten: `[-]digits[.digits][e|E[+|-]digits]`, at most 19 digits
    /// before the exponent (so they fit a `UInt64`). `nil` for anything else — a leading `+`, a bare `.`, hex,
    /// infinities, NaNs, longer numbers — which the caller hands to the general path.
    private static func decimalParts(_ bytes: UnsafeBufferPointer<UInt8>) -> (negative: Bool, digits: UInt64, exponent: Int)? {
        let n = bytes.count
        var i = 0
        let negative = n > 0 && bytes[0] == UInt8(ascii: "-")
        if negative { i = 1 }
        var digits: UInt64 = 0
        var count = 0
        var fraction = 0
        var seenPoint = false
        while i < n {
            let c = bytes[i]
            let d = c &- 0x30
            if d < 10 {
                guard count < 19 else { return nil }
                digits = digits &* 10 &+ UInt64(d)
                count += 1
                if seenPoint { fraction += 1 }
            } else if c == UInt8(ascii: "."), !seenPoint, count > 0 {
                seenPoint = true
            } else {
                break
            }
            i += 1
        }
        // Digits on both sides of a point ("1." and ".5" are left to the general path).
        guard count > 0, !seenPoint || fraction > 0 else { return nil }
        var exponent = 0
        if i < n {
            guard bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") else { return nil }
            i += 1
            var negativeExponent = false
            if i < n, bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "+") {
                negativeExponent = bytes[i] == UInt8(ascii: "-")
                i += 1
            }
            var expDigits = 0
            while i < n {
                let d = bytes[i] &- 0x30
                guard d < 10, expDigits < 4 else { return nil }
                exponent = exponent * 10 + Int(d)
                expDigits += 1
                i += 1
            }
            guard expDigits > 0 else { return nil }
            if negativeExponent { exponent = -exponent }
        }
        return (negative, digits, exponent - fraction)
    }

    /// Powers of ten a `Double` holds exactly (10²² is the last: 5²² < 2⁵³).
    private static let exactDoublePowers: [Double] = (0...22).map { e in (0..<e).reduce(1.0) { a, _ in a * 10 } }
    /// Powers of ten a `Float` holds exactly (10¹⁰ is the last: 5¹⁰ < 2²⁴).
    private static let exactFloatPowers: [Float] = (0...10).map { e in (0..<e).reduce(Float(1)) { a, _ in a * 10 } }

    /// A decimal `Double` when one correctly rounded multiplication or division gives it exactly — digits below
    /// 2⁵³ and a power of ten within ±22, both exact in a `Double` (Clinger's fast path) — which is what
    /// `Double(String)` gives too; `nil` otherwise. Most stored doubles and dates take it and skip `strtod`.
    static func exactDouble(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        guard let (negative, digits, exponent) = decimalParts(bytes), digits <= 1 << 53,
              exponent >= -22, exponent <= 22
        else { return nil }
        var value = Double(digits)
        value = exponent < 0 ? value / exactDoublePowers[-exponent] : value * exactDoublePowers[exponent]
        return negative ? -value : value
    }

    /// A decimal `Float` by the same fast path: digits below 2²⁴ and a power of ten within ±10.
    static func exactFloat(_ bytes: UnsafeBufferPointer<UInt8>) -> Float? {
        guard let (negative, digits, exponent) = decimalParts(bytes), digits <= 1 << 24,
              exponent >= -10, exponent <= 10
        else { return nil }
        var value = Float(digits)
        value = exponent < 0 ? value / exactFloatPowers[-exponent] : value * exactFloatPowers[exponent]
        return negative ? -value : value
    }

    /// A decimal `Int64` from a C string.
    static func int64(cString p: UnsafePointer<UInt8>) -> Int64? {
        int64(UnsafeBufferPointer(start: p, count: strlen(UnsafeRawPointer(p).assumingMemoryBound(to: CChar.self))))
    }

    /// A UUID in its 36-character form (either case) from a C string.
    static func uuid(cString p: UnsafePointer<UInt8>) -> UUID? {
        FastUUID.parse(UnsafeBufferPointer(start: p, count: strlen(UnsafeRawPointer(p).assumingMemoryBound(to: CChar.self))))
    }

    /// Strict, padded base64 (what our writer produces) decoded straight from the bytes; `nil` for anything else
    /// (line breaks, stray characters), which the caller then hands to Foundation's lenient path.
    static func base64(_ bytes: UnsafeBufferPointer<UInt8>) -> Data? {
        let n = bytes.count
        guard n % 4 == 0 else { return nil }
        if n == 0 { return Data() }
        let padding = bytes[n - 1] == UInt8(ascii: "=") ? (bytes[n - 2] == UInt8(ascii: "=") ? 2 : 1) : 0
        let size = n / 4 * 3 - padding
        var out = Data(count: size)
        let ok = out.withUnsafeMutableBytes { (dst: UnsafeMutableRawBufferPointer) -> Bool in
            var o = 0
            var i = 0
            while i < n {
                let last = i + 4 == n
                let a = base64Value(bytes[i]), b = base64Value(bytes[i + 1])
                let c = last && padding == 2 ? 0 : base64Value(bytes[i + 2])
                let d = last && padding >= 1 ? 0 : base64Value(bytes[i + 3])
                guard a | b | c | d < 64 else { return false }
                let triple = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                dst[o] = UInt8(truncatingIfNeeded: triple >> 16)
                if o + 1 < size { dst[o + 1] = UInt8(truncatingIfNeeded: triple >> 8) }
                if o + 2 < size { dst[o + 2] = UInt8(truncatingIfNeeded: triple) }
                o += 3
                i += 4
            }
            return true
        }
        return ok ? out : nil
    }

    /// A base64 digit's value; 255 for anything else (padding included).
    @inline(__always)
    private static func base64Value(_ c: UInt8) -> UInt8 {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: 255
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// The upper-case 36-character form, as `UUID.uuidString` writes it.
    static func string(_ u: UUID) -> String {
        let t = u.uuid
        return withUnsafeBytes(of: t) { raw in
            String(unsafeUninitializedCapacity: 36) { out in
                var o = 0
                for (i, byte) in raw.enumerated() {
                    if i == 4 || i == 6 || i == 8 || i == 10 { out[o] = UInt8(ascii: "-"); o += 1 }
                    out[o] = hexDigits[Int(byte >> 4)]
                    out[o + 1] = hexDigits[Int(byte & 0x0F)]
                    o += 2
                }
                return o
            }
        }
    }
}
