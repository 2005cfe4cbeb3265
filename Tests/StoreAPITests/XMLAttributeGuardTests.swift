import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
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

    /// Text runs and values of every length from 0 to 40, at every alignment: the scanner looks for the byte that
    /// ends a run eight bytes at a time, and counts lines the same way.
    @Test func runsOfEveryLengthAndAlignment() {
        let limit = XMLAttributeGuard.limit
        func document(attributes: Int, padding: Int) -> (text: String, refusalLine: Int) {
            var text = String(repeating: " ", count: padding) + "<database>"
            for length in 0...40 {
                // A text run with "=" and ">" in it, a line break at a varying place.
                let run = String(repeating: "t=>", count: length / 3) + String(repeating: "u", count: length % 3)
                text += run.prefix(length / 2) + "\n" + run.dropFirst(length / 2) + "<a x=\"1\"></a>"
            }
            var refusalLine = 0
            var element = "<object"
            for k in 0..<attributes {
                let length = k % 41
                let value = String((0..<length).map { i in i % 7 == 3 ? "=" : i % 11 == 5 ? ">" : i % 13 == 9 ? "\n" : "v" })
                let before = (text + element).filter { $0 == "\n" }.count
                element += (k % 5 == 0 ? "\n" : " ") + "a\(k)=\"\(value)\""
                if k == limit { refusalLine = before + (k % 5 == 0 ? 1 : 0) + 1 }
            }
            return (text + element + "/></database>\n", refusalLine)
        }
        for padding in 0..<9 {
            let allowed = document(attributes: limit, padding: padding).text
            let lines = allowed.filter { $0 == "\n" }.count + 1
            let refused = document(attributes: limit + 1, padding: padding)
            for chunk in [1, 7, 8, 9, 64, 1 << 16] {
                #expect(Self.scan(allowed, chunk: chunk) == (true, lines), "padding \(padding), chunk \(chunk)")
                #expect(Self.scan(refused.text, chunk: chunk) == (false, refused.refusalLine), "padding \(padding), chunk \(chunk)")
            }
        }
    }

    @Test func countsEveryLineOfAnAcceptedDocument() {
        let text = Self.noise + Self.element(3) + "\n</database>\n"
        for chunk in [1, 4, 100] {
            #expect(Self.scan(text, chunk: chunk) == (true, text.filter { $0 == "\n" }.count + 1))
        }
    }
    /// A comment inside a DOCTYPE's internal subset once left the scanner returning to the subset after every
    /// later comment, so the start tag after a top-level comment was skipped as if it were a declaration.
    @Test func aTopLevelCommentAfterTheDocumentTypeReturnsToText() {
        let limit = XMLAttributeGuard.limit
        let text = "<!DOCTYPE d [ <!-- inside --> ]>\n<!-- top -->" + Self.element(limit + 1) + "\n"
        for chunk in [1, 3, 4096] {
            #expect(!Self.scan(text, chunk: chunk).0, "chunk \(chunk)")
        }
    }

    /// Random documents of every construct the scanner follows, whose largest element is generated with exactly
    /// `limit` or `limit + 1` attributes: the verdict is the generator's, and the line is the same at every
    /// buffer size.
    @Test func randomDocumentsGetTheGeneratorsVerdict() {
        var generator = SeededGenerator(seed: 0x5EED)
        func roll(_ bound: Int) -> Int { Int(generator.next() % UInt64(bound)) }
        let limit = XMLAttributeGuard.limit
        func pick(_ s: String, _ count: Int) -> String {
            let chars = Array(s)
            return String((0..<count).map { _ in chars[roll(chars.count)] })
        }
        func element(_ attributes: Int) -> String {
            var tag = "<e\(roll(9))"
            for k in 0..<attributes {
                let quote = roll(2) == 0 ? "\"" : "'"
                let other = quote == "\"" ? "'" : "\""
                tag += (roll(4) == 0 ? "\n" : " ") + "a\(k)" + (roll(3) == 0 ? " = " : "=")
                tag += quote + pick("v=>/\n" + other, roll(12)) + quote
            }
            return tag + (roll(2) == 0 ? "/>" : ">" + pick("t=>\n'\"", roll(10)) + "</e>")
        }
        for round in 0..<60 {
            let refuse = round % 2 == 1
            var text = roll(2) == 0 ? "" : "<?xml version=\"1.0\"?>\n"
            if roll(2) == 0 {
                text += "<!DOCTYPE d [ <!-- a=\"1\" > --> <?p b='2'?> <!ATTLIST d x CDATA \"y=>z\"> ]>\n"
            }
            text += "<d>"
            let big = roll(8)
            for part in 0..<8 {
                switch roll(5) {
                case 0: text += "<!-- <x a=\"1\" b=\"2\"> - " + pick("=>\n", 4) + " -->"
                case 1: text += "<![CDATA[ <x a=\"1\"> ] " + pick("=>]\n", 4) + " ]]>"
                case 2: text += "<?pi a=\"1\" " + pick("=>\n", 4) + "?>"
                case 3: text += pick("t=>\n'\"", roll(20))
                default: text += element(roll(20))
                }
                if part == big { text += element(refuse ? limit + 1 : limit) }
            }
            text += "</d>\n"
            let lines = text.filter { $0 == "\n" }.count + 1
            let whole = Self.scan(text, chunk: 1 << 20)
            #expect(whole.0 == !refuse, "round \(round)")
            if !refuse { #expect(whole.1 == lines, "round \(round)") }
            for chunk in [1, 2, 5, 8, 9, 31] {
                #expect(Self.scan(text, chunk: chunk) == whole, "round \(round), chunk \(chunk)")
            }
        }
    }
}
