import Foundation

/// Why a property list is not an `NSKeyedArchiver` archive of the expected shape.
@_spi(BackendKit) public struct KeyedArchiveError: Error, Sendable, CustomStringConvertible {
    /// What is wrong, naming the object (`$objects` index) and key at fault where there is one.
    public let message: String

    /// Creates an error.
    public init(_ message: String) { self.message = message }

    public var description: String { "keyed archive: \(message)" }
}

/// An `NSKeyedArchiver` archive (`$archiver`, `$version`, `$top`, `$objects`), read as a typed object graph.
///
/// Every `CF$UID` reference and every `$class` is checked when the archive is opened, so navigating it later cannot
/// go out of range. Objects are resolved on demand (``ArchivedObject``): archives of object graphs are cyclic by
/// nature (a Core Data entity points to its model, which lists the entity), and lazy resolution walks them without
/// ever expanding a cycle. Whoever walks the graph recursively bounds its own depth (see ``maxDepth``).
@_spi(BackendKit) public struct KeyedArchive: Sendable {
    /// The depth a consumer walking nested containers should stop at (the model decoder uses it).
    public static let maxDepth = 64

    /// `$objects`: index 0 is `$null`.
    public let objects: [PropertyListValue]
    /// `$top`: the archive's named root references.
    public let top: [(key: String, value: PropertyListValue)]
    /// `$archiver` (`NSKeyedArchiver`).
    public let archiver: String
    /// `$version` (100000).
    public let version: Int64

    /// Reads a binary property list and opens it as a keyed archive.
    public init(bytes: [UInt8]) throws(KeyedArchiveError) {
        let plist: PropertyListValue
        do throws(PropertyListError) {
            plist = try BinaryPropertyListReader.read(bytes)
        } catch {
            throw KeyedArchiveError(error.description)
        }
        try self.init(plist)
    }

    /// Opens a property list as a keyed archive, checking every reference and class.
    public init(_ plist: PropertyListValue) throws(KeyedArchiveError) {
        guard case .dictionary = plist else { throw KeyedArchiveError("the property list is \(plist.summary), not a dictionary") }
        guard case .string(let archiver)? = plist["$archiver"] else { throw KeyedArchiveError("no $archiver") }
        guard archiver == "NSKeyedArchiver" else { throw KeyedArchiveError("$archiver is \"\(archiver)\", not NSKeyedArchiver") }
        guard case .integer(let version)? = plist["$version"] else { throw KeyedArchiveError("no integer $version") }
        guard case .array(let objects)? = plist["$objects"], !objects.isEmpty else { throw KeyedArchiveError("no $objects") }
        guard case .dictionary(let top)? = plist["$top"] else { throw KeyedArchiveError("no $top dictionary") }
        self.archiver = archiver
        self.version = version
        self.objects = objects
        self.top = top
        for (key, value) in top { try check(value, in: "$top.\(key)", depth: 0) }
        for (i, o) in objects.enumerated() {
            guard case .dictionary(let members) = o else { continue }
            for (key, value) in members { try check(value, in: "object \(i) key \(key)", depth: 0) }
            if let cls = o["$class"] { _ = try classInfo(cls, of: i) }
        }
    }

    /// Every UID inside `value` (containers of UIDs included) must index `$objects`.
    private func check(_ value: PropertyListValue, in place: String, depth: Int) throws(KeyedArchiveError) {
        switch value {
        case .uid(let u):
            guard u < UInt64(objects.count) else {
                throw KeyedArchiveError("\(place): reference \(u) is out of range (\(objects.count) objects)")
            }
        case .array(let items), .set(let items):
            guard depth < Self.maxDepth else { throw KeyedArchiveError("\(place): nested deeper than \(Self.maxDepth)") }
            for item in items { try check(item, in: place, depth: depth + 1) }
        case .dictionary(let members):
            guard depth < Self.maxDepth else { throw KeyedArchiveError("\(place): nested deeper than \(Self.maxDepth)") }
            for m in members { try check(m.value, in: place, depth: depth + 1) }
        default: break
        }
    }

    private func classInfo(_ ref: PropertyListValue, of index: Int) throws(KeyedArchiveError) -> (String, [String]) {
        guard case .uid(let u) = ref else { throw KeyedArchiveError("object \(index): $class is \(ref.summary), not a reference") }
        let c = objects[Int(u)]
        guard case .string(let name)? = c["$classname"] else {
            throw KeyedArchiveError("object \(index): its $class (object \(u)) has no $classname")
        }
        var chain: [String] = []
        if case .array(let names)? = c["$classes"] {
            for n in names { if case .string(let s) = n { chain.append(s) } }
        }
        return (name, chain.isEmpty ? [name] : chain)
    }

