import BenchLibXML2
import Foundation
import StoreAPI
import XMLBackend

/// Writes and loads `count` records through ``XMLStoreBackend`` and, in the same run, the same element structure
/// with raw `xmlTextWriter` / `xmlTextReader`, and prints rates and the backend/raw ratios.
///
/// Both sides write the same records, made before the clock starts (as a loaded store holds them), so the figures
/// are the XML backend's own cost: value formatting, escaping checks, schema checks and record building on top of
/// libxml2.
func runXMLBenchmark(count: Int) {
    do {
        try XMLBench(count: count).run()
    } catch {
        print("xml benchmark failed: \(error)")
    }
}

private final class XMLBench {
    let count: Int
    var wallTimes: [Double] = []

    init(count: Int) { self.count = count }

    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Book", attributes: [
                AttributeDescription(name: "title", type: .string),
                AttributeDescription(name: "isbn", type: .string),
                AttributeDescription(name: "pages", type: .integer32),
                AttributeDescription(name: "price", type: .double),
                AttributeDescription(name: "rating", type: .float),
                AttributeDescription(name: "inPrint", type: .boolean),
                AttributeDescription(name: "published", type: .date),
                AttributeDescription(name: "cover", type: .binary),
            ]),
        ])
    }

    /// The attribute values of record `i`, shared by both sides so they write the same text.
    static func values(_ i: Int) -> [StoreValue] {
        [
            .string("Title number \(i)"), .string("978-\(1_000_000_000 + i)"), .integer32(Int32(truncatingIfNeeded: 100 + i % 900)),
            .double(Double(i) * 0.25 + 0.99), .float(Float(i % 50) / 10), .boolean(i % 2 == 0),
            .date(Date(timeIntervalSinceReferenceDate: 500_000_000 + Double(i))), .binary(Data([UInt8(i & 0xFF), 1, 2, 3, 4, 5, 6, 7])),
        ]
    }

    /// Records made before the clock starts, as a loaded store holds them.
    struct Generated: AtomicStoreContents {
        let metadata: StoreMetadata
        let records: [Record]
        func forEachRecord(_ body: (Record) throws -> Void) throws {
            for r in records { try body(r) }
        }
        func forEachHistoryTransaction(_ body: (HistoryTransaction) throws -> Void) throws {}
    }

    func run() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("xmlbench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let schema = try Self.schema()
        let metadata = StoreMetadata(storeType: XMLStoreBackend.typeIdentifier, schema: schema)
        let backend = XMLStoreBackend()
        let ours = dir.appendingPathComponent("backend.xml")
        let raw = dir.appendingPathComponent("raw.xml")
        let names = schema.entities[0].attributes.map(\.name)
        let types = ["string", "string", "int32", "double", "float", "bool", "date", "binary"]

        let records = (0..<count).map { i in
            Record(entity: "Book", primaryKey: Int64(i + 1), globalID: UUID(), attributes: Self.values(i), relationships: [])
        }
        let writeOurs = try time { try backend.writeStore(Generated(metadata: metadata, records: records), to: ours) }
        let writeRaw = try time { try rawWrite(to: raw, records: records, names: names, types: types) }
        var loaded = 0
        let readOurs = try time {
            try backend.readStore(at: ours) { if case .record = $0 { loaded += 1 } }
        }
        var rawObjects = 0
        let readRaw = try time { rawObjects = try rawRead(raw) }
        guard loaded == count, rawObjects == count else {
            print("xml benchmark: loaded \(loaded) / raw \(rawObjects), expected \(count)")
            return
        }
        let oursSize = Double((try? FileManager.default.attributesOfItem(atPath: ours.path)[.size] as? Int) ?? 0)
        let rawSize = Double((try? FileManager.default.attributesOfItem(atPath: raw.path)[.size] as? Int) ?? 0)
        func line(_ what: String, _ t: Double, _ wall: Double, _ bytes: Double) -> String {
            "  " + what.padding(toLength: 26, withPad: " ", startingAt: 0)
                + String(format: "%7.3f s CPU (%7.3f s wall)  %9.0f objects/s  %6.1f MB/s", t, wall, Double(count) / t, bytes / t / 1e6)
        }
        print("XML backend, \(count) objects with 8 attributes (rates per CPU second)")
        print(line("write, backend", writeOurs, wallTimes[0], oursSize))
        print(line("write, raw xmlTextWriter", writeRaw, wallTimes[1], rawSize))
        print(line("load, backend", readOurs, wallTimes[2], oursSize))
        print(line("load, raw xmlTextReader", readRaw, wallTimes[3], rawSize))
        print(String(format: "  backend/raw time: write %.2fx, load %.2fx (file %.0f vs %.0f MB)",
                     writeOurs / writeRaw, readOurs / readRaw, oursSize / 1e6, rawSize / 1e6))
    }

    /// CPU seconds (user + system) of this process spent in `body`: on a shared machine wall time mostly
    /// measures the neighbours. Wall time is printed alongside.
    private func time(_ body: () throws -> Void) throws -> Double {
        func cpu() -> Double {
            var ts = timespec()
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
            return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
        }
        let wallStart = DispatchTime.now().uptimeNanoseconds
        let start = cpu()
        try body()
        let used = cpu() - start
        wallTimes.append(Double(DispatchTime.now().uptimeNanoseconds - wallStart) / 1e9)
        return used
    }

    /// The same document structure as the backend writes, straight through `xmlTextWriter`.
    private func rawWrite(to url: URL, records: [Record], names: [String], types: [String]) throws {
        guard let w = xmlNewTextWriterFilename(url.path, 0) else { throw StoreError.io(url, operation: "create", reason: "xmlNewTextWriterFilename") }
        defer { xmlFreeTextWriter(w) }
        func s(_ t: String, _ body: (UnsafePointer<xmlChar>) -> Int32) -> Int32 {
            t.withCString { p in p.withMemoryRebound(to: xmlChar.self, capacity: t.utf8.count + 1, body) }
        }
        var rc = xmlTextWriterStartDocument(w, "1.0", nil, "yes")
        rc = s("database") { xmlTextWriterStartElement(w, $0) }
        for (i, record) in records.enumerated() {
            _ = xmlTextWriterWriteRaw(w, "\n    ")
            _ = s("object") { xmlTextWriterStartElement(w, $0) }
            _ = xmlTextWriterWriteAttribute(w, "type", "Book")
            _ = s("z\(i + 1)") { xmlTextWriterWriteAttribute(w, "id", $0) }
            _ = s(String(i + 1)) { xmlTextWriterWriteAttribute(w, "pk", $0) }
            _ = s(record.globalID.uuidString) { xmlTextWriterWriteAttribute(w, "gid", $0) }
            for (j, v) in record.attributes.enumerated() {
                _ = xmlTextWriterWriteRaw(w, "\n        ")
                _ = xmlTextWriterStartElement(w, "attribute")
                _ = s(names[j]) { xmlTextWriterWriteAttribute(w, "name", $0) }
                _ = s(types[j]) { xmlTextWriterWriteAttribute(w, "type", $0) }
                let text: String
                switch v {
                case .string(let x): text = x
                case .integer32(let x): text = String(x)
                case .double(let x): text = x.description
                case .float(let x): text = x.description
                case .boolean(let x): text = x ? "1" : "0"
                case .date(let x): text = x.timeIntervalSinceReferenceDate.description
                case .binary(let x): text = x.base64EncodedString()
                default: text = ""
                }
                _ = s(text) { xmlTextWriterWriteString(w, $0) }
                _ = xmlTextWriterFullEndElement(w)
            }
            _ = xmlTextWriterWriteRaw(w, "\n    ")
            rc = xmlTextWriterFullEndElement(w)
        }
        rc = xmlTextWriterEndDocument(w)
        if rc < 0 { throw StoreError.io(url, operation: "write", reason: "xmlTextWriter") }
    }

    /// Reads every node and the text of every text node; counts `object` elements.
    private func rawRead(_ url: URL) throws -> Int {
        guard let r = xmlReaderForFile(url.path, nil, Int32(XML_PARSE_NONET.rawValue)) else {
            throw StoreError.io(url, operation: "open", reason: "xmlReaderForFile")
        }
        defer { xmlFreeTextReader(r) }
        let object = "object".withCString { p in p.withMemoryRebound(to: xmlChar.self, capacity: 7) { xmlTextReaderConstString(r, $0) } }
        var objects = 0
        var textBytes = 0
        while xmlTextReaderRead(r) == 1 {
            switch xmlTextReaderNodeType(r) {
            case 1:
                if xmlTextReaderConstName(r) == object { objects += 1 }
            case 3:
                if let v = xmlTextReaderConstValue(r) { textBytes += String(cString: v).utf8.count }
            default: break
            }
        }
        return textBytes >= 0 ? objects : 0
    }
}
