import Foundation

/// Core Data's version hashes of a schema: what a Core Data SQLite store records in its metadata and what a compiled
/// `.momd` records in its `VersionInfo.plist`.
///
/// They are the framework's version hashes: ``Entity/versionHash`` is the base64 of ``entityHashes``, which every
/// store written by this framework carries, whatever its type. ``digest`` and ``checksum`` summarise a whole schema
/// the way Core Data's metadata does.
public struct CoreDataVersionHashes: Sendable, Hashable {
    /// Entity name → the entity's 32-byte version hash, as `NSStoreModelVersionHashes` holds it.
    public let entityHashes: [String: Data]
    /// `NSStoreModelVersionHashesDigest`: base64 of SHA-512 over every entity's UTF-8 name and hash, entities in
    /// code-point order of their names.
    public let digest: String
    /// `NSStoreModelVersionChecksumKey` (and a compiled model's `NSManagedObjectModel_VersionChecksums` entry):
    /// base64 of SHA-256 over the entity hashes in the same order.
    public let checksum: String

    /// Entity name → the entity's version hash in base64, as Core Data's metadata shows it.
    public var base64EntityHashes: [String: String] {
        entityHashes.mapValues { $0.base64EncodedString() }
    }
}

extension Schema {
    /// Core Data's version hashes of every entity, with the model digest and checksum (see
    /// ``CoreDataVersionHashes``). The entity hashes are the ones validation computed (``Entity/versionHash``);
    /// the digest and checksum are computed on each call.
    ///
    /// The algorithm (`reference/coredata-sqlite-format.md` §4) reproduces the hashes of real Core Data stores and
    /// compiled models. Parts no real store has confirmed are isolated in one place (`CoreDataVersionHash`, for
    /// backends) and documented there: non-ASCII names, derivation expressions other than a key path or `@count`,
    /// filtering predicates, external binary storage, and the counts of relationships built in code rather than
    /// read from a model file.
    public var coreDataVersionHashes: CoreDataVersionHashes {
        var hashes: [String: Data] = [:]
        // Every store open and creation asks for these, and hashing every property again cost more than the rest
        // of reading a small store's metadata: the entities already carry the same hashes, in base64.
        for entity in entities {
            if let hash = Data(base64Encoded: entity.versionHash) {
                hashes[entity.name] = hash
            } else {
                var hasher = CoreDataVersionHash(schema: self)
                hashes[entity.name] = Data(hasher.entityHash(entity.name))
            }
        }
        let ordered = hashes.keys.sorted(by: CoreDataVersionHash.codePointOrder)
        var digestInput: [UInt8] = []
        var checksumInput: [UInt8] = []
        for name in ordered {
            let hash = hashes[name] ?? Data()
            digestInput += Array(name.utf8)
            digestInput += hash
            checksumInput += hash
        }
        return CoreDataVersionHashes(
            entityHashes: hashes,
            digest: Data(StoreDigest.sha512(digestInput)).base64EncodedString(),
            checksum: Data(StoreDigest.sha256(checksumInput)).base64EncodedString())
    }

    /// Core Data's 32-byte version hash of the entity named `name` (`NSEntityDescription.versionHash`), or `nil`
    /// when the schema has no such entity.
    public func coreDataVersionHash(ofEntity name: String) -> Data? {
        guard entity(named: name) != nil else { return nil }
        var hasher = CoreDataVersionHash(schema: self)
        return Data(hasher.entityHash(name))
    }
}

