import Foundation
@_spi(BackendKit) import StoreAPI

/// Reads `Z_MODELCACHE.Z_CONTENT`: raw DEFLATE of an `NSKeyedArchiver` binary plist whose root is the compiled
/// `NSManagedObjectModel` (the key vocabulary of a `.mom` file). This is how a store is read without the app's model.
///
/// Every step has a limit and a typed error: the inflated size (``maxInflatedBytes``), the plist reader's and the
/// archive's checks, class checks on every object the decoder follows, and a depth bound on expressions. A model
/// that is cyclic where Core Data's never is (an entity its own ancestor) is refused when the schema is built.
@_spi(BackendKit) public enum CoreDataModelCache {
    /// The most bytes a model cache may inflate to. Compiled models are kilobytes; this leaves room for very large
    /// ones and refuses a decompression bomb.
    public static let maxInflatedBytes = 32 << 20

    /// Inflates and decodes a `Z_MODELCACHE` blob.
    public static func decode(_ blob: [UInt8]) throws(CoreDataFormatError) -> CoreDataModel {
        let plist: [UInt8]
        do throws(InflateError) {
            plist = try RawDeflate.inflate(blob, limit: maxInflatedBytes)
        } catch {
            throw CoreDataFormatError("Z_MODELCACHE", error.description)
        }
        return try decode(archiveBytes: plist)
    }

    /// Decodes the inflated archive (a binary plist).
    public static func decode(archiveBytes: [UInt8]) throws(CoreDataFormatError) -> CoreDataModel {
        let archive: KeyedArchive
        do throws(KeyedArchiveError) {
            archive = try KeyedArchive(bytes: archiveBytes)
        } catch {
            throw CoreDataFormatError("Z_MODELCACHE", error.description)
        }
        return try decode(archive: archive)
    }

    /// Decodes an opened archive whose root is an `NSManagedObjectModel`.
    public static func decode(archive: KeyedArchive) throws(CoreDataFormatError) -> CoreDataModel {
        do {
            return try ModelDecoder(archive: archive).model()
        } catch let error as CoreDataFormatError {
            throw error
        } catch let error as KeyedArchiveError {
            throw CoreDataFormatError("Z_MODELCACHE", error.description)
        } catch {
            throw CoreDataFormatError("Z_MODELCACHE", "\(error)")
        }
    }
}

/// Walks the archived model. Functions throw `KeyedArchiveError` or `CoreDataFormatError`.
private struct ModelDecoder {
    let archive: KeyedArchive

    static let attributeTypes: [Int64: AttributeType] = [
        100: .integer16, 200: .integer32, 300: .integer64, 400: .decimal, 500: .double, 600: .float, 700: .string,
        800: .boolean, 900: .date, 1000: .binary, 1100: .uuid, 1200: .uri, 1800: .transformable,
    ]
    /// Type codes Core Data has that the framework does not store: undefined, object ID, composite.
    static let transientOnlyTypes: Set<Int64> = [0, 2000, 2100]

    func model() throws -> CoreDataModel {
        let root = try archive.rootObject(ofClass: "NSManagedObjectModel")
        guard let entityMap = try root.object(forKey: "NSEntities", ofClass: "NSDictionary") else {
            throw CoreDataFormatError("Z_MODELCACHE", "the model has no NSEntities")
        }
        var entities: [CoreDataModel.Entity] = []
        var seen: Set<String> = []
        for (_, value) in try entityMap.entries() {
            guard case .object(let e) = value else {
                throw CoreDataFormatError("Z_MODELCACHE", "NSEntities holds \(value.summary), not an entity")
            }
            let entity = try decodeEntity(e)
            guard seen.insert(entity.name).inserted else {
                throw CoreDataFormatError("entity \(entity.name)", "defined twice in the model")
            }
            entities.append(entity)
        }
        var configurations: [String: [String]] = [:]
        if let configs = try root.object(forKey: "NSConfigurations", ofClass: "NSDictionary") {
            for (key, value) in try configs.entries() {
                guard let name = key.stringValue, case .object(let members) = value else {
                    throw CoreDataFormatError("Z_MODELCACHE", "a configuration is \(key.summary) → \(value.summary)")
                }
                var names: [String] = []
                for m in try members.elements() {
                    guard case .object(let e) = m else { continue }
                    try e.require("NSEntityDescription")
                    if let n = try e.string(forKey: "NSEntityName") { names.append(n) }
                }
                configurations[name] = names.sorted()
            }
        }
        var identifiers: [String] = []
        if let ids = try root.object(forKey: "NSVersionIdentifiers", ofClass: "NSObject") {
            for v in try ids.elements() { if let s = v.stringValue { identifiers.append(s) } }
        }
        return CoreDataModel(entities: entities, configurations: configurations, versionIdentifiers: identifiers.sorted())
    }

