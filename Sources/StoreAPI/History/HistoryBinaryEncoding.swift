import Foundation

/// The storage encoding of a ``HistoryTransaction``: what ``HistoryTransaction/encoded()`` writes and
/// ``HistoryTransaction/decode(_:url:)`` reads beside the JSON stores written before it.
///
/// Hand-written because Foundation's `JSONEncoder`/`JSONDecoder` (and `PropertyListEncoder`, built the same way)
/// were the measured cost of every history-tracked save and of every history read (storebench's "history" rows).
///
/// ```
/// format        1 byte    0xB1 (a UTF-8 continuation byte, so never the start of JSON text)
/// token         varint    zigzag
/// timestamp     8 bytes   little-endian bit pattern of timeIntervalSinceReferenceDate
/// present       1 byte    bit 0 author, 1 contextName, 2 processName, 3 bundleIdentifier; others 0
/// …             string    each present one, in that order
/// changes       varint    count, then per change:
///   head        1 byte    bits 0–1 kind (insert, update, delete), bit 2 changedKeys follow, bit 3 tombstone follows
///   entity      name
///   primaryKey  varint    zigzag
///   globalID    16 bytes
///   changedKeys varint    count, then one name each            (when bit 2)
///   tombstone   varint    count, then name and string each, keys in ascending order (when bit 3)
/// ```
/// A varint is unsigned LEB128; a string is its UTF-8 length as a varint, then its bytes. A name (entity names and
/// keys, which repeat across a transaction's changes) is interned: varint 0 then a string gives it the next index
/// (from 0), varint n + 1 repeats the name of index n. Nothing may follow the last change.
enum HistoryBinaryEncoding {
    /// The first byte of the encoding; 0xB0–0xBF are kept for this encoding's versions.
    static let format: UInt8 = 0xB1

    /// Whether `byte` starts one of this encoding's versions rather than JSON.
    static func isBinary(_ byte: UInt8) -> Bool { byte & 0xF0 == 0xB0 }

    // MARK: Writing

    static func encode(_ t: HistoryTransaction) -> Data {
        var w = Writer()
        w.bytes.reserveCapacity(32 + t.changes.count * 24)
        w.bytes.append(format)
        w.signed(t.token)
        w.fixed64(t.timestamp.timeIntervalSinceReferenceDate.bitPattern)
        var present: UInt8 = 0
        if t.author != nil { present |= 1 }
        if t.contextName != nil { present |= 2 }
        if t.processName != nil { present |= 4 }
        if t.bundleIdentifier != nil { present |= 8 }
        w.bytes.append(present)
        if let s = t.author { w.string(s) }
        if let s = t.contextName { w.string(s) }
        if let s = t.processName { w.string(s) }
        if let s = t.bundleIdentifier { w.string(s) }
        w.unsigned(UInt64(t.changes.count))
        for c in t.changes {
            var head = kindCode(c.kind)
            if !c.changedKeys.isEmpty { head |= 4 }
            if !c.tombstone.isEmpty { head |= 8 }
            w.bytes.append(head)
            w.name(c.entity)
            w.signed(c.primaryKey)
            withUnsafeBytes(of: c.globalID.uuid) { w.bytes.append(contentsOf: $0) }
            if !c.changedKeys.isEmpty {
                w.unsigned(UInt64(c.changedKeys.count))
                for k in c.changedKeys { w.name(k) }
            }
            if !c.tombstone.isEmpty {
                w.unsigned(UInt64(c.tombstone.count))
                // Sorted so that equal transactions always encode to equal bytes.
                for (k, v) in c.tombstone.sorted(by: { $0.key < $1.key }) {
                    w.name(k)
                    w.string(v)
                }
            }
        }
        return Data(w.bytes)
    }

    private static func kindCode(_ kind: HistoryChange.Kind) -> UInt8 {
        switch kind {
        case .insert: 0
        case .update: 1
        case .delete: 2
        }
    }

    private struct Writer {
        var bytes: [UInt8] = []
        /// Names written so far, by index; looked up linearly while few, through `index` beyond.
        private var names: [String] = []
        private var index: [String: Int] = [:]
        private static let linearNames = 8

        mutating func unsigned(_ value: UInt64) {
            var v = value
            while v >= 0x80 {
                bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
                v >>= 7
            }
            bytes.append(UInt8(v))
        }

        mutating func signed(_ value: Int64) {
            unsigned(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
        }

        mutating func fixed64(_ value: UInt64) {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }

        mutating func string(_ s: String) {
            var s = s
            s.withUTF8 { utf8 in
                unsigned(UInt64(utf8.count))
                bytes.append(contentsOf: utf8)
            }
        }

        mutating func name(_ s: String) {
            if let i = lookUp(s) {
                unsigned(UInt64(i) + 1)
                return
            }
            unsigned(0)
            string(s)
            names.append(s)
            if names.count > Self.linearNames {
                if index.isEmpty { for (i, n) in names.enumerated() { index[n] = i } } else { index[s] = names.count - 1 }
            }
        }

        private func lookUp(_ s: String) -> Int? {
            if names.count > Self.linearNames { return index[s] }
            // Newest first: a transaction's changes mostly repeat the entity just written.
            return names.lastIndex(of: s)
        }
    }

    // MARK: Reading

    /// Why bytes are not a transaction, and where; the caller names the store.
    struct Malformed: Error {
        var reason: String
        var offset: Int
    }

