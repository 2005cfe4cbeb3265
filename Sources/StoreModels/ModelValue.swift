import Foundation
import StoreAPI

/// A Swift type stored as one attribute value.
///
/// The framework's value types conform (integers, floating-point numbers, `Decimal`, `String`, `Bool`, `Date`,
/// `Data`, `UUID`, `URL`), and so do optionals of them. An enum with a raw value of such a type conforms by
/// declaring it (`enum Genre: String, ModelValue { … }`); any `Codable` value is stored as a transformable attribute
/// by declaring ``CodableModelValue``.
public protocol ModelValue: Sendable {
    /// The attribute type the value is stored as.
    static var attributeType: AttributeType { get }
    /// Whether `nil` is a value of the type (an optional attribute).
    static var isOptionalValue: Bool { get }
    /// Reads the value from its stored form; `nil` when the stored value does not fit the type.
    init?(storeValue: StoreValue)
    /// The stored form of the value.
    var storeValue: StoreValue { get throws }
}

extension ModelValue {
    /// Values are required unless the type says otherwise (optionals do).
    public static var isOptionalValue: Bool { false }
}

extension Optional: ModelValue where Wrapped: ModelValue {
    /// The wrapped type's attribute type.
    public static var attributeType: AttributeType { Wrapped.attributeType }
    /// Optionals are optional attributes.
    public static var isOptionalValue: Bool { true }
    /// `nil` for a stored null, else the wrapped value.
    public init?(storeValue: StoreValue) {
        if storeValue.isNull {
            self = .none
        } else if let w = Wrapped(storeValue: storeValue) {
            self = .some(w)
        } else {
            return nil
        }
    }
    /// A null for `nil`, else the wrapped value's stored form.
    public var storeValue: StoreValue {
        get throws { try self?.storeValue ?? .null }
    }
}

extension ModelValue where Self: RawRepresentable, RawValue: ModelValue {
    /// The raw value's attribute type.
    public static var attributeType: AttributeType { RawValue.attributeType }
    /// The case whose raw value is stored; `nil` for a raw value no case has.
    public init?(storeValue: StoreValue) {
        guard let raw = RawValue(storeValue: storeValue) else { return nil }
        self.init(rawValue: raw)
    }
    /// The raw value's stored form.
    public var storeValue: StoreValue {
        get throws { try rawValue.storeValue }
    }
}

/// A `Codable` value stored as a transformable attribute, encoded as JSON. Declare it on the type:
/// `struct Dimensions: Codable, CodableModelValue { … }`.
public protocol CodableModelValue: ModelValue, Codable {}

extension CodableModelValue {
    /// Stored as a transformable (archived bytes) attribute.
    public static var attributeType: AttributeType { .transformable }
    /// Decodes the JSON bytes; `nil` when they are not a value of the type.
    public init?(storeValue: StoreValue) {
        guard let data = storeValue.dataValue, let value = try? JSONDecoder().decode(Self.self, from: data) else {
            return nil
        }
        self = value
    }
    /// The value encoded as JSON, keys sorted so that equal values store equal bytes.
    public var storeValue: StoreValue {
        get throws {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return .binary(try encoder.encode(self))
        }
    }
}

extension Int: ModelValue {
    /// A 64-bit integer attribute.
    public static var attributeType: AttributeType { .integer64 }
    /// Any stored integer.
    public init?(storeValue: StoreValue) {
        guard case let v? = storeValue.integerValue, let i = Int(exactly: v) else { return nil }
        self = i
    }
    /// An ``StoreValue/integer64(_:)`` value (converted to the attribute's width when it fits).
    public var storeValue: StoreValue { .integer64(Int64(self)) }
}

extension Int64: ModelValue {
    /// A 64-bit integer attribute.
    public static var attributeType: AttributeType { .integer64 }
    /// Any stored integer.
    public init?(storeValue: StoreValue) {
        guard case let v? = storeValue.integerValue else { return nil }
        self = v
    }
    /// An ``StoreValue/integer64(_:)`` value.
    public var storeValue: StoreValue { .integer64(self) }
}

extension Int32: ModelValue {
    /// A 32-bit integer attribute.
    public static var attributeType: AttributeType { .integer32 }
    /// A stored integer that fits.
    public init?(storeValue: StoreValue) {
        guard case let v? = storeValue.integerValue, let i = Int32(exactly: v) else { return nil }
        self = i
    }
    /// An ``StoreValue/integer32(_:)`` value.
    public var storeValue: StoreValue { .integer32(self) }
}

