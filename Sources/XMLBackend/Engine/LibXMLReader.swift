import CLibXML2
import Foundation
@_spi(BackendKit) import StoreAPI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Initialises libxml2 once per process, before any thread uses it (`xmlInitParser` is not itself thread-safe).
enum LibXML {
    private static let initialized: Bool = {
        xmlInitParser()
        return true
    }()

    static func initialize() { _ = initialized }
}

/// The parser options every XML store read uses, and why each dangerous one is absent.
///
/// - `XML_PARSE_NONET`: never fetch anything over the network.
/// - no `XML_PARSE_NOENT`: entity references are not substituted, so an external entity is never read and an
///   entity bomb is never expanded (libxml2 also refuses entity loops and amplification on its own).
/// - no `XML_PARSE_DTDLOAD` / `DTDATTR` / `DTDVALID`: the DTD named in the DOCTYPE is never loaded.
/// - no `XML_PARSE_HUGE`: libxml2 keeps its limits on text node size, name length and nesting depth.
private let secureParseOptions = Int32(XML_PARSE_NONET.rawValue)

/// Captures libxml2's errors for one reader so nothing is printed and the first error can be reported.
final class LibXMLErrorSink {
    var message: String?
    var line: Int = 0

    func record(_ error: UnsafePointer<xmlError>) {
        let e = error.pointee
        guard e.level.rawValue >= XML_ERR_ERROR.rawValue, message == nil else { return }
        let text = e.message.map { String(cString: $0) } ?? "error \(e.code)"
        message = text.trimmingCharacters(in: .whitespacesAndNewlines)
        line = Int(e.line)
    }
}

/// The bytes of a store file on their way to libxml2, read from a descriptor and passed through an
/// ``XMLAttributeGuard``: an element with absurdly many attributes stops the read before libxml2's quadratic
/// duplicate-attribute check turns a small file into a very long parse.
final class GuardedFileInput {
    let fd: Int32
    var scanner = XMLAttributeGuard()
    /// Why the input stopped (a guard refusal or a read error), with the line it was on.
    var failure: (reason: String, line: Int)?

    init(fd: Int32) { self.fd = fd }

    func read(into buffer: UnsafeMutablePointer<CChar>, count: Int) -> Int32 {
        guard failure == nil else { return -1 }
        var n: Int
        repeat { n = Glibc_readFD(fd, buffer, count) } while n < 0 && errno == EINTR
        guard n >= 0 else {
            failure = ("cannot read the file: \(String(cString: strerror(errno)))", scanner.line)
            return -1
        }
        let allowed = buffer.withMemoryRebound(to: UInt8.self, capacity: n) {
            scanner.scan(UnsafeBufferPointer(start: $0, count: n))
        }
        guard allowed else {
            failure = ("an element has more than \(XMLAttributeGuard.limit) attributes, which no store has (refused: "
                + "the XML parser would take minutes over it)", scanner.line)
            return -1
        }
        return Int32(n)
    }
}

private let guardedRead: xmlInputReadCallback = { context, buffer, length in
    guard let context, let buffer else { return -1 }
    return Unmanaged<GuardedFileInput>.fromOpaque(context).takeUnretainedValue().read(into: buffer, count: Int(length))
}

private func Glibc_readFD(_ fd: Int32, _ buffer: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
    #if canImport(Glibc)
    return Glibc.read(fd, buffer, count)
    #else
    return Darwin.read(fd, buffer, count)
    #endif
}

private let structuredErrorHandler: xmlStructuredErrorFunc = { context, error in
    guard let context, let error else { return }
    Unmanaged<LibXMLErrorSink>.fromOpaque(context).takeUnretainedValue().record(error)
}

