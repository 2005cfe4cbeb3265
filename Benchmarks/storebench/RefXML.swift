import BenchLibXML2
import Foundation

/// The libxml2 references, on the very files our backend wrote: one `xmlTextReader` pass reading every element
/// name, attribute and text, and an `xmlTextWriter` writing exactly the same document (elements, attributes,
/// text, whitespace), then fsync — the durability our writer gives.
enum RefXML {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private static let options = Int32(XML_PARSE_NONET.rawValue)

    @inline(__always) private static func length(_ p: UnsafePointer<xmlChar>?) -> Int {
        guard let p else { return 0 }
        return strlen(UnsafeRawPointer(p).assumingMemoryBound(to: CChar.self))
    }

    /// Reads every node, element name, attribute and text of the file; returns a checksum.
    static func read(_ path: String) throws -> UInt64 {
        guard let r = xmlReaderForFile(path, nil, options) else { throw Failure(description: "\(path): cannot open") }
        defer { xmlFreeTextReader(r) }
        var sum: UInt64 = 0
        while true {
            let rc = xmlTextReaderRead(r)
            if rc != 1 {
                if rc < 0 { throw Failure(description: "\(path): parse error") }
                break
            }
            switch xmlTextReaderNodeType(r) {
            case 1:
                sum &+= UInt64(length(xmlTextReaderConstName(r)))
                while xmlTextReaderMoveToNextAttribute(r) == 1 {
                    sum &+= UInt64(length(xmlTextReaderConstName(r)) &+ length(xmlTextReaderConstValue(r)))
                }
            case 3, 4, 13, 14:
                sum &+= UInt64(length(xmlTextReaderConstValue(r)))
            default:
                break
            }
        }
        return sum
    }

    /// The document as a list of events with interned names, captured so it can be written again.
    struct Image {
        var names: [String] = []
        var events = ByteImage()
        var elements = 0
    }

    // Event tags.
    private static let start: UInt8 = 1, startEmpty: UInt8 = 2, end: UInt8 = 3, text: UInt8 = 4, raw: UInt8 = 5,
                       cdata: UInt8 = 6, comment: UInt8 = 7, done: UInt8 = 0

    static func capture(_ path: String) throws -> Image {
        guard let r = xmlReaderForFile(path, nil, options) else { throw Failure(description: "\(path): cannot open") }
        defer { xmlFreeTextReader(r) }
        var image = Image()
        var ids: [String: Int] = [:]
        func name(_ p: UnsafePointer<xmlChar>?) -> Int {
            let s = p.map { String(cString: $0) } ?? ""
            if let id = ids[s] { return id }
            ids[s] = image.names.count
            image.names.append(s)
            return image.names.count - 1
        }
        func value(_ p: UnsafePointer<xmlChar>?) {
            image.events.blob(p.map(UnsafeRawPointer.init), length(p))
        }
        while xmlTextReaderRead(r) == 1 {
            switch xmlTextReaderNodeType(r) {
            case 1:
                let empty = xmlTextReaderIsEmptyElement(r) == 1
                image.events.tag(empty ? startEmpty : start)
                image.events.length(name(xmlTextReaderConstName(r)))
                image.elements += 1
                let count = Int(xmlTextReaderAttributeCount(r))
                image.events.length(count)
                while xmlTextReaderMoveToNextAttribute(r) == 1 {
                    image.events.length(name(xmlTextReaderConstName(r)))
                    value(xmlTextReaderConstValue(r))
                }
            case 15:
                image.events.tag(end)
            case 3:
                image.events.tag(text)
                value(xmlTextReaderConstValue(r))
            case 13, 14:
                image.events.tag(raw)
                value(xmlTextReaderConstValue(r))
            case 4:
                image.events.tag(cdata)
                value(xmlTextReaderConstValue(r))
            case 8:
                image.events.tag(comment)
                value(xmlTextReaderConstValue(r))
            default:
                break
            }
        }
        image.events.tag(done)
        return image
    }

    /// Writes the captured document with `xmlTextWriter` to `path`, then fsyncs it.
    static func write(_ image: Image, to path: String) throws {
        guard let w = xmlNewTextWriterFilename(path, 0) else { throw Failure(description: "\(path): cannot create") }
        var names: [[xmlChar]] = image.names.map { Array($0.utf8) + [0] }
        var failed = false
        var rc = xmlTextWriterStartDocument(w, "1.0", "UTF-8", nil) {
            didSet { if rc < 0 { failed = true } }
        }
        var scratch: [xmlChar] = []
        // Copies a blob into a NUL-terminated buffer (libxml2's writer takes C strings).
        func cString(_ p: UnsafeRawPointer, _ n: Int, _ body: (UnsafePointer<xmlChar>) -> Int32) -> Int32 {
            scratch.removeAll(keepingCapacity: true)
            scratch.append(contentsOf: UnsafeRawBufferPointer(start: p, count: n))
            scratch.append(0)
            return scratch.withUnsafeBufferPointer { buf in buf.baseAddress.map(body) ?? -1 }
        }
        image.events.bytes.withUnsafeBytes { buffer in
            var cursor = ByteCursor(buffer)
            loop: while !cursor.atEnd {
                let t = cursor.tag()
                switch t {
                case start, startEmpty:
                    let id = cursor.length()
                    rc = names[id].withUnsafeBufferPointer { xmlTextWriterStartElement(w, $0.baseAddress) }
                    for _ in 0..<cursor.length() {
                        let a = cursor.length()
                        let (p, n) = cursor.blob()
                        rc = names[a].withUnsafeBufferPointer { an in cString(p, n) { xmlTextWriterWriteAttribute(w, an.baseAddress, $0) } }
                    }
                    if t == startEmpty { rc = xmlTextWriterEndElement(w) }
                case end:
                    rc = xmlTextWriterFullEndElement(w)
                case text:
                    let (p, n) = cursor.blob()
                    rc = cString(p, n) { xmlTextWriterWriteString(w, $0) }
                case raw:
                    let (p, n) = cursor.blob()
                    rc = cString(p, n) { xmlTextWriterWriteRaw(w, $0) }
                case cdata:
                    let (p, n) = cursor.blob()
                    rc = cString(p, n) { xmlTextWriterWriteCDATA(w, $0) }
                case comment:
                    let (p, n) = cursor.blob()
                    rc = cString(p, n) { xmlTextWriterWriteComment(w, $0) }
                default:
                    break loop
                }
            }
        }
        rc = xmlTextWriterEndDocument(w)
        xmlFreeTextWriter(w)
        names.removeAll()
        if failed || rc < 0 { throw Failure(description: "\(path): xmlTextWriter failed") }
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw Failure(description: "\(path): cannot reopen to fsync") }
        fsync(fd)
        close(fd)
    }
}
