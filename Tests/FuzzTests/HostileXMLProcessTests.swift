import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing
import XMLBackend

/// Hostile XML stores and models read by the real `storectl` in a child process, whose peak memory (`ru_maxrss`)
/// and running time are bounded: a clear error (exit status 2, naming the file), no secret in the output, and a
/// child killed by the generous timeout counts as a hang.
///
/// The bounds are generous on purpose (this is not a benchmark): they separate "bounded" from "grows with what
/// the attacker asked for" — a billion laughs expanded is gigabytes, a quadratic check is hours.
@Suite(.serialized) struct HostileXMLProcessTests {
    static let timeout = 120.0
    static let memoryBound = 400 << 20

    static let laughs: String = {
        var entities = ["<!ENTITY lol0 \"lollollollollollollollollollol\">"]
        for i in 1...12 { entities.append("<!ENTITY lol\(i) \"\(String(repeating: "&lol\(i - 1);", count: 10))\">") }
        return "<!DOCTYPE database [\n\(entities.joined(separator: "\n"))\n]>"
    }()

    /// Runs `storectl <verb> [--type xml] <file>` for info and export; both must fail cleanly within the bounds.
    static func expectRefused(_ file: URL, _ fragments: [String] = [], secret: String? = nil, memoryBound: Int = memoryBound,
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        let storectl = try BuiltTools.require(BuiltTools.storectl, "storectl", sourceLocation: sourceLocation)
        for arguments in [["info", file.path], ["export", "--type", "xml", file.path]] {
            let result = try ChildProcess.run(storectl, arguments, timeout: timeout)
            let what = "storectl \(arguments.dropLast().joined(separator: " ")) \(file.lastPathComponent): \(result)"
            #expect(!result.timedOut && result.signal == nil, "\(what)", sourceLocation: sourceLocation)
            #expect(result.exitStatus == 2, "\(what)", sourceLocation: sourceLocation)
            #expect(result.stderr.contains(file.lastPathComponent), "the error names the file: \(what)", sourceLocation: sourceLocation)
            #expect(result.peakMemoryBytes < memoryBound, "memory stays bounded: \(what)", sourceLocation: sourceLocation)
            // The sniffer reads the first 16 KB; what it cannot parse is refused as "not a store" before the
            // reader runs. Past the sniffer, the reader's message says what is wrong.
            let sniffed = result.stderr.contains("expected a xml store") || result.stderr.contains("not a store")
            if arguments.contains("--type"), !sniffed {
                for f in fragments {
                    #expect(result.stderr.contains(f), "the error says '\(f)': \(what)", sourceLocation: sourceLocation)
                }
            }
            if let secret {
                #expect(!(result.stdout + result.stderr).contains(secret), "no secret in the output: \(what)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func externalEntitiesAreNeverFetched() throws {
        let dir = try TemporaryDirectory("hostile-xxe")
        let secret = "TOP-SECRET-\(UUID().uuidString)"
        let secretFile = dir.path("secret.txt")
        try Data(secret.utf8).write(to: secretFile)
        let dtd = dir.path("leak.dtd")
        try Data("<!ENTITY leak SYSTEM \"\(secretFile.absoluteString)\">".utf8).write(to: dtd)
        let content = "<object type=\"A\" id=\"z1\"><attribute name=\"x\" type=\"string\">&xxe;</attribute></object>"
        let cases: [(String, String, String)] = [
            ("file", content, "<!DOCTYPE database [<!ENTITY xxe SYSTEM \"\(secretFile.absoluteString)\">]>"),
            // 192.0.2.0/24 is TEST-NET-1: a fetch would hang until the timeout instead of failing fast.
            ("http", content, "<!DOCTYPE database [<!ENTITY xxe SYSTEM \"http://192.0.2.1/secret\">]>"),
            ("parameter", content.replacingOccurrences(of: "xxe", with: "leak"),
             "<!DOCTYPE database [<!ENTITY % p SYSTEM \"\(dtd.absoluteString)\"> %p;]>"),
            ("external-subset", content.replacingOccurrences(of: "xxe", with: "leak"),
             "<!DOCTYPE database SYSTEM \"\(dtd.absoluteString)\">"),
            ("http-subset", content.replacingOccurrences(of: "xxe", with: "leak"),
             "<!DOCTYPE database SYSTEM \"http://192.0.2.1/leak.dtd\">"),
        ]
        for (name, objects, doctype) in cases {
            let file = dir.path("xxe-\(name).xml")
            try Data(coreDataDocument(objects, doctype: doctype).utf8).write(to: file)
            try Self.expectRefused(file, ["entit"], secret: secret)
        }
    }

    @Test func entityExpansionIsBounded() throws {
        let dir = try TemporaryDirectory("hostile-laughs")
        let content = "<object type=\"A\" id=\"z1\"><attribute name=\"x\" type=\"string\">&lol12;</attribute></object>"
        let attribute = "<object type=\"&lol12;\" id=\"z1\"></object>"
        let big = "<!DOCTYPE database [<!ENTITY a \"\(String(repeating: "x", count: 10_000))\">]>"
        let cases: [(String, String, String)] = [
            ("laughs-content", content, Self.laughs),
            ("laughs-attribute", attribute, Self.laughs),
            ("quadratic-content", "<object type=\"A\" id=\"z1\"><attribute name=\"x\" type=\"string\">"
                + String(repeating: "&a;", count: 100_000) + "</attribute></object>", big),
            ("quadratic-attribute", "<object type=\"" + String(repeating: "&a;", count: 100_000) + "\" id=\"z1\"></object>", big),
        ]
        for (name, objects, doctype) in cases {
            let file = dir.path("\(name).xml")
            try Data(coreDataDocument(objects, doctype: doctype).utf8).write(to: file)
            try Self.expectRefused(file, ["entit"])
        }
    }

    @Test func deepNestingIsRefused() throws {
        let dir = try TemporaryDirectory("hostile-deep")
        let depth = 1_000_000
        let file = dir.path("deep.xml")
        let objects = "<object type=\"A\" id=\"z1\">" + String(repeating: "<a>", count: depth) + String(repeating: "</a>", count: depth) + "</object>"
        try Data(coreDataDocument(objects).utf8).write(to: file)
        try Self.expectRefused(file, ["line"])
    }

    @Test func hugeValuesAreRefused() throws {
        let dir = try TemporaryDirectory("hostile-huge")
        let size = 100 << 20
        let attribute = dir.path("huge-attribute.xml")
        try Self.writeDocument(to: attribute, before: "<object type=\"A\" id=\"z1\" gid=\"", repeating: "QUJD", bytes: size, after: "\"></object>")
        try Self.expectRefused(attribute, ["line"])
        let text = dir.path("huge-text.xml")
        try Self.writeDocument(to: text, before: "<object type=\"A\" id=\"z1\"><attribute name=\"x\" type=\"binary\">",
                               repeating: "QUJD", bytes: size, after: "</attribute></object>")
        try Self.expectRefused(text, ["line"])
        let name = dir.path("huge-name.xml")
        try Data(coreDataDocument("<object type=\"A\" id=\"z1\"><" + String(repeating: "n", count: 1 << 20) + "/></object>").utf8).write(to: name)
        try Self.expectRefused(name, ["line"])
    }

    @Test func manyAttributesAreRefusedQuickly() throws {
        let dir = try TemporaryDirectory("hostile-attributes")
        let file = dir.path("attributes.xml")
        let attributes = (0..<1_000_000).map { "a\($0)=\"x\"" }.joined(separator: " ")
        try Data(coreDataDocument("<object type=\"A\" id=\"z1\" \(attributes)></object>").utf8).write(to: file)
        try Self.expectRefused(file, ["more than \(XMLAttributeGuard.limit) attributes"])
    }

    @Test func invalidCharactersAreRefused() throws {
        let dir = try TemporaryDirectory("hostile-chars")
        let object = "<object type=\"A\" id=\"z1\"><attribute name=\"x\" type=\"string\">VALUE</attribute></object>"
        var cases: [(String, Data)] = []
        for (name, bad) in [("nul", Data([0])), ("invalid-utf8", Data([0xC3, 0x28, 0xFF])), ("surrogate", Data([0xED, 0xA0, 0x80])),
                            ("fffe", Data([0xEF, 0xBF, 0xBE])), ("control", Data([0x01]))] {
            let parts = coreDataDocument(object).components(separatedBy: "VALUE")
            cases.append((name, Data(parts[0].utf8) + bad + Data(parts[1].utf8)))
        }
        cases.append(("char-ref-nul", Data(coreDataDocument(object.replacingOccurrences(of: "VALUE", with: "&#0;")).utf8)))
        cases.append(("char-ref-beyond", Data(coreDataDocument(object.replacingOccurrences(of: "VALUE", with: "&#x110000;")).utf8)))
        for (name, data) in cases {
            let file = dir.path("chars-\(name).xml")
            try data.write(to: file)
            try Self.expectRefused(file, ["line"])
        }
    }

    /// A large value written by our own writer (in 1 MB text pieces) is not hostile: it loads, in memory that is a
    /// small multiple of its size.
    @Test func aLargeLegitimateValueLoadsInBoundedMemory() throws {
        let storectl = try BuiltTools.require(BuiltTools.storectl, "storectl")
        let dir = try TemporaryDirectory("hostile-legit")
        let url = dir.path("large.xml")
        let schema = try FuzzFixture.schema()
        let store = try XMLStoreBackend().open(at: url, options: StoreOptions(), creating: FuzzFixture.metadata(schema, type: "xml"))
        let blob = Data((0..<(30 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
        try store.save(StoreChanges(inserted: [FuzzFixture.record(schema, "Item", 1, ["blob": .binary(blob), "code": "big"])]))
        try store.close()
        let result = try ChildProcess.run(storectl, ["verify", url.path], timeout: Self.timeout)
        #expect(result.exitStatus == 0, "\(result)")
        #expect(result.peakMemoryBytes < (30 << 20) * 16, "\(result)")
    }

    /// Hostile Xcode models through `storectl schema`: DTDs in any encoding, many attributes, invalid UTF-8.
    @Test func hostileModelsAreRefused() throws {
        let storectl = try BuiltTools.require(BuiltTools.storectl, "storectl")
        let dir = try TemporaryDirectory("hostile-models")
        let laughsModel = Self.laughs.replacingOccurrences(of: "database", with: "model")
            + "<model><entity name=\"A\"><attribute name=\"x\" attributeType=\"String\" defaultValueString=\"&lol12;\"/></entity></model>"
        var utf16 = Data()
        for unit in ("<?xml version=\"1.0\" encoding=\"UTF-16\"?>" + laughsModel).utf16 {
            utf16.append(UInt8(unit & 0xFF))
            utf16.append(UInt8(unit >> 8))
        }
        let attributes = (0..<1_000_000).map { "a\($0)=\"x\"" }.joined(separator: " ")
        let cases: [(String, Data)] = [
            ("laughs", Data(laughsModel.utf8)),
            ("laughs-utf16", utf16),
            ("laughs-utf16-bom", Data([0xFF, 0xFE]) + utf16),
            ("attributes", Data("<model><entity name=\"A\" \(attributes)/></model>".utf8)),
            ("invalid-utf8", Data("<model><entity name=\"A\" x".utf8) + Data([0xFF]) + Data("=\"1\"/></model>".utf8)),
        ]
        for (name, data) in cases {
            let model = dir.path("\(name).xcdatamodel")
            try FileManager.default.createDirectory(at: model, withIntermediateDirectories: true)
            try data.write(to: model.appendingPathComponent("contents"))
            let result = try ChildProcess.run(storectl, ["schema", model.path], timeout: Self.timeout)
            let what = "storectl schema \(name): \(result)"
            #expect(!result.timedOut && result.signal == nil, "\(what)")
            #expect(result.exitStatus == 2 && result.stderr.contains(model.lastPathComponent), "\(what)")
            #expect(result.peakMemoryBytes < Self.memoryBound, "\(what)")
        }
    }

    /// Writes a document whose middle is `bytes` bytes of `repeating`, streamed (so the test itself stays small).
    static func writeDocument(to url: URL, before: String, repeating unit: String, bytes: Int, after: String) throws {
        let parts = coreDataDocument("MIDDLE").components(separatedBy: "MIDDLE")
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
        }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        try handle.write(contentsOf: Data((parts[0] + before).utf8))
        let chunk = Data(String(repeating: unit, count: (1 << 20) / unit.utf8.count).utf8)
        var written = 0
        while written < bytes {
            try handle.write(contentsOf: chunk)
            written += chunk.count
        }
        try handle.write(contentsOf: Data((after + parts[1]).utf8))
    }
}