    /// The value a `$top` key names (`root` for a single archived object).
    public func topValue(_ key: String = "root") throws(KeyedArchiveError) -> ArchivedValue {
        guard let v = top.first(where: { $0.key == key })?.value else { throw KeyedArchiveError("$top has no \"\(key)\"") }
        return try resolve(v)
    }

    /// The object a `$top` key names, checked to be an instance of `className` (or a subclass).
    public func rootObject(_ key: String = "root", ofClass className: String) throws(KeyedArchiveError) -> ArchivedObject {
        guard case .object(let o) = try topValue(key) else { throw KeyedArchiveError("$top.\(key) is not an object") }
        try o.require(className)
        return o
    }

    /// A plain value, or the object a UID names (`$null` → ``ArchivedValue/null``).
    public func resolve(_ value: PropertyListValue) throws(KeyedArchiveError) -> ArchivedValue {
        switch value {
        case .uid(let u):
            guard u < UInt64(objects.count) else { throw KeyedArchiveError("reference \(u) is out of range") }
            let index = Int(u)
            let target = objects[index]
            if case .string("$null") = target, index == 0 { return .null }
            if case .dictionary = target, let cls = target["$class"] {
                let (name, chain) = try classInfo(cls, of: index)
                return .object(ArchivedObject(archive: self, index: index, className: name, classes: chain))
            }
            return ArchivedValue(plain: target)
        default:
            return ArchivedValue(plain: value)
        }
    }
}

/// A value in a keyed archive: a plain property-list value, or an archived object.
@_spi(BackendKit) public enum ArchivedValue: Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case real(Double)
    case string(String)
    case data(Data)
    case date(Date)
    case object(ArchivedObject)
    /// A property-list value with no meaning in an archive (a UID inside a plain container, a plain dictionary).
    case other(PropertyListValue)

    init(plain: PropertyListValue) {
        switch plain {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .integer(let i): self = .integer(i)
        case .unsignedInteger: self = .other(plain)
        case .real(let d): self = .real(d)
        case .string(let s): self = .string(s)
        case .data(let d): self = .data(d)
        case .date(let d): self = .date(d)
        default: self = .other(plain)
        }
    }

    /// The string, for a plain string or an archived `NSString`/`NSMutableString` (`NS.string`).
    public var stringValue: String? {
        switch self {
        case .string(let s): return s
        // One level only: a hostile NSString whose NS.string names itself must not recurse.
        case .object(let o):
            if case .string(let s)? = o.plainMember("NS.string") { return s }
            return nil
        default: return nil
        }
    }

    /// The bytes, for plain data or an archived `NSData`/`NSMutableData` (`NS.data`).
    public var dataValue: Data? {
        switch self {
        case .data(let d): return d
        case .object(let o):
            if case .data(let d)? = o.plainMember("NS.data") { return d }
            return nil
        default: return nil
        }
    }

    /// The object, for an archived object.
    public var objectValue: ArchivedObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// A short description for error messages.
    public var summary: String {
        switch self {
        case .null: return "nil"
        case .bool(let b): return b ? "true" : "false"
        case .integer(let i): return "the integer \(i)"
        case .real(let d): return "the real \(d)"
        case .string(let s): return "the string \"\(s.count > 60 ? String(s.prefix(57)) + "…" : s)\""
        case .data(let d): return "\(d.count) bytes of data"
        case .date: return "a date"
        case .object(let o): return "an \(o.className) (object \(o.index))"
        case .other(let p): return p.summary
        }
    }
}

/// One archived object: its class chain and its encoded keys, resolved on demand.
@_spi(BackendKit) public struct ArchivedObject: Sendable {
    /// The archive it belongs to.
    public let archive: KeyedArchive
    /// Its index in `$objects`.
    public let index: Int
    /// `$classname` of its class.
    public let className: String
    /// `$classes`: the class and its superclasses, most derived first.
    public let classes: [String]

    /// Whether the object is an instance of `name` or of a subclass.
    public func isKind(of name: String) -> Bool { classes.contains(name) }

    /// Throws unless the object is an instance of `name` or of a subclass.
    public func require(_ name: String) throws(KeyedArchiveError) {
        guard isKind(of: name) else {
            throw KeyedArchiveError("object \(index) is an \(className), expected an \(name)")
        }
    }

    /// The raw encoded members, in file order.
    public var members: [(key: String, value: PropertyListValue)] {
        guard case .dictionary(let m) = archive.objects[index] else { return [] }
        return m
    }

    /// The plain value under `key`, following one UID to a non-object value.
    func plainMember(_ key: String) -> PropertyListValue? {
        guard let raw = archive.objects[index][key] else { return nil }
        if case .uid(let u) = raw {
            guard u < UInt64(archive.objects.count) else { return nil }
            return archive.objects[Int(u)]
        }
        return raw
    }

