import Foundation

/// How the values written in an Xcode model's `contents` file map to the schema's types and values.
enum XcodeModelValues {
    /// Xcode's `attributeType` names. `Undefined` and `Composite` are handled by the parser, not here.
    static let attributeTypes: [String: AttributeType] = [
        "Integer 16": .integer16, "Integer 32": .integer32, "Integer 64": .integer64,
        "Decimal": .decimal, "Double": .double, "Float": .float, "String": .string, "Boolean": .boolean,
        "Date": .date, "Binary": .binary, "Transformable": .transformable, "UUID": .uuid, "URI": .uri,
    ]

    /// Xcode's `deletionRule` names.
    static let deleteRules: [String: DeleteRule] = [
        "Nullify": .nullify, "Cascade": .cascade, "Deny": .deny, "No Action": .noAction,
    ]

    /// The YES/NO flags Xcode writes. Absent means NO.
    static func flag(_ text: String?) -> Bool {
        guard let text else { return false }
        switch text.lowercased() {
        case "yes", "true", "1": return true
        default: return false
        }
    }

    /// The default value of an attribute from `defaultValueString` (or, for dates, `defaultDateTimeInterval`,
    /// seconds since 2001-01-01). Returns `.success(nil)` when there is no default, `.failure` when the text is not a
    /// value of `type`.
    ///
    /// An empty `defaultValueString` is a default (the empty string) only for string attributes; Xcode writes an
    /// empty string for other types only when the field was cleared, which means "no default".
    static func defaultValue(
        type: AttributeType, valueString: String?, dateTimeInterval: String?
    ) -> Result<StoreValue?, DefaultValueError> {
        if type == .date, let interval = dateTimeInterval {
            guard let seconds = Double(interval.trimmingCharacters(in: .whitespaces)), seconds.isFinite else {
                return .failure(DefaultValueError())
            }
            return .success(.date(Date(timeIntervalSinceReferenceDate: seconds)))
        }
        guard let text = valueString else { return .success(nil) }
        if type == .string { return .success(.string(text)) }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty { return .success(nil) }
        let value: StoreValue?
        switch type {
        case .integer16: value = integer(trimmed).flatMap(Int16.init(exactly:)).map { .integer16($0) }
        case .integer32: value = integer(trimmed).flatMap(Int32.init(exactly:)).map { .integer32($0) }
        case .integer64: value = integer(trimmed).map { .integer64($0) }
        case .decimal: value = StoreValue.decimal(literal: trimmed).map { .decimal($0) }
        case .double: value = Double(trimmed).map { .double($0) }
        case .float: value = Float(trimmed).map { .float($0) }
        case .boolean:
            switch trimmed.lowercased() {
            case "yes", "true", "1": value = .boolean(true)
            case "no", "false", "0": value = .boolean(false)
            default: value = nil
            }
        case .date:
            // Old models wrote dates as seconds in defaultValueString; accept that and ISO 8601.
            if let seconds = Double(trimmed), seconds.isFinite {
                value = .date(Date(timeIntervalSinceReferenceDate: seconds))
            } else {
                value = ExactISO8601.date(from: trimmed).map { .date($0) }
            }
        case .uuid: value = UUID(uuidString: trimmed).map { .uuid($0) }
        case .uri: value = URL(string: trimmed).map { .uri($0) }
        case .string, .binary, .transformable: value = nil  // Xcode offers no default for binary data
        }
        guard let value else { return .failure(DefaultValueError()) }
        return .success(value)
    }

    struct DefaultValueError: Error {}

    /// An integer written either plainly (`42`) or as an integral decimal (`42.0`, which Xcode writes for some
    /// numeric fields).
    private static func integer(_ text: String) -> Int64? {
        if let i = Int64(text) { return i }
        guard text.contains("."), let d = Double(text) else { return nil }
        return Int64(exactly: d)
    }
}
