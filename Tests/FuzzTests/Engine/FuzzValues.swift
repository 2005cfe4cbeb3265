import StoreTestSupport

/// Values that tend to break parsers: boundaries of every integer width, numbers no type can hold, text no
/// decoder expects.
enum FuzzValues {
    static let interestingIntegers: [UInt64] = [
        0, 1, 2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x1_0000, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF,
        0x1_0000_0000, 0x7FFF_FFFF_FFFF_FFFF, 0x8000_0000_0000_0000, .max, .max - 1, 16, 32, 64, 100, 512, 1000, 1024,
        4096, 65535, 1 << 20, 1 << 31, 0xBEEF_C0DE, 0xFFFF_FFFF_FFFF_FF00,
    ]

    /// Number spellings, valid and not, in every range.
    static let numbers: [String] = [
        "0", "-0", "00", "01", "1", "-1", "+1", "0.5", ".5", "5.", "1e", "1e+", "-", "1.0", "3.0e0", "0.1",
        "32767", "32768", "-32768", "-32769", "65536", "2147483647", "2147483648", "-2147483649",
        "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
        "18446744073709551615", "18446744073709551616", "123456789012345678901234567890123456789",
        "1e308", "1.7976931348623157e308", "1e309", "-1e309", "4.9e-324", "1e-400", "1e999999999", "1e-999999999",
        "0x10", "0x7FFFFFFFFFFFFFFF", "NaN", "nan", "inf", "-inf", "Infinity", "nan(0x7ff8000000000001)",
        "nan(0xffffffffffffffffffff)", "1,5", "١٢٣", String(repeating: "9", count: 400),
        "0." + String(repeating: "0", count: 400) + "1",
    ]

    /// Text values: empty, huge, control characters, invalid escapes, look-alike identifiers, dates out of range.
    static let strings: [String] = [
        "", " ", "a", "z1", "z0", "z-1", "z99999999999999999999", "p1", "0/0", "1/1", "0/-1", "-1/-1", "99999999/1",
        "a b", "\u{0}", "\u{1}\u{2}", "\r\n", "\u{FEFF}", "\u{FFFE}", "\u{FFFF}", "\u{10FFFF}", "🙂", "e\u{301}",
        "\u{202E}txt", "NaN", "true", "yes", "null", "nil", "%@", "%K", "%d", "\\", "\"", "'", "\\u", "\\uD800",
        "\\u{110000}", "&amp;", "&#0;", "&#xD800;", "&lol;", "<", ">", "]]>",
        "2019-05-01T00:00:00Z", "2019-13-45T25:61:61Z", "0001-01-01T00:00:00Z", "99999-01-01T00:00:00Z",
        "2019-05-01T00:00:00.999999999999Z", "2019-05-01", "1970-01-01T00:00:00+25:00",
        "00000000-0000-0000-0000-000000000000", "D1E2667A-3268-45DB-8AA0-DF69A046A0F1", "not-a-uuid",
        "D1E2667A-3268-45DB-8AA0-DF69A046A0F", "D1E2667A32684 5DB8AA0DF69A046A0F1", "AAAA", "====", "A", "AA=A",
        "x-coredata://D1E2667A-3268-45DB-8AA0-DF69A046A0F1/Book/p1", "http://", "://", "file:///etc/passwd",
        String(repeating: "a", count: 10_000), String(repeating: "🙂", count: 2_000),
        String(repeating: "\\", count: 1_001),
    ]

    /// Byte sequences that are not UTF-8.
    static let invalidUTF8: [[UInt8]] = [
        [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80],
        [0xF8, 0x88, 0x80, 0x80, 0x80], [0xFF], [0xFE], [0x80], [0xBF], [0xC3], [0xE2, 0x82], [0xF0, 0x9F, 0x99],
        [0xEF, 0xBB, 0xBF], [0xFE, 0xFF], [0xFF, 0xFE], [0xC3, 0x28], [0x00, 0x3C, 0x00],
    ]

    static func randomBytes(_ n: Int, rng: inout SeededGenerator) -> [UInt8] {
        (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }

    /// An interesting string or number, as text.
    static func text(_ rng: inout SeededGenerator) -> String {
        rng.percent(40) ? rng.pick(numbers) : rng.pick(strings)
    }
}
