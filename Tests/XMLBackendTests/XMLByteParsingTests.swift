import Foundation
@_spi(BackendKit) import StoreAPI
import Testing
@testable import XMLBackend

/// The byte-level fast paths of loading agree with Foundation on everything they accept, and hand everything else
/// (line-broken base64, stray characters, malformed UUIDs) back to the lenient path.
@Suite struct XMLByteParsingTests {
    static func withBytes<T>(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
        var copy = text
        return copy.withUTF8 { body($0) }
    }

    @Test func base64MatchesFoundationForEveryLength() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...80 {
            let data = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let text = data.base64EncodedString()
            #expect(Self.withBytes(text) { XMLBytes.base64($0) } == data, "length \(length)")
            #expect(XMLValueText.value(from: text, type: .binary) == .binary(data))
        }
    }

    @Test func base64FastPathDeclinesWhatItDoesNotOwn() {
        for text in ["QUJD\nREVG", "QUJ", "QU=D", "QUJD!", "====", "QUJDRA", " QUJD"] {
            #expect(Self.withBytes(text) { XMLBytes.base64($0) } == nil, "\(text)")
        }
        // The full reader still accepts Core Data's line-broken base64.
        let value = Self.withBytes("QUJD\nREVG") { XMLValueText.value(from: $0, type: .binary) }
        #expect(value == .binary(Data("ABCDEF".utf8)))
    }

    @Test func uuidBytesMatchFoundation() {
        for _ in 0..<200 {
            let u = UUID()
            #expect(Self.withBytes(u.uuidString) { FastUUID.parse($0) } == u)
            #expect(Self.withBytes(u.uuidString.lowercased()) { FastUUID.parse($0) } == u)
        }
        let good = UUID().uuidString
        for bad in [String(good.dropLast()), good + "0", good.replacingOccurrences(of: "-", with: "x"), "", "G" + good.dropFirst()] {
            #expect(Self.withBytes(bad) { FastUUID.parse($0) } == nil, "\(bad)")
            #expect(Self.withBytes(bad) { XMLValueText.value(from: $0, type: .uuid) } == UUID(uuidString: bad).map { .uuid($0) })
        }
    }
    /// Decimal text as stores hold it (shortest round-trip forms) and as people write it: wherever the exact fast
    /// path gives a number, it has the very bits `Double(String)` / `Float(String)` give.
    @Test func exactDecimalsMatchTheStandardLibrary() {
        var random = SystemRandomNumberGenerator()
        var texts: [String] = ["0", "-0", "0.0", "-0.0", "1", "12345.24", "4.9", "1e22", "1e23", "9007199254740992",
                               "9007199254740993", "1.7976931348623157e+308", "5e-324", "1E5", "1e-05", "0.1",
                               "123456789012345678", "1234567890123456789", "12345678901234567890", "1.", ".5",
                               "+1", "-", "1e", "1e+", "1.2.3", "1e99999", "00012.50", "inf", "nan", "0x1p3"]
        for _ in 0..<3000 {
            let d = Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &random))
            texts.append(d.description)
            texts.append(Float(bitPattern: UInt32.random(in: 0...UInt32.max, using: &random)).description)
            // Short decimals, as money, measurements and seconds since 2001 are.
            let digits = String(Int.random(in: 0..<[10, 1000, 100_000, 10_000_000, 100_000_000_000][Int.random(in: 0..<5, using: &random)],
                                           using: &random))
            let point = Int.random(in: 0...digits.count, using: &random)
            var text = point == 0 ? digits : digits.prefix(point) + "." + digits.dropFirst(point)
            if text.hasSuffix(".") { text += "0" }
            if Bool.random(using: &random) { text = "-" + text }
            if Int.random(in: 0..<4, using: &random) == 0 { text += "e" + String(Int.random(in: -30...30, using: &random)) }
            texts.append(text)
        }
        var doubles = 0, floats = 0
        for text in texts {
            Self.withBytes(text) { bytes in
                if let d = XMLBytes.exactDouble(bytes) {
                    doubles += 1
                    #expect(d.bitPattern == Double(text)?.bitPattern, "\(text)")
                }
                if let f = XMLBytes.exactFloat(bytes) {
                    floats += 1
                    #expect(f.bitPattern == Float(text)?.bitPattern, "\(text)")
                }
            }
        }
        // The fast paths take most short decimals (else this test would check nothing).
        #expect(doubles > 2000 && floats > 1000, "doubles \(doubles), floats \(floats)")
        for declined in ["1.", ".5", "+1", "-", "1e", "1e+", "1.2.3", "1e99999", "inf", "nan", "0x1p3", "1e23",
                         "12345678901234567890", "9007199254740993"] {
            #expect(Self.withBytes(declined) { XMLBytes.exactDouble($0) } == nil, "\(declined)")
        }
    }
}