/// Core Data's version-hash algorithm, in one place.
///
/// All digests are SHA-256, integers little-endian, strings UTF-8 without a terminator, `‖` concatenation:
/// - property base `P = SHA256(name ‖ u16(optional·1 | transient·2 | readOnly·4) ‖ versionHashModifier?)`;
/// - attribute `SHA256(P ‖ u32(type code) ‖ [0x01 if external storage] ‖ [0x01 if preserved after deletion])`;
/// - derived attribute `SHA256(derivation expression ‖ filtering predicate?)`, its property base left out;
/// - relationship `SHA256(P ‖ destination ‖ inverse (left out when the relationship is its own inverse) ‖
///   u32(maxCount) ‖ u32(minCount) ‖ [0x01 0x00 if ordered])`; delete rules are not hashed;
/// - entity `SHA256(name ‖ u8(abstract) ‖ parent's hash? ‖ the hashes of every non-transient property, inherited
///   ones included, in code-point order of their names ‖ versionHashModifier? ‖ each of its own uniqueness
///   constraints as names joined with ".", sorted, empty ones skipped)`.
///
/// Checked against every hash in the corpus whose model is there. **Unverified** (no real store settles them):
/// - names outside ASCII (sorted here by code point, hashed as UTF-8);
/// - derivation expressions: Xcode's `key.path.@count` is hashed as Core Data prints the expression,
///   `count:(key.path)`; any other expression is hashed as written, which is right for a plain key path and a guess
///   for function forms; filtering predicates are hashed in their format string as given;
/// - relationship counts: the counts a model file wrote (``RelationshipDescription/declaredMinCount`` and
///   ``RelationshipDescription/declaredMaxCount``, so a to-many without `maxCount` is 0, an old model's `-1` is
///   `0xFFFFFFFF`); a relationship built in code uses its normalised ``RelationshipDescription/minCount`` and
///   ``RelationshipDescription/maxCount`` (to-one 0…1, unbounded to-many 0). Core Data's own models built in code
///   hashed an unbounded to-many as `-1`, so such a model's hashes differ from the same model read from a file;
/// - read-only properties (``AttributeDescription/isReadOnly``): Xcode writes no such flag;
/// - external binary storage: the only corpus model that uses it has no recorded hash;
/// - composite attributes (type code 2100) and object-ID attributes (2000): the schema has neither.
@_spi(BackendKit) public struct CoreDataVersionHash {
    private let definitions: [String: EntityDescription]
    private var cache: [String: [UInt8]] = [:]
    private var propertyCache: [String: [(name: String, hash: [UInt8])]] = [:]

    /// A hasher for the entities of `schema`; it remembers the hashes it computed (a sub-entity's hash covers its
    /// parent's).
    public init(schema: Schema) {
        self.init(definitions: schema.definitions)
    }

    /// A hasher for definitions that have been validated (unique names, known parents, no inheritance cycle): the
    /// schema resolver hashes them before the ``Schema`` exists.
    init(definitions: [EntityDescription]) {
        var byName: [String: EntityDescription] = [:]
        for d in definitions { byName[d.name] = d }
        self.definitions = byName
    }

    /// Core Data's type code for each attribute type (`NSAttributeType`).
    public static func typeCode(_ type: AttributeType) -> UInt32 {
        switch type {
        case .integer16: 100
        case .integer32: 200
        case .integer64: 300
        case .decimal: 400
        case .double: 500
        case .float: 600
        case .string: 700
        case .boolean: 800
        case .date: 900
        case .binary: 1000
        case .uuid: 1100
        case .uri: 1200
        case .transformable: 1800
        }
    }

