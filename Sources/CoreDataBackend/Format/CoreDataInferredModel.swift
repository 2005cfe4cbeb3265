import Foundation
@_spi(BackendKit) import StoreAPI

/// A model inferred from a store's tables, for stores older than `Z_MODELCACHE` (Core Data wrote the cache from 2012
/// on; the 2009 and 2011 stores of the corpus have none) when the app's model is not at hand.
///
/// What the store records exactly: the entities (`Z_PRIMARYKEY.Z_NAME`, which is the entity's name when the row was
/// written), their hierarchy (`Z_SUPER`) and numbers (`Z_ENT`), each root's table and its columns with their declared
/// SQL types. What it does not record, and is therefore guessed (every guess is in ``CoreDataInferenceGuesses``):
/// property names (columns are upper case), exact attribute types (an `INTEGER` column may have been an Int16, an
/// Int32 or a Boolean), which sub-entity declares a column (all are put on the root), relationship names on the
/// to-many side (which has no column), and optionality, delete rules and defaults.
///
/// Because names and types are guesses, the inferred schema does not reproduce the store's version hashes;
/// the backend reports the entities whose hash differs (``CoreDataModelSource/inferred(versionHashMismatches:)``) as a
/// warning only.
enum CoreDataInferredModel {
    /// The bookkeeping tables, which hold no entity.
    static let bookkeepingTables: Set<String> = ["Z_METADATA", "Z_PRIMARYKEY", "Z_MODELCACHE"]

    /// A foreign-key column found in a root table.
    struct ForeignKey {
        var sourceRoot: String
        var column: String
        var name: String
        var destination: String
    }

    /// Infers the model of the store `file`, reading its tables through `db`.
    ///
    /// - Throws: `StoreError.unsupported` for a layout the inference cannot read soundly (many-to-many join tables,
    ///   entity numbers that are not the ones Core Data would give the names in `Z_PRIMARYKEY`);
    ///   `StoreError.corruptStore` when `Z_PRIMARYKEY`'s hierarchy is broken.
    static func infer(_ file: CoreDataStoreFile, db: ReadOnlyDatabase) throws(StoreError) -> CoreDataModel {
        let url = file.url
        let rows = file.primaryKeys.filter { $0.entityNumber < 16000 }
        var nameByNumber: [Int64: String] = [:]
        var seen: Set<String> = []
        for r in rows {
            guard !r.name.isEmpty, seen.insert(r.name).inserted,
                nameByNumber.updateValue(r.name, forKey: r.entityNumber) == nil
            else {
                throw .corruptStore(url, reason: "Z_PRIMARYKEY names entity '\(r.name)' (Z_ENT \(r.entityNumber)) twice or not at all")
            }
        }
        var entities: [CoreDataModel.Entity] = []
        for r in rows {
            var parent: String?
            if r.superNumber != 0 {
                guard let p = nameByNumber[r.superNumber], r.superNumber != r.entityNumber else {
                    throw .corruptStore(url, reason: "Z_PRIMARYKEY: entity \(r.name)'s Z_SUPER \(r.superNumber) is no entity")
                }
                parent = p
            }
            entities.append(entity(r.name, parent: parent))
        }
        var model = CoreDataModel(entities: entities, configurations: [:], versionIdentifiers: [])

        // The reader maps rows by the numbers computed from the names; they must be the stored ones.
        let computed = model.entityNumbers()
        for r in rows where computed[r.name].map(Int64.init) != r.entityNumber {
            throw .unsupported("\(url.path): Z_PRIMARYKEY numbers \(r.name) \(r.entityNumber), but Core Data would "
                + "number it \(computed[r.name].map(String.init) ?? "not at all") (a renamed entity?); read it with "
                + "the app's model")
        }
        if let join = file.tableNames.sorted().first(where: { $0.hasPrefix("Z_") && !bookkeepingTables.contains($0) }) {
            throw .unsupported("\(url.path): table \(join) looks like a many-to-many join table, which a store "
                + "without a model cache cannot be read with soundly; read it with the app's model")
        }

        let roots = model.entities.filter { $0.parent == nil }
        let tableOf = Dictionary(uniqueKeysWithValues: roots.map { ($0.name, "Z" + $0.name.uppercased()) })
        let indexes = Set(try db.rows("SELECT name FROM sqlite_master WHERE type = 'index'").compactMap { $0.first?.text })
        var primaryKeys: [String: Set<Int64>] = [:]
        for root in roots {
            guard let table = tableOf[root.name], file.tableNames.contains(table) else { continue }
            primaryKeys[root.name] = Set(try db.rows("SELECT Z_PK FROM \(quoted(table))").compactMap { $0.first?.int })
        }
        var attributes: [String: [CoreDataModel.Attribute]] = [:]
        var foreignKeys: [ForeignKey] = []
        for root in roots {
            guard let table = tableOf[root.name], file.tableNames.contains(table) else { continue }
            for column in try db.rows("PRAGMA table_info(\(quoted(table)))") {
                guard column.count > 2, let name = column[1].text else { continue }
                let declared = column[2].text ?? ""
                guard !CoreDataInferenceGuesses.isBookkeepingColumn(name) else { continue }
                if let fk = try foreignKey(
                    name, declared: declared, table: table, root: root.name, model: model, indexes: indexes,
                    tableOf: tableOf, primaryKeys: primaryKeys, db: db)
                {
                    foreignKeys.append(fk)
                    continue
                }
                guard let type = CoreDataInferenceGuesses.attributeType(declared: declared) else {
                    throw .unsupported("\(url.path): column \(table).\(name) has the SQL type '\(declared)', which no "
                        + "Core Data attribute type is stored as")
                }
                attributes[root.name, default: []].append(attribute(
                    CoreDataInferenceGuesses.propertyName(column: name), type: type))
            }
        }

        var relationships: [String: [CoreDataModel.Relationship]] = [:]
        var paired: Set<Int> = []
        for (i, fk) in foreignKeys.enumerated() where !paired.contains(i) {
            // A one-to-one keeps a foreign key on both sides; pair the two when they point at each other row for row.
            if let j = foreignKeys.indices.first(where: { j in
                j != i && !paired.contains(j) && foreignKeys[j].sourceRoot == fk.destination
                    && foreignKeys[j].destination == fk.sourceRoot
                    && foreignKeys.filter { $0.sourceRoot == fk.sourceRoot && $0.destination == fk.destination }.count == 1
                    && foreignKeys.filter { $0.sourceRoot == fk.destination && $0.destination == fk.sourceRoot }.count == 1
            }), try mirror(fk, foreignKeys[j], tableOf: tableOf, db: db) {
                let other = foreignKeys[j]
                paired.formUnion([i, j])
                relationships[fk.sourceRoot, default: []].append(relationship(fk.name, to: fk.destination, inverse: other.name, toMany: false))
                relationships[other.sourceRoot, default: []].append(relationship(other.name, to: other.destination, inverse: fk.name, toMany: false))
                continue
            }
            paired.insert(i)
            let taken = Set((attributes[fk.destination] ?? []).map(\.name) + (relationships[fk.destination] ?? []).map(\.name)
                + foreignKeys.filter { $0.sourceRoot == fk.destination }.map(\.name))
            let inverse = CoreDataInferenceGuesses.toManyName(source: fk.sourceRoot, taken: taken)
            relationships[fk.sourceRoot, default: []].append(relationship(fk.name, to: fk.destination, inverse: inverse, toMany: false))
            relationships[fk.destination, default: []].append(relationship(inverse, to: fk.sourceRoot, inverse: fk.name, toMany: true))
        }
        for k in model.entities.indices {
            let name = model.entities[k].name
            model.entities[k].attributes = attributes[name] ?? []
            model.entities[k].relationships = relationships[name] ?? []
        }
        return model
    }

