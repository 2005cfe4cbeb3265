import Foundation

/// ISO 8601 dates (UTC, `Z`) that round-trip a `Date` bit for bit.
///
/// Foundation's formatters stop at milliseconds; a store operation must not. The seconds are written as the
/// shortest decimal that reads back as the same `Double` (so `…:00.5Z`, `…:07.1234568Z`, and no fraction for whole
/// seconds), and years outside 0001–9999 use the ISO expanded form (`-0044-03-15T…`, `+12345-…`), so
/// `Date.distantPast` and `Date.distantFuture` survive too. The reader rebuilds that exact decimal before converting
/// it, so no rounding happens on the way back, including for instants a hair before a whole second.
///
/// Values no calendar date can express are written in a non-ISO form the reader also accepts: `NaN`, `+inf`,
/// `-inf`, `-0.0` (negative zero, which would otherwise read back as +0), and for instants more than 2^62 seconds (about 146 billion years) from 2001 the plain number of seconds
/// since 2001-01-01 (`1e+20`).
@_spi(BackendKit) public enum ExactISO8601 {
    /// Beyond this many seconds from the reference date, dates are written as plain seconds (see above).
    static let calendarLimit = 4_611_686_018_427_387_904.0  // 2^62
    /// The reader's year bound: keeps every intermediate of the day arithmetic inside Int64.
    static let maxYear: Int64 = 200_000_000_000

    /// Formats `date` exactly.
    public static func string(from date: Date) -> String {
        let t = date.timeIntervalSinceReferenceDate
        guard t.isFinite else { return t.isNaN ? "NaN" : (t > 0 ? "+inf" : "-inf") }
        if t == 0 && t.sign == .minus { return "-0.0" }
        guard abs(t) < calendarLimit else { return "\(t)" }
        // The shortest decimal D that reads back as t, split into floor(D) and D - floor(D) exactly, in digits.
        let (integerDigits, fractionDigits) = decimalDigits(abs(t))
        var whole = Int64(integerDigits) ?? 0  // |t| < 2^62, so the integer part fits
        var fraction = fractionDigits
        if t < 0 {
            whole = -whole
            if !fraction.isEmpty {
                whole -= 1
                fraction = complement(fraction)
            }
        }
        let seconds = whole + 978_307_200  // 2001-01-01 → Unix epoch
        let days = floorDiv(seconds, 86_400)
        let secOfDay = seconds - days * 86_400
        let (y, m, d) = civil(fromDays: days)
        var out = yearString(y) + "-" + pad(m, 2) + "-" + pad(d, 2)
        out += "T" + pad(secOfDay / 3600, 2) + ":" + pad(secOfDay / 60 % 60, 2) + ":" + pad(secOfDay % 60, 2)
        if !fraction.isEmpty { out += "." + fraction }
        return out + "Z"
    }