    func decodeEntity(_ e: ArchivedObject) throws -> CoreDataModel.Entity {
        try e.require("NSEntityDescription")
        guard let name = try e.string(forKey: "NSEntityName"), !name.isEmpty else {
            throw CoreDataFormatError("Z_MODELCACHE", "entity (object \(e.index)) has no name")
        }
        let part = "entity \(name)"
        let parentObject = try e.object(forKey: "NSSuperentity", ofClass: "NSEntityDescription")
        let parent = try parentObject?.string(forKey: "NSEntityName")
        // Core Data lists inherited properties in each sub-entity too: the entity's own ones are those its parent
        // does not have.
        let inherited: Set<String> = try parentObject.map { try Set(propertyEntries($0).map { $0.name }) } ?? []
        var attributes: [CoreDataModel.Attribute] = []
        var relationships: [CoreDataModel.Relationship] = []
        var fetched: [String] = []
        for (propertyName, value) in try propertyEntries(e) where !inherited.contains(propertyName) {
            guard case .object(let p) = value else {
                throw CoreDataFormatError(part, "property \(propertyName) is \(value.summary)")
            }
            if p.isKind(of: "NSRelationshipDescription") {
                relationships.append(try decodeRelationship(p, name: propertyName, entity: name))
            } else if p.isKind(of: "NSFetchedPropertyDescription") {
                fetched.append(propertyName)
            } else if p.isKind(of: "NSAttributeDescription") {
                attributes.append(try decodeAttribute(p, name: propertyName, entity: name))
            } else {
                throw CoreDataFormatError(part, "property \(propertyName) is an \(p.className)")
            }
        }
        let own = try uniqueTuples(e)
        let parentTuples = try parentObject.map { try uniqueTuples($0) } ?? []
        return CoreDataModel.Entity(
            name: name, parent: parent, isAbstract: try e.bool(forKey: "NSIsAbstract") ?? false,
            className: try e.string(forKey: "NSClassNameForEntity"),
            versionHashModifier: try e.string(forKey: "NSVersionHashModifier"),
            renamingIdentifier: try e.string(forKey: "NSRenamingIdentifier"),
            userInfo: try userInfo(e), attributes: attributes, relationships: relationships,
            fetchedPropertyNames: fetched, uniquenessConstraints: own.filter { !parentTuples.contains($0) },
            fetchIndexes: try fetchIndexes(e, inherited: try parentObject.map { try fetchIndexes($0, inherited: []) } ?? []))
    }