    static func decode(_ data: Data) throws(Malformed) -> HistoryTransaction {
        let result = data.withUnsafeBytes { raw -> Result<HistoryTransaction, Malformed> in
            var r = Reader(bytes: raw)
            do throws(Malformed) { return .success(try r.transaction()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var at = 0
        var names: [String] = []

        var remaining: Int { bytes.count - at }

        func fail(_ reason: String) -> Malformed { Malformed(reason: reason, offset: at) }

        mutating func byte(_ what: @autoclosure () -> String) throws(Malformed) -> UInt8 {
            guard at < bytes.count else { throw fail("ends inside \(what())") }
            defer { at += 1 }
            return bytes[at]
        }

        mutating func unsigned(_ what: @autoclosure () -> String) throws(Malformed) -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let b = try byte(what())
                // The tenth byte holds bit 63 only.
                guard shift < 63 || b <= 1 else { throw fail("\(what()) does not fit in 64 bits") }
                value |= UInt64(b & 0x7F) << shift
                if b < 0x80 { return value }
                shift += 7
            }
        }

        mutating func signed(_ what: @autoclosure () -> String) throws(Malformed) -> Int64 {
            let u = try unsigned(what())
            return Int64(bitPattern: (u >> 1) ^ (0 &- (u & 1)))
        }

        /// A count of items that each take at least `minimum` bytes, so a damaged count fails here, before
        /// anything is allocated for it.
        mutating func count(_ what: @autoclosure () -> String, minimum: Int) throws(Malformed) -> Int {
            let n = try unsigned(what())
            guard n <= UInt64(remaining / minimum) else { throw fail("\(what()) \(n) is more than the bytes left hold") }
            return Int(n)
        }

        mutating func take(_ n: Int, _ what: @autoclosure () -> String) throws(Malformed) -> UnsafeRawBufferPointer {
            guard n <= remaining else { throw fail("ends inside \(what())") }
            defer { at += n }
            return UnsafeRawBufferPointer(rebasing: bytes[at..<at + n])
        }

        mutating func string(_ what: @autoclosure () -> String) throws(Malformed) -> String {
            let n = try count("length of \(what())", minimum: 1)
            let start = at
            let utf8 = try take(n, what())
            guard let s = utf8.withMemoryRebound(to: UInt8.self, { String(validating: $0, as: UTF8.self) }) else {
                throw Malformed(reason: "\(what()) is not UTF-8", offset: start)
            }
            return s
        }

        mutating func name(_ what: @autoclosure () -> String) throws(Malformed) -> String {
            let start = at
            let ref = try unsigned(what())
            if ref == 0 {
                let s = try string(what())
                names.append(s)
                return s
            }
            guard ref <= UInt64(names.count) else {
                throw Malformed(reason: "\(what()) refers to name \(ref - 1) of \(names.count)", offset: start)
            }
            return names[Int(ref - 1)]
        }

        mutating func transaction() throws(Malformed) -> HistoryTransaction {
            let format = try byte("the format byte")
            guard format == HistoryBinaryEncoding.format else {
                throw Malformed(reason: "unknown history format 0x\(String(format, radix: 16, uppercase: true))", offset: 0)
            }
            let token = try signed("the token")
            let bits = try take(8, "the timestamp").loadUnaligned(as: UInt64.self)
            let timestamp = Date(timeIntervalSinceReferenceDate: Double(bitPattern: UInt64(littleEndian: bits)))
            let present = try byte("the present-fields byte")
            guard present & 0xF0 == 0 else { throw fail("unknown fields 0x\(String(present, radix: 16)) are marked present") }
            let author = present & 1 == 0 ? nil : try string("the author")
            let contextName = present & 2 == 0 ? nil : try string("the context name")
            let processName = present & 4 == 0 ? nil : try string("the process name")
            let bundleIdentifier = present & 8 == 0 ? nil : try string("the bundle identifier")
            // A change takes at least its head, entity, key and global ID.
            let n = try count("the change count", minimum: 19)
            var changes: [HistoryChange] = []
            changes.reserveCapacity(n)
            for _ in 0..<n { changes.append(try change()) }
            guard remaining == 0 else { throw fail("\(remaining) bytes follow the last change") }
            return HistoryTransaction(
                token: token, timestamp: timestamp, author: author, contextName: contextName,
                processName: processName, bundleIdentifier: bundleIdentifier, changes: changes)
        }

        mutating func change() throws(Malformed) -> HistoryChange {
            let head = try byte("a change")
            guard head & 0xF0 == 0 else { throw Malformed(reason: "a change's head byte 0x\(String(head, radix: 16)) is unknown", offset: at - 1) }
            let kind: HistoryChange.Kind
            switch head & 3 {
            case 0: kind = .insert
            case 1: kind = .update
            case 2: kind = .delete
            default: throw Malformed(reason: "a change's kind 3 is unknown", offset: at - 1)
            }
            let entity = try name("the entity name")
            let primaryKey = try signed("the primary key")
            let uuid = try take(16, "the global ID").loadUnaligned(as: uuid_t.self)
            var changedKeys: [String] = []
            if head & 4 != 0 {
                let n = try count("the changed-key count", minimum: 1)
                changedKeys.reserveCapacity(n)
                for _ in 0..<n { changedKeys.append(try name("a changed key")) }
            }
            var tombstone: [String: String] = [:]
            if head & 8 != 0 {
                let n = try count("the tombstone count", minimum: 2)
                tombstone.reserveCapacity(n)
                for _ in 0..<n {
                    let key = try name("a tombstone key")
                    let value = try string("a tombstone value")
                    guard tombstone.updateValue(value, forKey: key) == nil else { throw fail("tombstone key \"\(key)\" repeats") }
                }
            }
            return HistoryChange(kind: kind, entity: entity, primaryKey: primaryKey, globalID: UUID(uuid: uuid),
                                 changedKeys: changedKeys, tombstone: tombstone)
        }
    }
}
