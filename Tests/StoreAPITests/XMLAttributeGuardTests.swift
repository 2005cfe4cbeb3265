import Foundation
import StoreAPI
import Testing

/// The pre-parse attribute counter: counts only real attributes of start tags (not `=` in values, comments, CDATA,
/// processing instructions or a DOCTYPE), gives the same answer however the bytes are split into buffers, and
/// reports the line of the attribute that broke the limit.
@Suite struct XMLAttributeGuardTests {
    static func element(_ count: Int) -> String {
        "<object " + (0..<count).map { "a\($0)=\"v=\($0)>\"" }.joined(separator: "\n  ") + "/>"
    }

    /// Scans `text` in buffers of `chunk` bytes; the verdict and the line.
    static func scan(_ text: String, chunk: Int) -> (Bool, Int) {
        var guardian = XMLAttributeGuard()
        let bytes = Array(text.utf8)
        var ok = true
        var start = 0
        while start < bytes.count, ok {
            let end = min(bytes.count, start + chunk)
            ok = bytes[start..<end].withUnsafeBufferPointer { guardian.scan($0) }
            start = end
        }
        return (ok, guardian.line)
    }

    static let noise = """
        <?xml version="1.0"?>
        <!DOCTYPE database [ <!ELEMENT a (b)> <!-- a="1" b="2" --> <!ATTLIST a x CDATA "y=z"> ]>
        <!-- <object a="1" b="2" c="3"> -->
        <database><![CDATA[ <x a="1" b="2"> ]]><?pi a="1" b="2"?>
        <attribute name="x" type="string">a=b c=d e=f</attribute>

        """

    @Test func countsOnlyRealAttributes() {
        let limit = XMLAttributeGuard.limit
        let allowed = Self.noise + Self.element(limit) + "</database>"
        for chunk in [1, 2, 3, 7, 64, 4096] {
            #expect(Self.scan(allowed, chunk: chunk).0, "chunk \(chunk)")
        }
        #expect(XMLAttributeGuard.allows(Array(allowed.utf8)).allowed)
    }

    @Test func refusesOneTooManyAtItsLine() {
        let limit = XMLAttributeGuard.limit
        let refused = Self.noise + Self.element(limit + 1) + "</database>"
        // The element starts after the noise's lines; its attributes are one per line.
        let expectedLine = Self.noise.filter { $0 == "\n" }.count + 1 + limit
        for chunk in [1, 2, 5, 13, 64, 4096, 1 << 20] {
            let (ok, line) = Self.scan(refused, chunk: chunk)
            #expect(!ok, "chunk \(chunk)")
            #expect(line == expectedLine, "chunk \(chunk)")
        }
        let whole = XMLAttributeGuard.allows(Array(refused.utf8))
        #expect(!whole.allowed && whole.line == expectedLine)
    }

    @Test func countsEveryLineOfAnAcceptedDocument() {
        let text = Self.noise + Self.element(3) + "\n</database>\n"
        for chunk in [1, 4, 100] {
            #expect(Self.scan(text, chunk: chunk) == (true, text.filter { $0 == "\n" }.count + 1))
        }
    }
}