    /// The order Core Data sorts names in: by Unicode code point, which is the order of their UTF-8 bytes.
    public static func codePointOrder(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    /// The 32-byte hash of the entity named `name`; empty when the schema has no such entity.
    public mutating func entityHash(_ name: String) -> [UInt8] {
        if let known = cache[name] { return known }
        guard let definition = definitions[name] else { return [] }
        var input = Array(definition.name.utf8)
        input.append(definition.isAbstract ? 1 : 0)
        if let parent = definition.parent { input += entityHash(parent) }
        var properties = propertyHashes(definition)
        properties.sort { Self.codePointOrder($0.name, $1.name) }
        for p in properties { input += p.hash }
        if let modifier = definition.versionHashModifier { input += Array(modifier.utf8) }
        // Only the entity's own constraints: a sub-entity's hash does not repeat its parent's (it covers the
        // parent's hash instead).
        let constraints = definition.uniquenessConstraints.map { $0.joined(separator: ".") }.filter { !$0.isEmpty }
        for c in constraints.sorted(by: Self.codePointOrder) { input += Array(c.utf8) }
        let hash = StoreDigest.sha256(input)
        cache[name] = hash
        return hash
    }

    /// The hashes of every non-transient property of `definition`, inherited ones included, in no particular
    /// order. Remembered per entity, so a sub-entity reuses its parent's instead of hashing them again.
    private mutating func propertyHashes(_ definition: EntityDescription, depth: Int = 0) -> [(name: String, hash: [UInt8])] {
        if let known = propertyCache[definition.name] { return known }
        var properties: [(name: String, hash: [UInt8])] = []
        // Validated definitions have no inheritance cycle; the depth bound is only a backstop.
        if let parent = definition.parent, let next = definitions[parent], depth < definitions.count {
            properties = propertyHashes(next, depth: depth + 1)
        }
        for a in definition.attributes where !a.isTransient {
            properties.append((a.name, Self.attributeHash(a)))
        }
        for a in definition.derivedAttributes where !a.isTransient {
            properties.append((a.name, Self.derivedAttributeHash(a)))
        }
        for r in definition.relationships where !r.isTransient {
            properties.append((r.name, Self.relationshipHash(r, declaredOn: definition.name)))
        }
        propertyCache[definition.name] = properties
        return properties
    }

    /// `P`, the part every stored property's hash starts from.
    static func propertyBase(name: String, isOptional: Bool, isTransient: Bool, isReadOnly: Bool, modifier: String?) -> [UInt8] {
        var input = Array(name.utf8)
        let flags: UInt16 = (isOptional ? 1 : 0) | (isTransient ? 2 : 0) | (isReadOnly ? 4 : 0)
        input += littleEndian(flags)
        if let modifier { input += Array(modifier.utf8) }
        return StoreDigest.sha256(input)
    }

    /// The hash of a stored (not derived) attribute.
    public static func attributeHash(_ a: AttributeDescription) -> [UInt8] {
        var input = propertyBase(
            name: a.name, isOptional: a.isOptional, isTransient: a.isTransient, isReadOnly: a.isReadOnly,
            modifier: a.versionHashModifier)
        input += littleEndian(typeCode(a.type))
        if a.allowsExternalBinaryDataStorage { input.append(1) }
        if a.preservesValueInHistoryOnDeletion { input.append(1) }
        return StoreDigest.sha256(input)
    }

    /// The hash of a derived attribute: its derivation only.
    public static func derivedAttributeHash(_ a: AttributeDescription) -> [UInt8] {
        var input = Array(expressionFormat(a.derivation?.expression ?? "").utf8)
        if let predicate = a.derivation?.filteringPredicate { input += Array(predicate.utf8) }
        return StoreDigest.sha256(input)
    }

    /// A derivation expression as Core Data prints it (`NSExpression.description`). Xcode writes an aggregate as a
    /// key path ending in `.@count`; Core Data hashes the function form `count:(path)`. **Unverified** beyond that
    /// form and plain key paths.
    public static func expressionFormat(_ expression: String) -> String {
        let suffix = ".@count"
        if expression.hasSuffix(suffix), expression.count > suffix.count {
            return "count:(\(expression.dropLast(suffix.count)))"
        }
        return expression
    }

    /// The hash of a relationship declared on the entity `owner`.
    public static func relationshipHash(_ r: RelationshipDescription, declaredOn owner: String) -> [UInt8] {
        var input = propertyBase(
            name: r.name, isOptional: r.isOptional, isTransient: r.isTransient, isReadOnly: r.isReadOnly,
            modifier: r.versionHashModifier)
        input += Array(r.destination.utf8)
        if let inverse = r.inverse, !(inverse == r.name && r.destination == owner) {
            input += Array(inverse.utf8)
        }
        input += littleEndian(UInt32(truncatingIfNeeded: r.declaredMaxCount ?? r.maxCount))
        input += littleEndian(UInt32(truncatingIfNeeded: r.declaredMinCount ?? r.minCount))
        if r.isOrdered { input += [1, 0] }
        return StoreDigest.sha256(input)
    }

    private static func littleEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian) { Array($0) }
    }
}
