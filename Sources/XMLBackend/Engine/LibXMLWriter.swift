import CLibXML2
import Foundation
import StoreAPI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The file libxml2's writer pours into: our own descriptor and buffer, so every write error is seen (libxml2's
/// own file output ignores errors on close) and writes reach the kernel in large chunks.
final class XMLFileSink {
    let url: URL
    private var fd: Int32
    private var buffer: [UInt8] = []
    private let flushThreshold = 1 << 18
    private(set) var failure: String?

    init(creating url: URL) throws {
        self.url = url
        fd = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw StoreError.io(url, operation: "create", reason: String(cString: strerror(errno)))
        }
        buffer.reserveCapacity(flushThreshold + 8192)
    }

    deinit { if fd >= 0 { close(fd) } }

    func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if bytes.isEmpty { return true }  // libxml2 flushes empty buffers on close
        guard failure == nil, fd >= 0 else { return false }
        buffer.append(contentsOf: bytes)
        return buffer.count < flushThreshold || flush()
    }

    @discardableResult
    func flush() -> Bool {
        guard failure == nil, fd >= 0 else { return false }
        var offset = 0
        let ok = buffer.withUnsafeBytes { raw -> Bool in
            guard let base = raw.baseAddress else { return true }
            while offset < raw.count {
                let n = Glibc_write(fd, base + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = String(cString: strerror(errno))
                    return false
                }
                offset += n
            }
            return true
        }
        buffer.removeAll(keepingCapacity: true)
        return ok
    }

    /// Flushes and closes the file; throws the first write or close error.
    func finish() throws {
        flush()
        if fd >= 0 {
            if close(fd) != 0, failure == nil { failure = String(cString: strerror(errno)) }
            fd = -1
        }
        if let failure { throw StoreError.io(url, operation: "write", reason: failure) }
    }
}

private func Glibc_write(_ fd: Int32, _ p: UnsafeRawPointer, _ n: Int) -> Int {
    #if canImport(Glibc)
    return Glibc.write(fd, p, n)
    #else
    return Darwin.write(fd, p, n)
    #endif
}

private let sinkWrite: xmlOutputWriteCallback = { context, bytes, length in
    guard let context, let bytes, length >= 0 else { return -1 }
    let sink = Unmanaged<XMLFileSink>.fromOpaque(context).takeUnretainedValue()
    return sink.write(UnsafeRawBufferPointer(start: bytes, count: Int(length))) ? length : -1
}

private let sinkClose: xmlOutputCloseCallback = { _ in 0 }

/// A streaming writer over libxml2's `xmlTextWriter`, which escapes markup characters; output goes to an
/// ``XMLFileSink``. Indentation is written by hand because libxml2's automatic indentation would also insert
/// whitespace between the pieces of a split text value.
final class LibXMLWriter {
    private let sink: XMLFileSink
    private let writer: OpaquePointer
    private var depth = 0

    init(creating url: URL) throws {
        LibXML.initialize()
        sink = try XMLFileSink(creating: url)
        guard let out = xmlOutputBufferCreateIO(sinkWrite, sinkClose, Unmanaged.passUnretained(sink).toOpaque(), nil),
              let w = xmlNewTextWriter(out)
        else { throw StoreError.io(url, operation: "create", reason: "libxml2 could not create a writer") }
        writer = w
    }

    deinit { xmlFreeTextWriter(writer) }

    private func check(_ rc: Int32, _ what: @autoclosure () -> String) throws {
        if rc < 0 {
            throw StoreError.io(sink.url, operation: "writing XML (\(what()))", reason: sink.failure ?? "libxml2 writer error")
        }
    }

    /// Passes `s` to libxml2 as a C string (native Swift strings are stored NUL-terminated, so this does not copy).
    private func withXML<R>(_ s: String, _ body: (UnsafePointer<xmlChar>) -> R) -> R {
        s.withCString { p in p.withMemoryRebound(to: xmlChar.self, capacity: s.utf8.count + 1) { body($0) } }
    }

    func startDocument() throws {
        try check(xmlTextWriterStartDocument(writer, "1.0", nil, "yes"), "prologue")
    }

    func doctype(_ root: StaticString, systemID: String) throws {
        try check(withXML(systemID) { xmlTextWriterWriteDTD(writer, root.utf8Start, nil, $0, nil) }, "DOCTYPE")
        try check(xmlTextWriterWriteRaw(writer, "\n"), "whitespace")
    }

    private static let indents: [[UInt8]] = (0..<16).map { Array(("\n" + String(repeating: "    ", count: $0)).utf8) + [0] }

    private func indent(_ level: Int) throws {
        let rc = Self.indents[min(level, Self.indents.count - 1)].withUnsafeBufferPointer { b in
            xmlTextWriterWriteRaw(writer, b.baseAddress)
        }
        try check(rc, "whitespace")
    }

    /// Opens element `name` on its own indented line.
    func startElement(_ name: StaticString) throws {
        if depth > 0 { try indent(depth) }
        try check(xmlTextWriterStartElement(writer, name.utf8Start), "<\(name)>")
        depth += 1
    }

    /// Adds an attribute to the element just opened.
    func attribute(_ name: StaticString, _ value: String) throws {
        try check(withXML(value) { xmlTextWriterWriteAttribute(writer, name.utf8Start, $0) }, "attribute \(name)")
    }

    /// Adds an attribute whose value is the NUL-terminated UTF-8 `value` (precomputed names).
    func attribute(_ name: StaticString, cString value: [UInt8]) throws {
        let rc = value.withUnsafeBufferPointer { xmlTextWriterWriteAttribute(writer, name.utf8Start, $0.baseAddress) }
        try check(rc, "attribute \(name)")
    }

    /// Writes text content, split into pieces of at most ``XMLStoreFormat/textChunkBytes`` joined by empty
    /// comments so no single text node exceeds what a hardened parser accepts.
    func text(_ s: String) throws {
        let utf8 = s.utf8
        guard utf8.count > XMLStoreFormat.textChunkBytes else {
            try check(withXML(s) { xmlTextWriterWriteString(writer, $0) }, "text")
            return
        }
        var start = utf8.startIndex
        var first = true
        while start < utf8.endIndex {
            var end = utf8.index(start, offsetBy: XMLStoreFormat.textChunkBytes, limitedBy: utf8.endIndex) ?? utf8.endIndex
            // Never split a UTF-8 sequence: back up to the start of a scalar.
            while end < utf8.endIndex, utf8[end] & 0xC0 == 0x80 { end = utf8.index(before: end) }
            if !first { try check(xmlTextWriterWriteComment(writer, ""), "text separator") }
            first = false
            let piece = String(decoding: utf8[start..<end], as: UTF8.self)
            try check(withXML(piece) { xmlTextWriterWriteString(writer, $0) }, "text")
            start = end
        }
    }

    /// Closes the innermost element; containers get their end tag on an indented line.
    func endElement(container: Bool = false) throws {
        depth -= 1
        if container { try indent(depth) }
        try check(xmlTextWriterFullEndElement(writer), "end tag")
    }

    /// Closes the innermost element as an empty element (`<x/>`) if nothing was written inside it.
    func endEmptyElement() throws {
        depth -= 1
        try check(xmlTextWriterEndElement(writer), "end tag")
    }

    /// Ends the document and flushes everything to the file, reporting any write error.
    func finish() throws {
        try check(xmlTextWriterEndDocument(writer), "end of document")
        try check(xmlTextWriterFlush(writer), "flush")
        try sink.finish()
    }
}
