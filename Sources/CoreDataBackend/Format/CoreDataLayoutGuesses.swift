import Foundation

/// The parts of Core Data's SQLite layout that the corpus cannot settle (`reference/coredata-sqlite-format.md`,
/// marked [unverified] there), kept in one place so that a store created by Core Data itself can correct them here
/// without touching the rest of ``CoreDataLayout``.
///
/// Everything else the layout does is checked against every corpus store that carries its model.
enum CoreDataLayoutGuesses {
    /// The order of columns inside one SQL type group of an entity table.
    ///
    /// Checked: groups come in the order INTEGER, TIMESTAMP, DECIMAL, VARCHAR, BLOB; inside a group the root
    /// entity's columns come before its sub-entities'; an entity's integer attributes (all widths and Booleans,
    /// by name) come before its to-one foreign keys, which come before its `Z_FOK_` columns; a UUID's BLOB comes
    /// before a transformable's of the same entity.
    ///
    /// Guessed: FLOAT (Double, Float) shares TIMESTAMP's group and sorts with it by name (both are 8-byte reals
    /// for SQLite; the corpus never has both in one table); the `Z<ent>_` entity column sits right after its foreign
    /// key; inside the BLOB group Binary < UUID < Transformable (by type code); names compare in code-point order.
    static func groupRank(typeCode: Int) -> (group: Int, subrank: Int) {
        switch typeCode {
        case 100, 200, 300, 800: return (0, 0)
        case 900, 500, 600: return (1, 0)
        case 400: return (2, 0)
        case 700, 1200: return (3, 0)
        default: return (4, typeCode)
        }
    }

    /// The column name for `base` (`Z` + the uppercased property name) when `taken` already holds it: Core Data
    /// appends a counter (`ZTITLE1`, `ZTITLE2`) across the whole inheritance tree. The counter starts at 1.
    static func uniqueColumnName(_ base: String, taken: Set<String>) -> String {
        guard taken.contains(base) else { return base }
        var n = 1
        while taken.contains(base + String(n)) { n += 1 }
        return base + String(n)
    }

    /// The order in which properties that collide on one column name get the plain name and the counters:
    /// guessed as the property declared highest in the tree first, then by entity name and property name (code-point
    /// order), the same order the `coredata` backend's reader assumes (`CoreDataColumnNames`), so a store
    /// written here reads back property for property.
    static func namingPrecedes(_ a: (depth: Int, entity: String, property: String), _ b: (depth: Int, entity: String, property: String)) -> Bool {
        if a.depth != b.depth { return a.depth < b.depth }
        if a.entity != b.entity { return a.entity.unicodeScalars.lexicographicallyPrecedes(b.entity.unicodeScalars) }
        return a.property.unicodeScalars.lexicographicallyPrecedes(b.property.unicodeScalars)
    }

    /// Which side of a many-to-many pair names the join table (`Z_<ent><REL>`).
    ///
    /// Checked on one pair only (DuckDuckGo's `favorites` ↔ `favoriteFolders`, both on one entity: `favorites`
    /// names it). Guessed: the relationship whose name is greater in code-point order names the table; on equal
    /// names, the one on the entity with the lower `Z_ENT`.
    static func namesJoinTable(
        _ a: (entityNumber: Int, relationship: String), over b: (entityNumber: Int, relationship: String)
    ) -> Bool {
        if a.relationship != b.relationship {
            return b.relationship.unicodeScalars.lexicographicallyPrecedes(a.relationship.unicodeScalars)
        }
        return a.entityNumber <= b.entityNumber
    }

    /// A self-referential many-to-many (a relationship that is its own inverse) names its second key column and
    /// that column's order column with these fixed names. [unverified: no corpus case; the names are the
    /// reference's]
    static let reflexiveColumn = "REFLEXIVE"
    static let reflexiveOrderColumn = "FOK_REFLEXIVE"

    /// A to-many without an inverse keeps its source's key in a hidden foreign key in the destination's table:
    /// `Z` + the source's `Z_ENT` + the relationship's name, with an index like any foreign key, and `Z_FOK_` + that
    /// stem when ordered. [unverified: no corpus case]
    static func inverselessForeignKey(sourceNumber: Int, relationship: String) -> String {
        "Z\(sourceNumber)\(relationship.uppercased())"
    }

    static func inverselessOrderKey(sourceNumber: Int, relationship: String) -> String {
        "Z_FOK_\(sourceNumber)\(relationship.uppercased())"
    }

    /// A descending fetch-index element. [unverified: every corpus index is ascending]
    static let descendingSuffix = "COLLATE BINARY DESC"

    /// The framework version a created store records in `NSPersistenceFrameworkVersion`: the newest one seen in the
    /// corpus, whose stores carry every key (digest, checksum) a current Core Data writes.
    static let frameworkVersion: Int64 = 1344
}