    /// Parses an ISO 8601 date-time (`Z` or `±hh:mm` offset, any number of fraction digits; no offset means UTC),
    /// or a date alone (`2019-05-01`, midnight UTC), or the non-ISO forms ``string(from:)`` writes for values no
    /// calendar date expresses. Returns `nil` for anything else, including impossible dates such as February 30.
    public static func date(from string: String) -> Date? {
        switch string {
        case "NaN": return Date(timeIntervalSinceReferenceDate: .nan)
        case "+inf": return Date(timeIntervalSinceReferenceDate: .infinity)
        case "-inf": return Date(timeIntervalSinceReferenceDate: -.infinity)
        case "-0.0": return Date(timeIntervalSinceReferenceDate: -0.0)
        default: break
        }
        if let raw = Double(string), raw.isFinite, abs(raw) >= calendarLimit {
            return Date(timeIntervalSinceReferenceDate: raw)
        }
        var s = Substring(string)
        var sign: Int64 = 1
        if s.first == "-" || s.first == "+" { sign = s.first == "-" ? -1 : 1; s = s.dropFirst() }
        guard let dash1 = s.firstIndex(of: "-") else { return nil }
        let yearText = s[s.startIndex..<dash1]
        guard (4...12).contains(yearText.count), yearText.allSatisfy(isDigit), let year = Int64(yearText),
              year <= maxYear
        else { return nil }
        s = s[s.index(after: dash1)...]
        guard s.count >= 5, s.prefix(2).allSatisfy(isDigit), let month = Int64(s.prefix(2)),
              s.dropFirst(2).first == "-", s.dropFirst(3).prefix(2).allSatisfy(isDigit),
              let day = Int64(s.dropFirst(3).prefix(2)), (1...12).contains(month),
              (1...daysInMonth(sign * year, month)).contains(day)
        else { return nil }
        s = s.dropFirst(5)
        var secondsOfDay: Int64 = 0
        var fraction = Substring("")
        var offset: Int64 = 0
        if let t = s.first, t == "T" || t == " " {
            s = s.dropFirst()
            guard s.count >= 8, s.prefix(2).allSatisfy(isDigit), let h = Int64(s.prefix(2)),
                  s.dropFirst(2).first == ":", s.dropFirst(3).prefix(2).allSatisfy(isDigit),
                  let mi = Int64(s.dropFirst(3).prefix(2)), s.dropFirst(5).first == ":",
                  s.dropFirst(6).prefix(2).allSatisfy(isDigit), let se = Int64(s.dropFirst(6).prefix(2)),
                  h < 24, mi < 60, se < 61
            else { return nil }
            secondsOfDay = h * 3600 + mi * 60 + se
            s = s.dropFirst(8)
            if s.first == "." || s.first == "," {
                let digits = s.dropFirst().prefix(while: isDigit)
                guard !digits.isEmpty else { return nil }
                fraction = digits
                s = s.dropFirst(1 + digits.count)
            }
            if s == "Z" || s == "z" { s = "" }
            else if let c = s.first, c == "+" || c == "-", s.count == 6, s.dropFirst(3).first == ":",
                    s.dropFirst().prefix(2).allSatisfy(isDigit), s.dropFirst(4).prefix(2).allSatisfy(isDigit),
                    let oh = Int64(s.dropFirst().prefix(2)), let om = Int64(s.dropFirst(4).prefix(2)), oh < 24, om < 60 {
                offset = (c == "-" ? -1 : 1) * (oh * 3600 + om * 60)
                s = ""
            }
        }
        guard s.isEmpty else { return nil }
        let days = days(fromCivil: sign * year, month, day)
        let whole = days * 86_400 + secondsOfDay - offset - 978_307_200
        // Rebuild the exact decimal whole + 0.fraction and convert once: adding a separately rounded fraction
        // would round twice.
        let digits = fraction.reversed().drop { $0 == "0" }.reversed()
        if digits.isEmpty { return Date(timeIntervalSinceReferenceDate: Double(whole)) }
        let text = whole >= 0
            ? "\(whole)." + String(digits)
            : "-\(-whole - 1)." + complement(String(digits))
        guard let value = Double(text) else { return nil }
        return Date(timeIntervalSinceReferenceDate: value)
    }

    private static func isDigit(_ c: Character) -> Bool { c.isASCII && c.isNumber }

    /// For a digit string F (last digit non-zero) of n digits, the n digits of 10^n - F: the fraction digits of
    /// 1 - 0.F.
    private static func complement(_ digits: String) -> String {
        var out = digits.utf8.map { UInt8(ascii: "9") - $0 + UInt8(ascii: "0") }
        if let last = out.indices.last { out[last] += 1 }  // the last input digit is non-zero: no carry
        return String(decoding: out, as: UTF8.self)
    }

    /// The integer and fraction digits of the shortest decimal that reads back as `v` (v >= 0), with no exponent
    /// and no trailing fraction zeros.
    private static func decimalDigits(_ v: Double) -> (String, String) {
        let text = "\(v)"  // Swift prints the shortest round-trip form, sometimes with an exponent
        var mantissa = Substring(text)
        var exponent = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = text[..<e]
            exponent = Int(text[text.index(after: e)...]) ?? 0
        }
        let point = mantissa.firstIndex(of: ".") ?? mantissa.endIndex
        let digits = Array(mantissa[..<point].utf8) + Array(mantissa[point...].utf8.dropFirst())
        let pointPosition = mantissa.distance(from: mantissa.startIndex, to: point) + exponent
        var integer: [UInt8]
        var fraction: [UInt8]
        if pointPosition <= 0 {
            integer = [UInt8(ascii: "0")]
            fraction = Array(repeating: UInt8(ascii: "0"), count: -pointPosition) + digits
        } else if pointPosition >= digits.count {
            integer = digits + Array(repeating: UInt8(ascii: "0"), count: pointPosition - digits.count)
            fraction = []
        } else {
            integer = Array(digits[..<pointPosition])
            fraction = Array(digits[pointPosition...])
        }
        while fraction.last == UInt8(ascii: "0") { fraction.removeLast() }
        while integer.count > 1, integer.first == UInt8(ascii: "0") { integer.removeFirst() }
        return (String(decoding: integer, as: UTF8.self), String(decoding: fraction, as: UTF8.self))
    }

    private static func daysInMonth(_ year: Int64, _ month: Int64) -> Int64 {
        switch month {
        case 2:
            let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
            return leap ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's civil-calendar algorithms (proleptic Gregorian), exact for any Int64-representable year.
    private static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = floorDiv(z, 146_097)
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    private static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = floorDiv(y, 400)
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    private static func pad(_ v: Int64, _ width: Int) -> String {
        let s = String(v)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    private static func yearString(_ y: Int64) -> String {
        if (1...9999).contains(y) { return pad(y, 4) }
        return (y < 0 ? "-" : "+") + pad(abs(y), 4)
    }
}