extension Int16: ModelValue {
    /// A 16-bit integer attribute.
    public static var attributeType: AttributeType { .integer16 }
    /// A stored integer that fits.
    public init?(storeValue: StoreValue) {
        guard case let v? = storeValue.integerValue, let i = Int16(exactly: v) else { return nil }
        self = i
    }
    /// An ``StoreValue/integer16(_:)`` value.
    public var storeValue: StoreValue { .integer16(self) }
}

extension Double: ModelValue {
    /// A double attribute.
    public static var attributeType: AttributeType { .double }
    /// A stored double, float, decimal or integer.
    public init?(storeValue: StoreValue) {
        switch storeValue {
        case .double(let v): self = v
        case .float(let v): self = Double(v)
        case .decimal, .integer16, .integer32, .integer64:
            guard let v = storeValue.doubleValue else { return nil }
            self = v
        default: return nil
        }
    }
    /// A ``StoreValue/double(_:)`` value.
    public var storeValue: StoreValue { .double(self) }
}

extension Float: ModelValue {
    /// A float attribute.
    public static var attributeType: AttributeType { .float }
    /// A stored float or double.
    public init?(storeValue: StoreValue) {
        switch storeValue {
        case .float(let v): self = v
        case .double(let v): self = Float(v)
        default: return nil
        }
    }
    /// A ``StoreValue/float(_:)`` value.
    public var storeValue: StoreValue { .float(self) }
}

extension Decimal: ModelValue {
    /// A decimal attribute.
    public static var attributeType: AttributeType { .decimal }
    /// A stored decimal or integer.
    public init?(storeValue: StoreValue) {
        switch storeValue {
        case .decimal(let v): self = v
        case .integer16, .integer32, .integer64:
            guard case let v? = storeValue.integerValue else { return nil }
            self = Decimal(v)
        default: return nil
        }
    }
    /// A ``StoreValue/decimal(_:)`` value.
    public var storeValue: StoreValue { .decimal(self) }
}

extension String: ModelValue {
    /// A string attribute.
    public static var attributeType: AttributeType { .string }
    /// A stored string.
    public init?(storeValue: StoreValue) {
        guard case .string(let s) = storeValue else { return nil }
        self = s
    }
    /// A ``StoreValue/string(_:)`` value.
    public var storeValue: StoreValue { .string(self) }
}

extension Bool: ModelValue {
    /// A boolean attribute.
    public static var attributeType: AttributeType { .boolean }
    /// A stored boolean (or an integer 0 or 1, as stores without a boolean type keep them).
    public init?(storeValue: StoreValue) {
        switch storeValue {
        case .boolean(let b): self = b
        case .integer16, .integer32, .integer64:
            guard case let v? = storeValue.integerValue, v == 0 || v == 1 else { return nil }
            self = v == 1
        default: return nil
        }
    }
    /// A ``StoreValue/boolean(_:)`` value.
    public var storeValue: StoreValue { .boolean(self) }
}

extension Date: ModelValue {
    /// A date attribute.
    public static var attributeType: AttributeType { .date }
    /// A stored date.
    public init?(storeValue: StoreValue) {
        guard case .date(let d) = storeValue else { return nil }
        self = d
    }
    /// A ``StoreValue/date(_:)`` value.
    public var storeValue: StoreValue { .date(self) }
}

extension Data: ModelValue {
    /// A binary attribute.
    public static var attributeType: AttributeType { .binary }
    /// Stored bytes.
    public init?(storeValue: StoreValue) {
        guard case .binary(let d) = storeValue else { return nil }
        self = d
    }
    /// A ``StoreValue/binary(_:)`` value.
    public var storeValue: StoreValue { .binary(self) }
}

extension UUID: ModelValue {
    /// A UUID attribute.
    public static var attributeType: AttributeType { .uuid }
    /// A stored UUID.
    public init?(storeValue: StoreValue) {
        guard case .uuid(let u) = storeValue else { return nil }
        self = u
    }
    /// A ``StoreValue/uuid(_:)`` value.
    public var storeValue: StoreValue { .uuid(self) }
}

extension URL: ModelValue {
    /// A URI attribute.
    public static var attributeType: AttributeType { .uri }
    /// A stored URI.
    public init?(storeValue: StoreValue) {
        guard case .uri(let u) = storeValue else { return nil }
        self = u
    }
    /// A ``StoreValue/uri(_:)`` value.
    public var storeValue: StoreValue { .uri(self) }
}

extension StoreValue {
    /// The value of an integer attribute, whatever its width (booleans are not integers here).
    var integerValue: Int64? {
        switch self {
        case .integer16(let v): Int64(v)
        case .integer32(let v): Int64(v)
        case .integer64(let v): v
        default: nil
        }
    }
}
