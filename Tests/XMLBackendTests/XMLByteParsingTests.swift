import Foundation
import StoreAPI
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
}
