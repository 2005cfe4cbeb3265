import Foundation

/// ISO 8601 dates (UTC, `Z`) that round-trip a `Date` bit for bit.
///
/// Foundation's formatters stop at milliseconds; a store operation must not. The fraction is written with as many
/// digits as the stored `Double` needs (none for whole seconds), and years outside 0001–9999 use the ISO expanded
/// form (`-0044-03-15T…`, `+12345-…`), so `Date.distantPast` and `Date.distantFuture` survive too.
public enum ExactISO8601 {
    /// Formats `date` exactly.
    public static func string(from date: Date) -> String {
        let t = date.timeIntervalSinceReferenceDate
        guard t.isFinite else { return t.isNaN ? "NaN" : (t > 0 ? "+inf" : "-inf") }
        let whole = t.rounded(.down)
        let fraction = t - whole  // exact: |t| < 2^53 and whole is t's floor
        let seconds = Int64(whole) + 978_307_200  // 2001-01-01 → Unix epoch
        let days = floorDiv(seconds, 86_400)
        let secOfDay = seconds - days * 86_400
        let (y, m, d) = civil(fromDays: days)
        var out = yearString(y) + "-" + pad(m, 2) + "-" + pad(d, 2)
        out += "T" + pad(secOfDay / 3600, 2) + ":" + pad(secOfDay / 60 % 60, 2) + ":" + pad(secOfDay % 60, 2)
        if fraction > 0 { out += fractionDigits(fraction) }
        return out + "Z"
    }

    /// Parses an ISO 8601 date-time (`Z` or `±hh:mm` offset, any number of fraction digits), or a date alone
    /// (`2019-05-01`, midnight UTC). Returns `nil` for anything else.
    public static func date(from string: String) -> Date? {
        var s = Substring(string)
        var sign: Int64 = 1
        if s.first == "-" || s.first == "+" { sign = s.first == "-" ? -1 : 1; s = s.dropFirst() }
        guard let dash1 = s.firstIndex(of: "-"), let year = Int64(s[s.startIndex..<dash1]) else { return nil }
        s = s[s.index(after: dash1)...]
        guard s.count >= 5, let month = Int64(s.prefix(2)), s.dropFirst(2).first == "-",
              let day = Int64(s.dropFirst(3).prefix(2)), (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        s = s.dropFirst(5)
        var secondsOfDay: Int64 = 0
        var fraction = 0.0
        var offset: Int64 = 0
        if let t = s.first, t == "T" || t == " " {
            s = s.dropFirst()
            guard s.count >= 8, let h = Int64(s.prefix(2)), s.dropFirst(2).first == ":",
                  let mi = Int64(s.dropFirst(3).prefix(2)), s.dropFirst(5).first == ":",
                  let se = Int64(s.dropFirst(6).prefix(2)), h < 24, mi < 60, se < 61
            else { return nil }
            secondsOfDay = h * 3600 + mi * 60 + se
            s = s.dropFirst(8)
            if s.first == "." || s.first == "," {
                let digits = s.dropFirst().prefix { $0.isASCII && $0.isNumber }
                guard !digits.isEmpty, let f = Double("0." + digits) else { return nil }
                fraction = f
                s = s.dropFirst(1 + digits.count)
            }
            if s == "Z" || s == "z" { s = "" }
            else if let c = s.first, c == "+" || c == "-", s.count == 6, s.dropFirst(3).first == ":",
                    let oh = Int64(s.dropFirst().prefix(2)), let om = Int64(s.dropFirst(4).prefix(2)) {
                offset = (c == "-" ? -1 : 1) * (oh * 3600 + om * 60)
                s = ""
            }
        }
        guard s.isEmpty else { return nil }
        let days = days(fromCivil: sign * year, month, day)
        let unix = days * 86_400 + secondsOfDay - offset
        let whole = Double(unix - 978_307_200)
        return Date(timeIntervalSinceReferenceDate: whole + fraction)
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

    /// The shortest decimal fraction that parses back to exactly `f` (0 < f < 1), as `.ddd`.
    private static func fractionDigits(_ f: Double) -> String {
        // Swift's description is the shortest round-trip representation; expand exponent forms by hand.
        let text = "\(f)"
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            let mantissa = text[..<e].replacingOccurrences(of: ".", with: "")
            let exponent = Int(text[text.index(after: e)...]) ?? 0  // negative for f < 1
            return "." + String(repeating: "0", count: max(0, -exponent - 1)) + mantissa
        }
        return String(text.drop { $0 != "." })
    }
}
