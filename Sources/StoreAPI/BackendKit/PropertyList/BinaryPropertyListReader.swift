import Foundation

/// A reader of binary property lists (`bplist00`) that is safe on hostile input.
///
/// Every object type Apple's formats use is read: dictionaries, arrays, sets, ASCII and UTF-16 strings, data,
/// 1/2/4/8/16-byte integers, 4/8-byte reals, booleans, dates, `NSKeyedArchiver` UIDs and null. Bad input of any kind —
/// a truncated trailer, offsets or object references out of range, a container that contains itself, counts larger
/// than the file, nesting deeper than ``maxDepth``, sharing that would expand past ``maxExpandedValues`` — is a
/// ``PropertyListError``, never a crash, a hang or unbounded memory.
///
/// Why not Foundation's `PropertyListSerialization`: on Linux it returns a UID as an `_NSKeyedArchiverUID`, a
/// private class whose value no public API reads, so a keyed archive cannot be navigated through it (and its
/// dictionaries lose their order).
@_spi(BackendKit) public struct BinaryPropertyListReader {
    /// The deepest nesting of arrays, sets and dictionaries a document may have.
    public static let maxDepth = 512
    /// The most values a document may expand to when objects that several containers share are counted once per
    /// reference. Shared objects are decoded once and shared in memory too; the cap keeps a consumer that walks the
    /// value as a tree (comparison, writing) from doing exponential work on a hostile file.
    public static let maxExpandedValues = 1 << 22

    private let bytes: [UInt8]
    private let refSize: Int
    private let offsetSize: Int
    private let objectCount: Int
    private let offsetTable: Int
    private var memo: [PropertyListValue?]
    private var expanded: [Int]
    private var inProgress: [Bool]

    /// Whether `bytes` starts like a binary property list (`bplist0`).
    public static func looksLikeBinaryPropertyList(_ bytes: some Collection<UInt8>) -> Bool {
        Array(bytes.prefix(7)) == Array("bplist0".utf8)
    }

    /// Reads one binary property list.
    public static func read(_ data: Data) throws(PropertyListError) -> PropertyListValue {
        try read([UInt8](data))
    }

    /// Reads one binary property list.
    public static func read(_ bytes: [UInt8]) throws(PropertyListError) -> PropertyListValue {
        guard bytes.count >= 8, bytes[0..<6].elementsEqual("bplist".utf8) else {
            throw PropertyListError("not a binary property list (no bplist header)", offset: 0)
        }
        guard bytes[6] == UInt8(ascii: "0") else {
            throw PropertyListError("unsupported binary property list version \"\(Self.show(bytes[6..<8]))\"", offset: 6)
        }
        guard bytes.count >= 8 + 1 + 32 else {
            throw PropertyListError("truncated: \(bytes.count) bytes cannot hold a header, an object and the trailer")
        }
        let t = bytes.count - 32
        let offsetSize = Int(bytes[t + 6])
        let refSize = Int(bytes[t + 7])
        let objects = Self.bigEndian(bytes, at: t + 8, size: 8)
        let top = Self.bigEndian(bytes, at: t + 16, size: 8)
        let table = Self.bigEndian(bytes, at: t + 24, size: 8)
        guard (1...8).contains(offsetSize), (1...8).contains(refSize) else {
            throw PropertyListError("trailer has offset size \(offsetSize) and reference size \(refSize) (1…8 allowed)",
                                    offset: t)
        }
        // Each object takes at least one byte and one offset-table entry, so a count beyond the file is a lie.
        guard objects >= 1, objects <= UInt64(t) else {
            throw PropertyListError("trailer claims \(objects) objects in a \(bytes.count)-byte file", offset: t)
        }
        guard top < objects else {
            throw PropertyListError("top object \(top) is out of range (\(objects) objects)", offset: t + 16)
        }
        let count = Int(objects)
        guard table >= 9, table <= UInt64(t), count * offsetSize <= t - Int(table) else {
            throw PropertyListError("offset table at \(table) does not fit before the trailer", offset: t + 24)
        }
        var reader = BinaryPropertyListReader(
            bytes: bytes, refSize: refSize, offsetSize: offsetSize, objectCount: count, offsetTable: Int(table))
        return try reader.object(Int(top), depth: 0)
    }

    private init(bytes: [UInt8], refSize: Int, offsetSize: Int, objectCount: Int, offsetTable: Int) {
        self.bytes = bytes
        self.refSize = refSize
        self.offsetSize = offsetSize
        self.objectCount = objectCount
        self.offsetTable = offsetTable
        self.memo = Array(repeating: nil, count: objectCount)
        self.expanded = Array(repeating: 0, count: objectCount)
        self.inProgress = Array(repeating: false, count: objectCount)
    }

