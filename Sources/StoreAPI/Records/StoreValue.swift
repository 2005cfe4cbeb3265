import Foundation

/// The type of a stored attribute.
///
/// The raw values are the names used by the JSON schema form. Xcode's names (`Integer 16`, `Boolean`, …) are mapped
/// by the `.xcdatamodel` loader. Transformable values are stored as ``StoreValue/binary(_:)`` data: the framework never runs a value
/// transformer, it keeps the archived bytes exactly.
public enum AttributeType: String, Codable, Sendable, CaseIterable, Hashable {
    case integer16
    case integer32
    case integer64
    case decimal
    case double
    case float
    case string
    case boolean
    case date
    case binary
    case uuid
    case uri
    /// An archived value (Core Data's *Transformable*). Stored and compared as binary data.
    case transformable
}

/// One attribute value, as it is stored.
///
/// Equality is *identity of the stored value*, the relation a store operation must preserve: doubles and floats are
/// compared by bit pattern, so `NaN == NaN` and `0.0 != -0.0`. Predicates use numeric comparison instead
/// (see ``PredicateEvaluator``).
///
/// Dates are kept as `Date` (a `Double` of seconds since 2001-01-01), so every backend must round-trip the exact
/// `timeIntervalSinceReferenceDate` bit pattern.
public enum StoreValue: Sendable {
    case null
    case integer16(Int16)
    case integer32(Int32)
    case integer64(Int64)
    case decimal(Decimal)
    case double(Double)
    case float(Float)
    case string(String)
    case boolean(Bool)
    case date(Date)
    /// Binary data; also the stored form of transformable attributes.
    case binary(Data)
    case uuid(UUID)
    case uri(URL)

    /// Whether this is ``StoreValue/null``.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The attribute type this value belongs to, or `nil` for ``StoreValue/null``. Binary values report ``AttributeType/binary``.
    public var type: AttributeType? {
        switch self {
        case .null: nil
        case .integer16: .integer16
        case .integer32: .integer32
        case .integer64: .integer64
        case .decimal: .decimal
        case .double: .double
        case .float: .float
        case .string: .string
        case .boolean: .boolean
        case .date: .date
        case .binary: .binary
        case .uuid: .uuid
        case .uri: .uri
        }
    }

    /// Whether the value may be stored in an attribute of `attributeType` (``StoreValue/null`` fits every type; binary data
    /// fits transformable attributes).
    public func fits(_ attributeType: AttributeType) -> Bool {
        guard let own = type else { return true }
        if own == attributeType { return true }
        return own == .binary && attributeType == .transformable
    }

    /// An integer view of integer and boolean values.
    public var int64Value: Int64? {
        switch self {
        case .integer16(let v): Int64(v)
        case .integer32(let v): Int64(v)
        case .integer64(let v): v
        case .boolean(let v): v ? 1 : 0
        default: nil
        }
    }

    /// A floating-point view of every numeric value (integers, decimals, floats, doubles, booleans) and of dates
    /// (seconds since the reference date).
    public var doubleValue: Double? {
        switch self {
        case .integer16(let v): Double(v)
        case .integer32(let v): Double(v)
        case .integer64(let v): Double(v)
        case .decimal(let v): NSDecimalNumber(decimal: v).doubleValue
        case .double(let v): v
        case .float(let v): Double(v)
        case .boolean(let v): v ? 1 : 0
        case .date(let v): v.timeIntervalSinceReferenceDate
        default: nil
        }
    }

    /// The string of a ``StoreValue/string(_:)`` value.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The bytes of a ``StoreValue/binary(_:)`` value.
    public var dataValue: Data? {
        if case .binary(let d) = self { return d }
        return nil
    }
}

extension StoreValue: Hashable {
    public static func == (lhs: StoreValue, rhs: StoreValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.integer16(let a), .integer16(let b)): a == b
        case (.integer32(let a), .integer32(let b)): a == b
        case (.integer64(let a), .integer64(let b)): a == b
        case (.decimal(let a), .decimal(let b)): a == b
        case (.double(let a), .double(let b)): a.bitPattern == b.bitPattern
        case (.float(let a), .float(let b)): a.bitPattern == b.bitPattern
        case (.string(let a), .string(let b)): a.utf8.elementsEqual(b.utf8)
        case (.boolean(let a), .boolean(let b)): a == b
        case (.date(let a), .date(let b)):
            a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
        case (.binary(let a), .binary(let b)): a == b
        case (.uuid(let a), .uuid(let b)): a == b
        case (.uri(let a), .uri(let b)): a.absoluteString == b.absoluteString
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .integer16(let v): hasher.combine(1); hasher.combine(v)
        case .integer32(let v): hasher.combine(2); hasher.combine(v)
        case .integer64(let v): hasher.combine(3); hasher.combine(v)
        case .decimal(let v): hasher.combine(4); hasher.combine(v)
        case .double(let v): hasher.combine(5); hasher.combine(v.bitPattern)
        case .float(let v): hasher.combine(6); hasher.combine(v.bitPattern)
        case .string(let v): hasher.combine(7); hasher.combine(v.utf8.count); for b in v.utf8 { hasher.combine(b) }
        case .boolean(let v): hasher.combine(8); hasher.combine(v)
        case .date(let v): hasher.combine(9); hasher.combine(v.timeIntervalSinceReferenceDate.bitPattern)
        case .binary(let v): hasher.combine(10); hasher.combine(v)
        case .uuid(let v): hasher.combine(11); hasher.combine(v)
        case .uri(let v): hasher.combine(12); hasher.combine(v.absoluteString)
        }
    }
}

