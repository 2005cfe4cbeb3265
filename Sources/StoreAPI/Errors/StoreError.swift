import Foundation

/// Every error the framework and its backends report. Each case names the file, entity, property or position at
/// fault, and ``description`` is a sentence a person can act on.
public enum StoreError: Error, Sendable, CustomStringConvertible {
    // Types and registry
    /// No backend is registered under this type identifier.
    case unknownStoreType(String, registered: [String])
    /// The path holds something no registered backend recognises.
    case unrecognizedStore(URL, reason: String)
    /// The path holds a store or file of another kind than the one asked for.
    case wrongStoreType(URL, expected: String, found: String)

    // Files and stores
    /// No store exists at the path.
    case storeNotFound(URL)
    /// A store (or other file) already exists where a new one would be created.
    case storeExists(URL)
    /// The store's files are damaged or not in the expected format.
    case corruptStore(URL, reason: String)
    /// The store was written with a schema whose version hashes differ from the one given. Upgrade it with
    /// ``StoreOperations/upgradeStore(at:type:to:options:)``, ``StoreOptions/migratesSchemaAutomatically`` or
    /// `storectl upgrade`.
    case incompatibleSchema(URL, entities: [String])
    /// The store cannot be upgraded to the new schema; every problem is listed, and nothing was written. The URL is
    /// `nil` when two schemas were compared without a store (``SchemaMigrationPlan/init(from:to:)``).
    case migrationRefused(URL?, problems: [SchemaMigrationProblem])
    /// The store cannot be written: read-only option, file permissions or a read-only file system.
    case readOnly(URL, reason: String)
    /// The directory that should hold the store is missing or unusable.
    case directoryUnusable(URL, reason: String)
    /// Another process or writer holds the store.
    case locked(URL, reason: String)
    /// The store changed on disk since it was loaded; saving would overwrite someone else's work.
    case modifiedOnDisk(URL)
    /// Another writer changed or deleted the record since this store read it; the save wrote nothing (optimistic
    /// locking: saving would have lost that writer's update).
    case conflict(URL, object: ObjectID, reason: String)
    /// An I/O or engine error, with the engine's own words.
    case io(URL?, operation: String, reason: String)
    /// An operation on a path that is not allowed (a symlink out of the store, a file the store does not own, …).
    case refused(URL, reason: String)

    // Schema and data
    /// The schema itself is invalid.
    case invalidSchema(SchemaError)
    /// No entity with this name exists in the schema (or in the store's configuration).
    case unknownEntity(String)
    /// The store description names a configuration the schema does not define.
    case unknownConfiguration(String)
    /// The entity has no property with this name.
    case unknownProperty(entity: String, property: String)
    /// A value does not fit the attribute's type.
    case typeMismatch(entity: String, property: String, expected: AttributeType, got: String)
    /// A non-optional attribute or relationship is empty at save.
    case missingValue(entity: String, property: String, object: ObjectID)
    /// A to-many relationship holds fewer or more records than its min/max count allow.
    case countViolation(entity: String, relationship: String, count: Int, object: ObjectID)
    /// A save would make two records agree on a uniqueness constraint.
    case uniquenessViolation(entity: String, attributes: [String], values: [StoreValue], existing: ObjectID?)
    /// A delete was refused by a `deny` delete rule.
    case deleteDenied(entity: String, relationship: String, object: ObjectID)
    /// A relationship points to a record of an entity its destination does not allow, or to a different store.
    case invalidRelationshipTarget(entity: String, relationship: String, reason: String)
    /// An abstract entity cannot have records of its own.
    case abstractEntity(String)

    // Objects and contexts
    /// No record with this ID exists.
    case objectNotFound(ObjectID)
    /// The object belongs to a store that was removed, replaced or restored; fetch it again.
    case objectInvalidated(ObjectID, reason: String)
    /// No loaded store holds this entity (or the object's store is not loaded).
    case noStoreForEntity(String)

    // Queries
    /// A predicate string could not be parsed.
    case predicateSyntax(message: String, position: Int, source: String)
    /// A predicate names a key path that does not exist or cannot be compared.
    case invalidPredicate(String)

    // Operations
    /// The caller cancelled the operation; nothing was left behind.
    case cancelled
    /// The operation is not supported by this backend.
    case unsupported(String)
    /// The arguments of a call do not fit together; the message says how.
    case invalidArgument(String)