/// A pull reader over libxml2's `xmlTextReader`: one node at a time, never a tree of the document.
///
/// Every failure is ``StoreError/corruptStore(_:reason:)`` naming the file and line. The reader enforces
/// ``XMLStoreFormat/maxDepth`` itself and refuses entity references, so a hostile document fails fast.
final class LibXMLReader {
    /// libxml2 node types (`xmlReaderTypes`).
    enum NodeType: Int32 {
        case none = 0, element = 1, attribute = 2, text = 3, cdata = 4, entityReference = 5, entity = 6
        case processingInstruction = 7, comment = 8, document = 9, documentType = 10, documentFragment = 11
        case notation = 12, whitespace = 13, significantWhitespace = 14, endElement = 15, endEntity = 16
        case xmlDeclaration = 17
    }

    let url: URL
    private let reader: OpaquePointer
    private let sink = LibXMLErrorSink()
    private var memory: UnsafeMutableBufferPointer<CChar>?
    private var fd: Int32 = -1
    private var input: GuardedFileInput?
    /// The bytes of the value being read. Behind a pointer held in a constant, so using it needs no runtime
    /// exclusivity check (an array in a variable here, with its append and remove-all, was a tenth of the
    /// reader's own instructions).
    /// Made last in each initializer, so an initializer that throws leaves nothing to free.
    private let text: UnsafeMutablePointer<ByteScratch>

    private static func makeScratch() -> UnsafeMutablePointer<ByteScratch> {
        let p = UnsafeMutablePointer<ByteScratch>.allocate(capacity: 1)
        p.initialize(to: ByteScratch())
        return p
    }