    /// Whether `column` of `table` is a to-one foreign key, and to which entity.
    ///
    /// The rule (every part of it must hold, or the column is an Int64 attribute): the column is `INTEGER`; Core
    /// Data's index for a foreign key, `<TABLE>_<COLUMN>_INDEX`, exists; the destination is the entity whose
    /// upper-cased name is the column's name without its `Z`, or else the one entity whose upper-cased name ends with
    /// it (`ZTYPE` → `RecipeType`); and every non-null value is a `Z_PK` of the destination's table. An indexed
    /// integer attribute is thereby told from a foreign key by its name and its values.
    static func foreignKey(
        _ column: String, declared: String, table: String, root: String, model: CoreDataModel, indexes: Set<String>,
        tableOf: [String: String], primaryKeys: [String: Set<Int64>], db: ReadOnlyDatabase
    ) throws(StoreError) -> ForeignKey? {
        guard declared.uppercased() == "INTEGER", column.hasPrefix("Z"), column.count > 1,
            indexes.contains("\(table)_\(column)_INDEX")
        else { return nil }
        let stem = String(column.dropFirst())
        let exact = model.entities.filter { $0.name.uppercased() == stem }
        let suffix = model.entities.filter { $0.name.uppercased().hasSuffix(stem) }
        guard let target = exact.count == 1 ? exact[0] : (exact.isEmpty && suffix.count == 1 ? suffix[0] : nil) else {
            return nil
        }
        let destinationRoot = model.lineage(of: target).last?.name ?? target.name
        guard let keys = primaryKeys[destinationRoot] else { return nil }
        let (c, t) = (quoted(column), quoted(table))
        let values = try db.rows("SELECT DISTINCT \(c) FROM \(t) WHERE \(c) IS NOT NULL")
        guard values.allSatisfy({ $0.first?.int.map(keys.contains) == true }) else { return nil }
        return ForeignKey(
            sourceRoot: root, column: column, name: CoreDataInferenceGuesses.propertyName(column: column),
            destination: target.name)
    }