    public var description: String {
        switch self {
        case .unknownStoreType(let t, let known):
            "unknown store type '\(t)' (registered: \(known.sorted().joined(separator: ", ")))"
        case .unrecognizedStore(let u, let why): "\(u.storeName): not a store: \(why)"
        case .wrongStoreType(let u, let e, let f): "\(u.storeName): expected a \(e) store, found \(f)"
        case .storeNotFound(let u): "\(u.storeName): no store there"
        case .storeExists(let u): "\(u.storeName): already exists (refusing to overwrite)"
        case .corruptStore(let u, let why): "\(u.storeName): damaged store: \(why)"
        case .incompatibleSchema(let u, let es):
            "\(u.storeName): the store was written with an incompatible schema (entities differing: \(es.joined(separator: ", "))); "
                + "to upgrade it to this schema, open it with StoreOptions.migratesSchemaAutomatically, call "
                + "StoreOperations.upgradeStore, or run `storectl upgrade \(u.storeName) --model MODEL` "
                + "(`--dry-run` shows how each entity changes)"
        case .migrationRefused(let u, let problems):
            "\(u.map { $0.storeName + ": " } ?? "")cannot upgrade the store to the new schema (nothing was changed): "
                + (problems.count == 1 ? problems[0].description
                   : "\(problems.count) problems:\n" + problems.map { "  - \($0)" }.joined(separator: "\n"))
        case .readOnly(let u, let why): "\(u.storeName): cannot write: \(why)"
        case .directoryUnusable(let u, let why): "\(u.storeName): \(why)"
        case .locked(let u, let why): "\(u.storeName): locked: \(why)"
        case .modifiedOnDisk(let u): "\(u.storeName): changed on disk since it was loaded; not overwriting"
        case .conflict(let u, let o, let why): "\(u.storeName): conflict on \(o): \(why); nothing was saved"
        case .io(let u, let op, let why): "\(u.map { $0.storeName + ": " } ?? "")\(op) failed: \(why)"
        case .refused(let u, let why): "\(u.storeName): refused: \(why)"
        case .invalidSchema(let e): e.description
        case .unknownEntity(let e): "unknown entity '\(e)'"
        case .unknownConfiguration(let c): "unknown configuration '\(c)'"
        case .unknownProperty(let e, let p): "entity '\(e)' has no property '\(p)'"
        case .typeMismatch(let e, let p, let t, let got): "'\(e).\(p)' is a \(t.rawValue), not \(got)"
        case .missingValue(let e, let p, let o): "'\(e).\(p)' is required but empty (object \(o))"
        case .countViolation(let e, let r, let n, let o): "'\(e).\(r)' holds \(n) records, outside its min/max count (object \(o))"
        case .uniquenessViolation(let e, let attrs, let vals, let existing):
            "'\(e)' must be unique on (\(attrs.joined(separator: ", "))); values (\(vals.map(\.description).joined(separator: ", "))) are already used\(existing.map { " by \($0)" } ?? "")"
        case .deleteDenied(let e, let r, let o): "cannot delete \(o): '\(e).\(r)' still holds records (deny rule)"
        case .invalidRelationshipTarget(let e, let r, let why): "'\(e).\(r)': \(why)"
        case .abstractEntity(let e): "entity '\(e)' is abstract and cannot have records of its own"
        case .objectNotFound(let o): "no record \(o)"
        case .objectInvalidated(let o, let why): "object \(o) is no longer valid: \(why)"
        case .noStoreForEntity(let e): "no loaded store holds entity '\(e)'"
        case .predicateSyntax(let m, let p, let s): "predicate syntax error at position \(p): \(m)\n  \(s)\n  \(String(repeating: " ", count: max(0, p)))^"
        case .invalidPredicate(let m): "invalid predicate: \(m)"
        case .cancelled: "cancelled"
        case .unsupported(let what): "not supported: \(what)"
        case .invalidArgument(let what): "invalid argument: \(what)"
        }
    }
}

extension StoreError: LocalizedError {
    public var errorDescription: String? { description }
}

extension SchemaError: LocalizedError {
    public var errorDescription: String? { description }
}

extension URL {
    /// How errors and logs name a store: a file's path, or for a store on a server its URL without the password
    /// (the one place a server URL becomes text, so a password never reaches a message or a log).
    @_spi(BackendKit) public var storeName: String {
        if isFileURL { return path }
        guard var c = URLComponents(url: self, resolvingAgainstBaseURL: false) else { return "<unparseable URL>" }
        if c.password != nil { c.password = nil }
        if let items = c.queryItems, items.contains(where: { $0.name == "password" }) {
            c.queryItems = items.map { $0.name == "password" ? URLQueryItem(name: "password", value: "***") : $0 }
        }
        return c.string ?? "<unparseable URL>"
    }
}