    private static func bigEndian(_ bytes: [UInt8], at start: Int, size: Int) -> UInt64 {
        var v: UInt64 = 0
        for i in start..<(start + size) { v = v << 8 | UInt64(bytes[i]) }
        return v
    }

    private static func show(_ bytes: ArraySlice<UInt8>) -> String {
        String(bytes.map { (0x20..<0x7F).contains($0) ? Character(UnicodeScalar($0)) : "?" })
    }

    /// The offset of object `index`, checked to lie between the header and the offset table.
    private func offset(of index: Int) throws(PropertyListError) -> Int {
        let entry = offsetTable + index * offsetSize
        let o = Self.bigEndian(bytes, at: entry, size: offsetSize)
        guard o >= 8, o < UInt64(offsetTable) else {
            throw PropertyListError("object \(index) has offset \(o), outside the object area", offset: entry)
        }
        return Int(o)
    }

    private mutating func object(_ index: Int, depth: Int) throws(PropertyListError) -> PropertyListValue {
        if let done = memo[index] { return done }
        guard !inProgress[index] else {
            throw PropertyListError("object \(index) contains itself (a reference cycle)", offset: try? offset(of: index))
        }
        guard depth <= Self.maxDepth else {
            throw PropertyListError("nested deeper than \(Self.maxDepth) levels", offset: try? offset(of: index))
        }
        inProgress[index] = true
        defer { inProgress[index] = false }
        let at = try offset(of: index)
        let (value, size) = try decode(at: at, depth: depth)
        memo[index] = value
        expanded[index] = size
        return value
    }

    /// The bytes `at..<at+n`, checked to end before the offset table.
    private func need(_ n: Int, at: Int, _ what: String) throws(PropertyListError) {
        guard n >= 0, at <= offsetTable, n <= offsetTable - at else {
            throw PropertyListError("\(what) runs past the object area", offset: at)
        }
    }

    /// A marker's count: the low nibble, or the integer object after it when the nibble is 0xF.
    private func count(_ marker: UInt8, at: Int) throws(PropertyListError) -> (count: Int, body: Int) {
        let nibble = Int(marker & 0x0F)
        guard nibble == 0x0F else { return (nibble, at + 1) }
        try need(2, at: at, "a count")
        let intMarker = bytes[at + 1]
        guard intMarker & 0xF0 == 0x10, intMarker & 0x0F <= 3 else {
            throw PropertyListError("a count is not an integer of 1–8 bytes (marker 0x\(String(intMarker, radix: 16)))",
                                    offset: at + 1)
        }
        let size = 1 << Int(intMarker & 0x0F)
        try need(2 + size, at: at, "a count")
        let v = Self.bigEndian(bytes, at: at + 2, size: size)
        // Bounded by the file: every element needs at least one byte, so a larger count cannot be honest.
        guard v <= UInt64(offsetTable) else {
            throw PropertyListError("count \(v) is larger than the file", offset: at + 1)
        }
        return (Int(v), at + 2 + size)
    }

    private func ref(at position: Int) throws(PropertyListError) -> Int {
        let r = Self.bigEndian(bytes, at: position, size: refSize)
        guard r < UInt64(objectCount) else {
            throw PropertyListError("object reference \(r) is out of range (\(objectCount) objects)", offset: position)
        }
        return Int(r)
    }