    /// Opens `url` for reading.
    init(fileAt url: URL) throws {
        LibXML.initialize()
        self.url = url
        // Opened here rather than by libxml2, so an unreadable file is a clear error and libxml2 prints nothing.
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw StoreError.io(url, operation: "open for reading", reason: String(cString: strerror(errno)))
        }
        let input = GuardedFileInput(fd: fd)
        guard let r = xmlReaderForIO(guardedRead, nil, Unmanaged.passUnretained(input).toOpaque(), url.path, nil,
                                     secureParseOptions)
        else {
            close(fd)
            let why = input.failure.map { "line \($0.line): \($0.reason)" } ?? "cannot start an XML reader"
            throw StoreError.corruptStore(url, reason: why)
        }
        self.fd = fd
        self.input = input
        reader = r
        text = Self.makeScratch()
        xmlTextReaderSetStructuredErrorHandler(r, structuredErrorHandler, Unmanaged.passUnretained(sink).toOpaque())
    }

    /// Reads XML from `bytes` (kept by the reader); `url` names the source in errors.
    init(bytes: some Collection<UInt8>, url: URL) throws {
        LibXML.initialize()
        self.url = url
        let buffer = UnsafeMutableBufferPointer<CChar>.allocate(capacity: max(bytes.count, 1))
        var i = 0
        for b in bytes { buffer[i] = CChar(bitPattern: b); i += 1 }
        guard let base = buffer.baseAddress,
              let r = xmlReaderForMemory(base, Int32(clamping: bytes.count), url.path, nil, secureParseOptions)
        else {
            buffer.deallocate()
            throw StoreError.corruptStore(url, reason: "cannot start an XML reader")
        }
        memory = buffer
        reader = r
        text = Self.makeScratch()
        xmlTextReaderSetStructuredErrorHandler(r, structuredErrorHandler, Unmanaged.passUnretained(sink).toOpaque())
    }

    deinit {
        text.pointee.deallocate()
        text.deinitialize(count: 1)
        text.deallocate()
        xmlFreeTextReader(reader)
        memory?.deallocate()
        if fd >= 0 { close(fd) }
    }

    // MARK: Position

    /// Advances to the next node. Returns `false` at the end of the document.
    func read() throws -> Bool {
        let rc = xmlTextReaderRead(reader)
        if rc == 1 { return true }
        if let failure = input?.failure { throw corrupt(failure.reason, line: failure.line) }
        if rc == 0 {
            if let message = sink.message { throw corrupt(message, line: sink.line) }
            return false
        }
        throw corrupt(sink.message ?? "malformed XML", line: sink.message == nil ? line : sink.line)
    }

    var nodeType: NodeType { NodeType(rawValue: xmlTextReaderNodeType(reader)) ?? .none }
    var depth: Int { Int(xmlTextReaderDepth(reader)) }
    var isEmptyElement: Bool { xmlTextReaderIsEmptyElement(reader) == 1 }
    /// The line of the current node; the parser's position when the node's own line is unknown or past the
    /// 65535 libxml2 stores per node.
    var line: Int {
        if let node = xmlTextReaderCurrentNode(reader) {
            let l = Int(xmlGetLineNo(node))
            if l > 0 && l < 65535 { return l }
        }
        return Int(xmlTextReaderGetParserLineNumber(reader))
    }

    /// Whether the document's internal DTD subset declares entities (general or parameter). Stores never do;
    /// libxml2 substitutes small internal entities in attribute values even without `XML_PARSE_NOENT`, so a file
    /// that declares them is refused outright. Valid once the reader is past the DOCTYPE (on the root element).
    var declaresEntities: Bool {
        guard let node = xmlTextReaderCurrentNode(reader), let doc = node.pointee.doc,
              let dtd = doc.pointee.intSubset
        else { return false }
        return dtd.pointee.entities != nil || dtd.pointee.pentities != nil
    }

    /// Removes a document type that declares nothing — the `<!DOCTYPE database SYSTEM "…CoreData.dtd">` line of
    /// every XML store, whose DTD is never loaded — from the document being read. While the document has a
    /// type, libxml2 looks up every attribute of every element in it (are you an ID? a reference?), work paid on
    /// every node of a load; without one it skips that. Nothing is lost: there are no declarations to find.
    /// Call on the root element, after ``declaresEntities``.
    func dropEmptyDocumentType() {
        guard let node = xmlTextReaderCurrentNode(reader), let doc = node.pointee.doc,
              let dtd = doc.pointee.intSubset
        else { return }
        let d = dtd.pointee
        guard d.children == nil, d.entities == nil, d.pentities == nil, d.attributes == nil, d.elements == nil,
              d.notations == nil, doc.pointee.extSubset == nil
        else { return }
        // Unlinking a document's DTD node also clears `doc->intSubset`.
        xmlUnlinkNode(UnsafeMutableRawPointer(dtd).assumingMemoryBound(to: xmlNode.self))
        xmlFreeDtd(dtd)
    }

    /// The current node's name (owned by the reader; valid until it moves).
    var namePointer: UnsafePointer<xmlChar>? { xmlTextReaderConstName(reader) }

    /// The current node's name as a string.
    var name: String { namePointer.map { String(cString: $0) } ?? "" }

    /// Whether the current node's name is `s`, without making a string.
    func nameIs(_ s: StaticString) -> Bool {
        guard let p = namePointer else { return false }
        return Self.equals(p, s)
    }

    /// Whether the current node's name is `name`.
    @inline(__always)
    func nameIs(_ name: InternedName) -> Bool {
        guard let p = namePointer else { return false }
        return Self.equals(p, name)
    }

    /// A name as this reader's libxml2 dictionary holds it. The parser interns every element and attribute name
    /// in that dictionary, so a node's name is nearly always the very pointer interned here: compared by address
    /// first, and by its bytes only when the address differs.
    struct InternedName {
        let pointer: UnsafePointer<xmlChar>?
        let text: StaticString
    }

    /// `text` interned in this reader's dictionary.
    func intern(_ text: StaticString) -> InternedName {
        InternedName(pointer: xmlTextReaderConstString(reader, text.utf8Start), text: text)
    }

    /// Whether the C string at `p` is `name`.
    @inline(__always)
    static func equals(_ p: UnsafePointer<xmlChar>, _ name: InternedName) -> Bool {
        p == name.pointer || equals(p, name.text)
    }

    /// Whether the C string at `p` is `s` (`strncmp` stops at `p`'s terminator, so a shorter `p` is never overread).
    @inline(__always)
    static func equals(_ p: UnsafePointer<xmlChar>, _ s: StaticString) -> Bool {
        let n = s.utf8CodeUnitCount
        // Most comparisons that fail, fail on the first byte: no call for those.
        return n > 0 && p[0] == s.utf8Start[0]
            && strncmp(UnsafeRawPointer(p).assumingMemoryBound(to: CChar.self),
                       UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self), n) == 0 && p[n] == 0
    }

    /// Whether the C string at `p` equals the NUL-terminated bytes `bytes`.
    @inline(__always)
    static func equals(_ p: UnsafePointer<xmlChar>, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { b in
            guard let base = b.baseAddress else { return false }
            return strcmp(UnsafeRawPointer(p).assumingMemoryBound(to: CChar.self),
                          UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self)) == 0
        }
    }

    /// Calls `body` with the name and value of each attribute of the current element. The pointers are valid only
    /// during the call.
    func forEachAttribute(_ body: (UnsafePointer<xmlChar>, UnsafePointer<xmlChar>) throws -> Void) throws {
        guard xmlTextReaderHasAttributes(reader) == 1 else { return }
        defer { xmlTextReaderMoveToElement(reader) }
        var rc = xmlTextReaderMoveToFirstAttribute(reader)
        while rc == 1 {
            if let n = xmlTextReaderConstName(reader), let v = xmlTextReaderConstValue(reader) { try body(n, v) }
            rc = xmlTextReaderMoveToNextAttribute(reader)
        }
    }

    /// The value of the current element's attribute `name`.
    func attribute(_ name: String) -> String? {
        let found = name.withCString { p in
            p.withMemoryRebound(to: xmlChar.self, capacity: name.utf8.count + 1) { xmlTextReaderMoveToAttribute(reader, $0) }
        }
        guard found == 1 else { return nil }
        defer { xmlTextReaderMoveToElement(reader) }
        guard let v = xmlTextReaderConstValue(reader) else { return "" }
        return String(cString: v)
    }

    /// A ``StoreError/corruptStore(_:reason:)`` for the current position.
    func corrupt(_ reason: String, line: Int? = nil) -> StoreError {
        let l = line ?? self.line
        return StoreError.corruptStore(url, reason: l > 0 ? "line \(l): \(reason)" : reason)
    }

    // MARK: Structure

    /// Moves to the first element of the document (the root), refusing anything else but the prologue.
    /// Returns `false` for a document without elements.
    func moveToRoot() throws -> Bool {
        while try read() {
            switch nodeType {
            case .element:
                return true
            case .documentType, .comment, .processingInstruction, .whitespace, .significantWhitespace, .xmlDeclaration:
                continue
            default:
                throw corrupt("unexpected content before the root element")
            }
        }
        return false
    }

    /// Moves to the next child element of the element at `parentDepth`, skipping whitespace and comments.
    /// Returns `false` on reaching the parent's end tag. Call only when the parent is not an empty element.
    func nextChildElement(parentDepth: Int) throws -> Bool {
        while true {
            guard try read() else { throw corrupt("the file ends before its last element is closed (truncated?)") }
            // Raw node types tested in the order they come, rather than a switch on ``NodeType``: this runs for
            // every node of a load, and a switch's indirect jump mispredicts on the mix of node types a store has.
            let t = xmlTextReaderNodeType(reader)
            if t == NodeType.element.rawValue {
                if depth > XMLStoreFormat.maxDepth {
                    throw corrupt("elements nested deeper than \(XMLStoreFormat.maxDepth) levels")
                }
                return true
            }
            if t == NodeType.significantWhitespace.rawValue || t == NodeType.whitespace.rawValue { continue }
            if t == NodeType.endElement.rawValue {
                if depth <= parentDepth { return false }
                continue
            }
            switch NodeType(rawValue: t) ?? .none {
            case .comment, .processingInstruction:
                continue
            case .text, .cdata:
                throw corrupt("unexpected text between elements")
            case .entityReference, .entity, .endEntity:
                throw corrupt("entity references are not allowed in stores ('&\(name);')")
            default:
                throw corrupt("unexpected \(nodeType) node")
            }
        }
    }

    /// Skips the current element and everything inside it.
    func skipElement() throws {
        guard !isEmptyElement else { return }
        let d = depth
        while try read() {
            if nodeType == .element && depth > XMLStoreFormat.maxDepth {
                throw corrupt("elements nested deeper than \(XMLStoreFormat.maxDepth) levels")
            }
            if nodeType == .entityReference { throw corrupt("entity references are not allowed in stores ('&\(name);')") }
            if nodeType == .endElement && depth == d { return }
        }
        throw corrupt("the file ends inside <\(name)> (truncated?)")
    }

    /// The text content of the current element (which must contain only text), pieces split by comments joined.
    func readText() throws -> String {
        try readTextBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// Calls `body` with the UTF-8 bytes of the current element's text content (valid only during the call;
    /// `body` must not use the reader).
    func readTextBytes<T>(_ body: (UnsafeBufferPointer<UInt8>) throws -> T) throws -> T {
        guard !isEmptyElement else { return try body(UnsafeBufferPointer(start: nil, count: 0)) }
        let d = depth
        // A text node's bytes are copied: libxml2 frees the node as the reader moves on to the end tag that tells
        // whether more text follows.
        text.pointee.count = 0
        while try read() {
            let t = xmlTextReaderNodeType(reader)
            if t == NodeType.text.rawValue || t == NodeType.cdata.rawValue || t == NodeType.whitespace.rawValue
                || t == NodeType.significantWhitespace.rawValue {
                if let v = xmlTextReaderConstValue(reader) {
                    text.pointee.append(v, count: strlen(UnsafeRawPointer(v).assumingMemoryBound(to: CChar.self)))
                }
                continue
            }
            if t == NodeType.endElement.rawValue && depth == d { return try body(text.pointee.bytes) }
            switch NodeType(rawValue: t) ?? .none {
            case .comment, .processingInstruction:
                continue
            case .element:
                throw corrupt("unexpected element <\(name)> inside a value")
            case .entityReference, .entity, .endEntity:
                throw corrupt("entity references are not allowed in stores ('&\(name);')")
            default:
                throw corrupt("unexpected \(nodeType) node inside a value")
            }
        }
        throw corrupt("the file ends inside a value (truncated?)")
    }

    /// After the root element closed: refuses anything but comments and whitespace up to the end.
    func expectEnd() throws {
        while try read() {
            switch nodeType {
            case .whitespace, .significantWhitespace, .comment, .processingInstruction: continue
            default: throw corrupt("unexpected content after the root element")
            }
        }
    }
}

/// A growable byte buffer that its owner frees.
struct ByteScratch {
    private var base: UnsafeMutablePointer<UInt8>?
    private var capacity = 0
    /// The bytes in use.
    var count = 0

    /// The bytes in use (valid until the next append or ``deallocate()``).
    var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    mutating func append(_ p: UnsafePointer<UInt8>, count n: Int) {
        if count + n > capacity {
            let newCapacity = max(256, (count + n) * 2)
            let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
            if let base {
                grown.update(from: base, count: count)
                base.deallocate()
            }
            base = grown
            capacity = newCapacity
        }
        guard let base else { return }
        (base + count).update(from: p, count: n)
        count += n
    }

    /// Frees the bytes; call once, when the owner goes away.
    mutating func deallocate() {
        base?.deallocate()
        base = nil
        capacity = 0
        count = 0
    }
}