    /// The entity's `NSFetchIndexDescriptions`, leaving out those equal to one of `inherited` (the parent's).
    func fetchIndexes(_ e: ArchivedObject, inherited: [CoreDataModel.FetchIndex]) throws -> [CoreDataModel.FetchIndex] {
        guard let list = try e.object(forKey: "NSFetchIndexDescriptions", ofClass: "NSArray") else { return [] }
        var out: [CoreDataModel.FetchIndex] = []
        for item in try list.elements() {
            guard case .object(let index) = item, index.isKind(of: "NSFetchIndexDescription"),
                  let name = try index.string(forKey: "NSIndexName")
            else { continue }
            var elements: [CoreDataModel.FetchIndexElement] = []
            if let items = try index.object(forKey: "NSIndexElements", ofClass: "NSArray") {
                for element in try items.elements() {
                    guard case .object(let el) = element else { continue }
                    let property: String?
                    if case .object(let p) = try el.value(forKey: "NSProperty") {
                        property = try p.string(forKey: "NSPropertyName")
                    } else {
                        property = try el.string(forKey: "NSPropertyName")
                    }
                    guard let property else { continue }
                    elements.append(CoreDataModel.FetchIndexElement(
                        property: property, type: Int(clamping: try el.integer(forKey: "NSFetchIndexElementType") ?? 0),
                        isAscending: try el.bool(forKey: "NSAscending") ?? true))
                }
            }
            var isPartial = false
            if case .object = try index.value(forKey: "NSPartialIndexPredicate") { isPartial = true }
            let fetchIndex = CoreDataModel.FetchIndex(name: name, elements: elements, isPartial: isPartial)
            if !inherited.contains(fetchIndex) { out.append(fetchIndex) }
        }
        return out
    }

    /// The entity's `NSProperties`, name → property value, in file order.
    func propertyEntries(_ e: ArchivedObject) throws -> [(name: String, value: ArchivedValue)] {
        guard let props = try e.object(forKey: "NSProperties", ofClass: "NSDictionary") else { return [] }
        var out: [(name: String, value: ArchivedValue)] = []
        for (key, value) in try props.entries() {
            guard let name = try key.stringValue ?? value.objectValue?.string(forKey: "NSPropertyName") else {
                throw CoreDataFormatError("Z_MODELCACHE", "a property of object \(e.index) has no name")
            }
            out.append((name, value))
        }
        return out
    }

    func uniqueTuples(_ e: ArchivedObject) throws -> [[String]] {
        guard let tuples = try e.object(forKey: "NSUniqueTuples", ofClass: "NSArray") else { return [] }
        var out: [[String]] = []
        for t in try tuples.elements() {
            guard case .object(let tuple) = t else { continue }
            var names: [String] = []
            for item in try tuple.elements() {
                if let s = item.stringValue {
                    names.append(s)
                } else if case .object(let p) = item, let n = try p.string(forKey: "NSPropertyName") {
                    names.append(n)
                }
            }
            out.append(names)
        }
        return out
    }

    func userInfo(_ o: ArchivedObject) throws -> [String: String] {
        guard let dict = try o.object(forKey: "NSUserInfo", ofClass: "NSDictionary") else { return [:] }
        var out: [String: String] = [:]
        for (k, v) in try dict.entries() {
            guard let key = k.stringValue else { continue }
            switch v {
            case .integer(let i): out[key] = String(i)
            case .real(let d): out[key] = String(d)
            case .bool(let b): out[key] = b ? "YES" : "NO"
            default: if let s = v.stringValue { out[key] = s }
            }
        }
        return out
    }

    func flags(_ p: ArchivedObject) throws -> (optional: Bool, transient: Bool, readOnly: Bool, ordered: Bool) {
        let bits = try p.integer(forKey: "_P") ?? 0
        let optional = try p.bool(forKey: "NSIsOptional") ?? false
        let transient = try p.bool(forKey: "NSIsTransient") ?? false
        let readOnly = try p.bool(forKey: "NSIsReadOnly") ?? false
        let ordered = try p.bool(forKey: "NSIsOrdered") ?? false
        return (
            bits & CoreDataModelFlags.optional != 0 || optional, bits & CoreDataModelFlags.transient != 0 || transient,
            bits & CoreDataModelFlags.readOnly != 0 || readOnly, bits & CoreDataModelFlags.ordered != 0 || ordered
        )
    }