    /// Whether two foreign keys between two tables are the two sides of one one-to-one: each row's key points at a
    /// row whose key points back.
    static func mirror(
        _ a: ForeignKey, _ b: ForeignKey, tableOf: [String: String], db: ReadOnlyDatabase
    ) throws(StoreError) -> Bool {
        guard let ta = tableOf[a.sourceRoot].map(quoted), let tb = tableOf[b.sourceRoot].map(quoted) else { return false }
        let (ca, cb) = (quoted(a.column), quoted(b.column))
        let broken = try db.rows("""
            SELECT count(*) FROM \(ta) x LEFT JOIN \(tb) y ON y.Z_PK = x.\(ca) \
            WHERE x.\(ca) IS NOT NULL AND (y.Z_PK IS NULL OR y.\(cb) IS NOT x.Z_PK)
            """)
        let brokenBack = try db.rows("""
            SELECT count(*) FROM \(tb) y LEFT JOIN \(ta) x ON x.Z_PK = y.\(cb) \
            WHERE y.\(cb) IS NOT NULL AND (x.Z_PK IS NULL OR x.\(ca) IS NOT y.Z_PK)
            """)
        return broken.first?.first?.int == 0 && brokenBack.first?.first?.int == 0
    }

    /// An identifier from the store's own schema, quoted for SQL (a hostile name cannot end the statement).
    static func quoted(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func entity(_ name: String, parent: String?) -> CoreDataModel.Entity {
        CoreDataModel.Entity(
            name: name, parent: parent, isAbstract: false, className: nil, versionHashModifier: nil,
            renamingIdentifier: nil, userInfo: [:], attributes: [], relationships: [], fetchedPropertyNames: [],
            uniquenessConstraints: [])
    }

    static func attribute(_ name: String, type: AttributeType) -> CoreDataModel.Attribute {
        CoreDataModel.Attribute(
            name: name, typeCode: CoreDataInferenceGuesses.typeCode(type), type: type, isOptional: true,
            isTransient: false, isReadOnly: false, defaultValue: nil, valueClassName: nil, valueTransformerName: nil,
            versionHashModifier: nil, renamingIdentifier: nil, allowsExternalBinaryDataStorage: false,
            preservesValueInHistoryOnDeletion: false, isDerived: false, derivationExpression: nil, userInfo: [:])
    }

    static func relationship(_ name: String, to destination: String, inverse: String, toMany: Bool) -> CoreDataModel.Relationship {
        CoreDataModel.Relationship(
            name: name, destination: destination, inverse: inverse, minCount: 0, maxCount: toMany ? 0 : 1,
            deleteRule: .nullify, isOrdered: false, isOptional: true, isTransient: false, versionHashModifier: nil,
            renamingIdentifier: nil, userInfo: [:])
    }
}

/// Every guess the inference of a model from a store's tables makes (see ``CoreDataInferredModel``), kept in one
/// place so that a better rule changes here only.
enum CoreDataInferenceGuesses {
    /// `Z_PK`, `Z_ENT`, `Z_OPT`, an ordered relationship's `Z_FOK_…` and a foreign key's entity column `Z<n>_…`
    /// hold no property of their own.
    static func isBookkeepingColumn(_ column: String) -> Bool {
        if ["Z_PK", "Z_ENT", "Z_OPT"].contains(column) || column.hasPrefix("Z_FOK_") { return true }
        let rest = column.dropFirst()
        guard column.hasPrefix("Z"), let underscore = rest.firstIndex(of: "_"), underscore > rest.startIndex else {
            return false
        }
        return rest[rest.startIndex..<underscore].allSatisfy(\.isNumber)
    }

    /// A property's name from its column: the column without its `Z`, lower-cased (`ZDISPLAYORDER` →
    /// `displayorder`). Core Data upper-cased the name, so its original case is lost.
    static func propertyName(column: String) -> String {
        String(column.dropFirst()).lowercased()
    }

    /// The name of the to-many side of a to-one that has no column of its own: the source entity's name with a
    /// lower-case first letter and an `s` (`Ingredient` → `ingredients`), with a counter when taken.
    static func toManyName(source: String, taken: Set<String>) -> String {
        let base = source.prefix(1).lowercased() + source.dropFirst() + "s"
        var name = base, n = 1
        while taken.contains(name) {
            n += 1
            name = base + String(n)
        }
        return name
    }

    /// The attribute type for a declared SQL column type (the reference's §3 mapping, read backwards). INTEGER is
    /// taken as Int64, the widest of the types stored so (Int16, Int32, Boolean); FLOAT as Double; BLOB as Binary
    /// (a UUID or a transformable is stored the same way).
    static func attributeType(declared: String) -> AttributeType? {
        switch declared.uppercased() {
        case "INTEGER": return .integer64
        case "FLOAT": return .double
        case "TIMESTAMP": return .date
        case "VARCHAR": return .string
        case "BLOB": return .binary
        case "DECIMAL": return .decimal
        default: return nil
        }
    }

    /// `NSAttributeType` for the types ``attributeType(declared:)`` returns.
    static func typeCode(_ type: AttributeType) -> Int {
        switch type {
        case .integer64: return 300
        case .double: return 500
        case .date: return 900
        case .string: return 700
        case .decimal: return 400
        default: return 1000
        }
    }
}