extension StoreValue: CustomStringConvertible {
    public var description: String {
        switch self {
        case .null: "nil"
        case .integer16(let v): "\(v)"
        case .integer32(let v): "\(v)"
        case .integer64(let v): "\(v)"
        case .decimal(let v): "\(v)"
        case .double(let v): "\(v)"
        case .float(let v): "\(v)"
        case .string(let v): String(reflecting: v)
        case .boolean(let v): v ? "true" : "false"
        case .date(let v): StoreValue.iso8601(v)
        case .binary(let v): "<\(v.count) bytes>"
        case .uuid(let v): v.uuidString
        case .uri(let v): v.absoluteString
        }
    }

    /// ISO 8601 with fractional seconds, UTC — the form used by the interchange format and the CLI.
    public static func iso8601(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}

extension StoreValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral
{
    /// A string literal is a ``StoreValue/string(_:)`` value.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An integer literal is an ``StoreValue/integer64(_:)`` value; the context converts it to the attribute's integer width.
    public init(integerLiteral value: Int64) { self = .integer64(value) }
    /// A float literal is a ``StoreValue/double(_:)`` value; the context converts it for float and decimal attributes.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// A boolean literal is a ``StoreValue/boolean(_:)`` value.
    public init(booleanLiteral value: Bool) { self = .boolean(value) }
    /// `nil` is ``StoreValue/null``.
    public init(nilLiteral: ()) { self = .null }
}

extension StoreValue {
    /// Converts a value to the exact type of an attribute where that loses nothing (an ``StoreValue/integer64(_:)`` literal into an
    /// ``AttributeType/integer16`` attribute when it fits, a double literal into a float or decimal attribute, a string
    /// into a UUID or URI). Returns `nil` when the value does not fit the type.
    public func coerced(to attributeType: AttributeType) -> StoreValue? {
        if fits(attributeType) { return self }
        switch (attributeType, self) {
        case (.integer16, _):
            if let i = int64Value, let v = Int16(exactly: i) { return .integer16(v) }
            if case .double(let d) = self, let v = Int16(exactly: d) { return .integer16(v) }
        case (.integer32, _):
            if let i = int64Value, let v = Int32(exactly: i) { return .integer32(v) }
            if case .double(let d) = self, let v = Int32(exactly: d) { return .integer32(v) }
        case (.integer64, _):
            if let i = int64Value { return .integer64(i) }
            if case .double(let d) = self, let v = Int64(exactly: d) { return .integer64(v) }
        case (.double, _):
            switch self {
            case .float(let f): return .double(Double(f))
            case .integer16, .integer32, .integer64: return int64Value.map { .double(Double($0)) }
            default: break
            }
        case (.float, .double(let d)):
            return .float(Float(d))
        case (.float, .integer16), (.float, .integer32), (.float, .integer64):
            return int64Value.map { .float(Float($0)) }
        case (.decimal, .double(let d)):
            return d.isFinite ? .decimal(Decimal(string: "\(d)") ?? Decimal(d)) : nil
        case (.decimal, .string(let s)):
            return Decimal(string: s, locale: Locale(identifier: "en_US_POSIX")).map { .decimal($0) }
        case (.decimal, .integer16), (.decimal, .integer32), (.decimal, .integer64):
            return int64Value.map { .decimal(Decimal($0)) }
        case (.boolean, _):
            if let i = int64Value, i == 0 || i == 1 { return .boolean(i == 1) }
        case (.uuid, .string(let s)):
            return UUID(uuidString: s).map { .uuid($0) }
        case (.uri, .string(let s)):
            return URL(string: s).map { .uri($0) }
        case (.date, .string(let s)):
            return (try? Date(s, strategy: .iso8601)).map { .date($0) }
        case (.transformable, .binary):
            return self
        default:
            break
        }
        return nil
    }
}