    func decodeAttribute(_ p: ArchivedObject, name: String, entity: String) throws -> CoreDataModel.Attribute {
        let part = "attribute \(entity).\(name)"
        let f = try flags(p)
        let code = try p.integer(forKey: "NSAttributeType") ?? 0
        let type = Self.attributeTypes[code]
        if type == nil && !(f.transient && Self.transientOnlyTypes.contains(code)) {
            throw CoreDataFormatError(part, "unknown attribute type code \(code)")
        }
        let attributeFlags = try p.integer(forKey: "NSFlagsKey") ?? 0
        let isDerived = p.isKind(of: "NSDerivedAttributeDescription")
        var expression: String?
        // NSFilteringPredicate is not rendered: no corpus model has one. [unverified]
        if isDerived, let e = try p.object(forKey: "NSDerivationExpression", ofClass: "NSExpression") {
            expression = try render(e, depth: 0)
        }
        var initial: StoreValue?
        if let type { initial = try defaultValue(p.value(forKey: "NSDefaultValue"), type: type, part: part) }
        return CoreDataModel.Attribute(
            name: name, typeCode: Int(clamping: code), type: type, isOptional: f.optional, isTransient: f.transient,
            isReadOnly: f.readOnly, defaultValue: initial,
            valueClassName: try p.string(forKey: "NSAttributeValueClassName"),
            valueTransformerName: try p.string(forKey: "NSValueTransformerName"),
            versionHashModifier: try p.string(forKey: "NSVersionHashModifier"),
            renamingIdentifier: try p.string(forKey: "NSRenamingIdentifier"),
            allowsExternalBinaryDataStorage: attributeFlags & CoreDataModelFlags.externalStorage != 0,
            preservesValueInHistoryOnDeletion: attributeFlags & CoreDataModelFlags.preserveAfterDeletion != 0,
            isDerived: isDerived, derivationExpression: expression, userInfo: try userInfo(p),
            isIndexed: try p.bool(forKey: "NSIsIndexed") ?? false)
    }

    func decodeRelationship(_ p: ArchivedObject, name: String, entity: String) throws -> CoreDataModel.Relationship {
        let part = "relationship \(entity).\(name)"
        let f = try flags(p)
        let destinationName = try p.string(forKey: "_NSDestinationEntityName")
            ?? p.object(forKey: "NSDestinationEntity", ofClass: "NSEntityDescription")?.string(forKey: "NSEntityName")
        guard let destination = destinationName else { throw CoreDataFormatError(part, "no destination entity") }
        let inverse = try p.string(forKey: "_NSInverseRelationshipName")
            ?? p.object(forKey: "NSInverseRelationship", ofClass: "NSRelationshipDescription")?.string(forKey: "NSPropertyName")
        let rule: DeleteRule
        switch try p.integer(forKey: "NSDeleteRule") ?? 1 {
        case 0: rule = .noAction
        case 1: rule = .nullify
        case 2: rule = .cascade
        case 3: rule = .deny
        case let other: throw CoreDataFormatError(part, "unknown delete rule \(other)")
        }
        return CoreDataModel.Relationship(
            name: name, destination: destination, inverse: inverse,
            minCount: Int(clamping: try p.integer(forKey: "NSMinCount") ?? 0),
            maxCount: Int(clamping: try p.integer(forKey: "NSMaxCount") ?? 0), deleteRule: rule,
            isOrdered: f.ordered, isOptional: f.optional, isTransient: f.transient,
            versionHashModifier: try p.string(forKey: "NSVersionHashModifier"),
            renamingIdentifier: try p.string(forKey: "NSRenamingIdentifier"), userInfo: try userInfo(p))
    }