    /// Whether the object encodes `key`.
    public func has(_ key: String) -> Bool { archive.objects[index][key] != nil }

    /// The value encoded under `key` (``ArchivedValue/null`` when absent or `$null`).
    public func value(forKey key: String) throws(KeyedArchiveError) -> ArchivedValue {
        guard let raw = archive.objects[index][key] else { return .null }
        return try archive.resolve(raw)
    }

    /// The string under `key`, `nil` when absent; an error when something else is there.
    public func string(forKey key: String) throws(KeyedArchiveError) -> String? {
        let v = try value(forKey: key)
        if case .null = v { return nil }
        guard let s = v.stringValue else { throw wrong(key, v, "a string") }
        return s
    }

    /// The integer under `key` (a boolean counts as 0/1), `nil` when absent.
    public func integer(forKey key: String) throws(KeyedArchiveError) -> Int64? {
        switch try value(forKey: key) {
        case .null: return nil
        case .integer(let i): return i
        case .bool(let b): return b ? 1 : 0
        case let v: throw wrong(key, v, "an integer")
        }
    }

    /// The boolean under `key` (an integer counts as non-zero), `nil` when absent.
    public func bool(forKey key: String) throws(KeyedArchiveError) -> Bool? {
        switch try value(forKey: key) {
        case .null: return nil
        case .bool(let b): return b
        case .integer(let i): return i != 0
        case let v: throw wrong(key, v, "a boolean")
        }
    }

    /// The object under `key`, `nil` when absent; an error when it is not an instance of `className`.
    public func object(forKey key: String, ofClass className: String) throws(KeyedArchiveError) -> ArchivedObject? {
        let v = try value(forKey: key)
        if case .null = v { return nil }
        guard case .object(let o) = v else { throw wrong(key, v, "an \(className)") }
        try o.require(className)
        return o
    }

    /// The elements of an archived `NSArray`, `NSSet` or `NSOrderedSet` (`NS.objects`).
    public func elements() throws(KeyedArchiveError) -> [ArchivedValue] {
        guard isKind(of: "NSArray") || isKind(of: "NSSet") || isKind(of: "NSOrderedSet") else {
            throw KeyedArchiveError("object \(index) is an \(className), expected an array or a set")
        }
        guard let raw = archive.objects[index]["NS.objects"] else { return [] }
        guard case .array(let refs) = raw else { throw KeyedArchiveError("object \(index): NS.objects is \(raw.summary)") }
        var out: [ArchivedValue] = []
        out.reserveCapacity(refs.count)
        for r in refs { out.append(try archive.resolve(r)) }
        return out
    }

    /// The entries of an archived `NSDictionary` (`NS.keys`/`NS.objects`), or of Core Data's
    /// `NSKnownKeysDictionary1` (`searchMapping.keys`/`values`), in file order.
    public func entries() throws(KeyedArchiveError) -> [(key: ArchivedValue, value: ArchivedValue)] {
        guard isKind(of: "NSDictionary") else {
            throw KeyedArchiveError("object \(index) is an \(className), expected a dictionary")
        }
        let keys: [ArchivedValue]
        let values: [ArchivedValue]
        if isKind(of: "NSKnownKeysDictionary") {
            guard let mapping = try object(forKey: "searchMapping", ofClass: "NSObject"),
                  let keyArray = try mapping.object(forKey: "keys", ofClass: "NSArray"),
                  let valueArray = try object(forKey: "values", ofClass: "NSArray")
            else { throw KeyedArchiveError("object \(index): a known-keys dictionary without keys or values") }
            keys = try keyArray.elements()
            values = try valueArray.elements()
        } else {
            keys = try refs("NS.keys")
            values = try refs("NS.objects")
        }
        guard keys.count == values.count else {
            throw KeyedArchiveError("object \(index): \(keys.count) keys but \(values.count) values")
        }
        return Array(zip(keys, values).map { (key: $0, value: $1) })
    }

    private func refs(_ key: String) throws(KeyedArchiveError) -> [ArchivedValue] {
        guard let raw = archive.objects[index][key] else { return [] }
        guard case .array(let refs) = raw else { throw KeyedArchiveError("object \(index): \(key) is \(raw.summary)") }
        var out: [ArchivedValue] = []
        out.reserveCapacity(refs.count)
        for r in refs { out.append(try archive.resolve(r)) }
        return out
    }

    private func wrong(_ key: String, _ v: ArchivedValue, _ expected: String) -> KeyedArchiveError {
        KeyedArchiveError("object \(index) (\(className)): \(key) is \(v.summary), expected \(expected)")
    }
}