    private mutating func decode(at: Int, depth: Int) throws(PropertyListError) -> (PropertyListValue, Int) {
        try need(1, at: at, "an object")
        let marker = bytes[at]
        switch marker >> 4 {
        case 0x0:
            switch marker {
            case 0x00: return (.null, 1)
            case 0x08: return (.bool(false), 1)
            case 0x09: return (.bool(true), 1)
            default: throw PropertyListError("unknown object marker 0x\(String(marker, radix: 16))", offset: at)
            }
        case 0x1:
            let n = Int(marker & 0x0F)
            guard n <= 4 else { throw PropertyListError("integer of 2^\(n) bytes", offset: at) }
            let size = 1 << n
            try need(1 + size, at: at, "an integer")
            if size == 16 {
                let high = Self.bigEndian(bytes, at: at + 1, size: 8)
                let low = Self.bigEndian(bytes, at: at + 9, size: 8)
                if high == 0 {
                    return (low <= UInt64(Int64.max) ? .integer(Int64(low)) : .unsignedInteger(low), 1)
                }
                if high == UInt64.max, low > UInt64(Int64.max) { return (.integer(Int64(bitPattern: low)), 1) }
                throw PropertyListError("a 16-byte integer does not fit in 64 bits", offset: at)
            }
            let raw = Self.bigEndian(bytes, at: at + 1, size: size)
            // 1, 2 and 4-byte integers are unsigned; 8-byte ones are signed (two's complement).
            return (.integer(size == 8 ? Int64(bitPattern: raw) : Int64(raw)), 1)
        case 0x2:
            let n = Int(marker & 0x0F)
            guard n == 2 || n == 3 else { throw PropertyListError("real of 2^\(n) bytes", offset: at) }
            try need(1 + (1 << n), at: at, "a real")
            let raw = Self.bigEndian(bytes, at: at + 1, size: 1 << n)
            return (.real(n == 2 ? Double(Float(bitPattern: UInt32(raw))) : Double(bitPattern: raw)), 1)
        case 0x3:
            guard marker == 0x33 else { throw PropertyListError("date with marker 0x\(String(marker, radix: 16))", offset: at) }
            try need(9, at: at, "a date")
            let raw = Self.bigEndian(bytes, at: at + 1, size: 8)
            return (.date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: raw))), 1)
        case 0x4:
            let (n, body) = try count(marker, at: at)
            try need(n, at: body, "data")
            return (.data(Data(bytes[body..<(body + n)])), 1)
        case 0x5:
            let (n, body) = try count(marker, at: at)
            try need(n, at: body, "a string")
            // ASCII by definition; a byte above 0x7F is read as Latin-1 so no input byte is lost.
            var s = String.UnicodeScalarView()
            for b in bytes[body..<(body + n)] { s.append(UnicodeScalar(b)) }
            return (.string(String(s)), 1)
        case 0x6:
            let (n, body) = try count(marker, at: at)
            guard n <= offsetTable / 2 else { throw PropertyListError("a UTF-16 string runs past the object area", offset: at) }
            try need(2 * n, at: body, "a UTF-16 string")
            var units: [UInt16] = []
            units.reserveCapacity(n)
            for i in 0..<n { units.append(UInt16(bytes[body + 2 * i]) << 8 | UInt16(bytes[body + 2 * i + 1])) }
            var out = String.UnicodeScalarView()
            let failed = transcode(units.makeIterator(), from: UTF16.self, to: UTF32.self, stoppingOnError: true) {
                if let scalar = UnicodeScalar($0) { out.append(scalar) }
            }
            guard !failed else { throw PropertyListError("a UTF-16 string has an unpaired surrogate", offset: at) }
            return (.string(String(out)), 1)
        case 0x7:
            let (n, body) = try count(marker, at: at)
            try need(n, at: body, "a UTF-8 string")
            guard let s = String(bytes: bytes[body..<(body + n)], encoding: .utf8) else {
                throw PropertyListError("a UTF-8 string is not valid UTF-8", offset: at)
            }
            return (.string(s), 1)
        case 0x8:
            let size = Int(marker & 0x0F) + 1
            try need(1 + size, at: at, "a UID")
            return (.uid(Self.bigEndian(bytes, at: at + 1, size: size)), 1)
        case 0xA, 0xB, 0xC:
            let (n, body) = try count(marker, at: at)
            guard n <= (offsetTable - body) / refSize else {
                throw PropertyListError("a collection of \(n) runs past the object area", offset: at)
            }
            var items: [PropertyListValue] = []
            items.reserveCapacity(n)
            var size = 1
            for i in 0..<n {
                let r = try ref(at: body + i * refSize)
                items.append(try object(r, depth: depth + 1))
                size = try add(size, expanded[r], at: at)
            }
            return (marker >> 4 == 0xA ? .array(items) : .set(items), size)
        case 0xD:
            let (n, body) = try count(marker, at: at)
            guard n <= (offsetTable - body) / (2 * refSize) else {
                throw PropertyListError("a dictionary of \(n) runs past the object area", offset: at)
            }
            var members: [(key: String, value: PropertyListValue)] = []
            members.reserveCapacity(n)
            var size = 1
            for i in 0..<n {
                let kr = try ref(at: body + i * refSize)
                guard case .string(let key) = try object(kr, depth: depth + 1) else {
                    throw PropertyListError("a dictionary key is not a string", offset: at)
                }
                let vr = try ref(at: body + (n + i) * refSize)
                members.append((key, try object(vr, depth: depth + 1)))
                size = try add(size, expanded[vr] + 1, at: at)
            }
            return (.dictionary(members), size)
        default:
            throw PropertyListError("unknown object marker 0x\(String(marker, radix: 16))", offset: at)
        }
    }

    private func add(_ a: Int, _ b: Int, at: Int) throws(PropertyListError) -> Int {
        let sum = a + b
        guard sum <= Self.maxExpandedValues else {
            throw PropertyListError("shared objects expand to more than \(Self.maxExpandedValues) values", offset: at)
        }
        return sum
    }
}