    /// The default value as the framework holds it; `nil` when there is none or it is an object of the app's own
    /// class (a transformable's default), which only the app's transformer could turn into stored bytes.
    func defaultValue(_ v: ArchivedValue, type: AttributeType, part: String) throws -> StoreValue? {
        if case .null = v { return nil }
        func mismatch() -> CoreDataFormatError {
            CoreDataFormatError(part, "default value \(v.summary) does not fit a \(type.rawValue) attribute")
        }
        func integer() throws -> Int64 {
            switch v {
            case .integer(let i): return i
            case .bool(let b): return b ? 1 : 0
            case .real(let d): if let i = Int64(exactly: d) { return i }
            default: break
            }
            throw mismatch()
        }
        func real() throws -> Double {
            switch v {
            case .integer(let i): return Double(i)
            case .real(let d): return d
            default: throw mismatch()
            }
        }
        switch type {
        case .integer16:
            guard let i = Int16(exactly: try integer()) else { throw mismatch() }
            return .integer16(i)
        case .integer32:
            guard let i = Int32(exactly: try integer()) else { throw mismatch() }
            return .integer32(i)
        case .integer64: return .integer64(try integer())
        case .boolean: return .boolean(try integer() != 0)
        case .double: return .double(try real())
        case .float: return .float(Float(try real()))
        case .decimal:
            switch v {
            case .integer(let i): return .decimal(Decimal(i))
            case .real(let d): return Decimal(string: "\(d)").map { .decimal($0) }
            // An archived NSDecimalNumber: its mantissa layout is not decoded here. [unverified: no corpus case]
            default: return nil
            }
        case .string:
            guard let s = v.stringValue else { throw mismatch() }
            return .string(s)
        case .date:
            if case .date(let d) = v { return .date(d) }
            guard case .object(let o) = v, o.isKind(of: "NSDate") else { throw mismatch() }
            switch try o.value(forKey: "NS.time") {
            case .real(let t): return .date(Date(timeIntervalSinceReferenceDate: t))
            case .integer(let t): return .date(Date(timeIntervalSinceReferenceDate: Double(t)))
            default: throw mismatch()
            }
        case .binary:
            guard let d = v.dataValue else { throw mismatch() }
            return .binary(d)
        case .uuid:
            guard case .object(let o) = v, let bytes = try o.value(forKey: "NS.uuidbytes").dataValue, bytes.count == 16
            else { throw mismatch() }
            let b = [UInt8](bytes)
            return .uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                                     b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
        case .uri:
            guard case .object(let o) = v, let text = try o.value(forKey: "NS.relative").stringValue,
                  let url = URL(string: text) else { throw mismatch() }
            return .uri(url)
        case .transformable:
            return v.dataValue.map { .binary($0) }
        }
    }

    /// An `NSExpression` as predicate-format text, for the forms a derived attribute uses; `nil` for others.
    func render(_ e: ArchivedObject, depth: Int) throws -> String? {
        guard depth < KeyedArchive.maxDepth else {
            throw CoreDataFormatError("Z_MODELCACHE", "an expression is nested deeper than \(KeyedArchive.maxDepth)")
        }
        func arguments() throws -> [String]? {
            guard let args = try e.object(forKey: "NSArguments", ofClass: "NSArray") else { return [] }
            var out: [String] = []
            for a in try args.elements() {
                guard case .object(let o) = a, let text = try render(o, depth: depth + 1) else { return nil }
                out.append(text)
            }
            return out
        }
        switch try e.integer(forKey: "NSExpressionType") ?? -1 {
        case 0:
            switch try e.value(forKey: "NSConstantValue") {
            case .string(let s): return "\"\(s)\""
            case .integer(let i): return String(i)
            case .real(let d): return String(d)
            case .bool(let b): return b ? "1" : "0"
            default: return nil
            }
        case 1: return "SELF"
        case 2: return try e.string(forKey: "NSVariable").map { "$" + $0 }
        case 10: return try e.string(forKey: "NSKeyPath")
        case 3, 4:
            guard let selector = try e.string(forKey: "NSSelectorName"),
                  let operand = try e.object(forKey: "NSOperand", ofClass: "NSExpression"),
                  let args = try arguments()
            else { return nil }
            if selector == "valueForKey:" || selector == "valueForKeyPath:" {
                guard args.count == 1 else { return nil }
                if try operand.integer(forKey: "NSExpressionType") == 1 { return args[0] }
                guard let base = try render(operand, depth: depth + 1) else { return nil }
                return base + "." + args[0]
            }
            // A function of _NSPredicateUtilities (count:, sum:, …) prints as `name:(arguments)`.
            return selector + "(" + args.joined(separator: ", ") + ")"
        default:
            return nil
        }
    }
}
