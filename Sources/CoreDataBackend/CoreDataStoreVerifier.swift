import Foundation
@_spi(BackendKit) import StoreAPI

/// The consistency of a Core Data store's Z-tables, beyond what SQLite's own check sees (`storectl verify`):
/// - `Z_PRIMARYKEY.Z_MAX` of each root entity is at or above every `Z_PK` in its table (Core Data allocates new
///   keys above it, so a lower value makes the next insert collide);
/// - every `Z_ENT` in a record table is an entity of that table's hierarchy;
/// - every to-one foreign key points at an existing row of an entity of the destination's hierarchy, and its entity
///   column (`Z<n>_<REL>`) names that row's entity; the hidden keys of to-many relationships without an inverse
///   point at existing owners;
/// - every join-table row points at existing rows on both sides;
/// - every value of an attribute that allows external storage is well formed and its file exists.
/// - the kept global identifiers (``CoreDataGlobalIDTable``) are 16 bytes and none is held by two rows (rows of
///   deleted records are not problems: Core Data's deletes leave them, and no record can take their keys).
///
/// The columns and tables are the model's layout (``CoreDataLayout``); those the store does not have are not
/// checked. Each problem names the table, the column and the row's key. Nothing is written.
struct CoreDataStoreVerifier {
    let url: URL
    let db: ReadOnlyDatabase
    let file: CoreDataStoreFile
    let schema: Schema
    let layout: CoreDataLayout

    /// Problems of one kind beyond this many are counted rather than listed.
    static let listedPerCheck = 20

    /// The column names of `table`.
    static func columns(of table: String, in db: ReadOnlyDatabase) throws(StoreError) -> Set<String> {
        Set(try db.rows("PRAGMA table_info(\(CoreDataSQL.quoted(table)))").compactMap { $0.count > 1 ? $0[1].text : nil })
    }

    private func q(_ name: String) -> String { CoreDataSQL.quoted(name) }

    /// The rows of `STOREKIT_GLOBALID` whose identifier is malformed or duplicated, when the store has the table.
    private func keptGlobalIDs() throws(StoreError) -> [String] {
        let t = CoreDataGlobalIDTable.name
        guard file.tableNames.contains(t) else { return [] }
        var problems = try report(
            "SELECT ROOT, PK FROM \(t) WHERE typeof(GLOBALID) != 'blob' OR length(GLOBALID) != 16 ORDER BY ROOT, PK"
        ) { "\(t) row \(text($0[0])) Z_PK \(text($0[1])): the global ID is not 16 bytes" }
        problems += try report(
            "SELECT g.ROOT, g.PK, hex(g.GLOBALID) FROM \(t) AS g WHERE (SELECT count(*) FROM \(t) AS o "
                + "WHERE o.GLOBALID = g.GLOBALID) > 1 ORDER BY g.GLOBALID, g.ROOT, g.PK"
        ) { "\(t) row \(text($0[0])) Z_PK \(text($0[1])): global ID \(text($0[2])) is held by another row too" }
        return problems
    }

    /// Runs `sql` and lists one problem per row, `describe` making its text; past ``listedPerCheck`` rows, one
    /// line counts the rest.
    private func report(_ sql: String, _ describe: ([SQLiteValue]) -> String) throws(StoreError) -> [String] {
        let rows = try db.rows(sql)
        var out = rows.prefix(Self.listedPerCheck).map(describe)
        if rows.count > Self.listedPerCheck { out.append("… and \(rows.count - Self.listedPerCheck) more like it") }
        return out
    }

    private func text(_ v: SQLiteValue) -> String {
        switch v {
        case .null: return "NULL"
        case .integer(let i): return String(i)
        case .real(let d): return String(d)
        case .text(let s): return "'\(s)'"
        case .blob(let b): return "a \(b.count)-byte blob"
        }
    }

    /// The `Z_ENT` numbers of `entity` and its sub-entities.
    private func hierarchyNumbers(of entity: String) -> [Int] {
        guard let e = schema.entity(named: entity) else { return [] }
        return layout.entities.filter { schema.entity(named: $0.name)?.isKind(of: e.name) == true }.map(\.number)
    }

    /// The table holding `entity`'s rows.
    private func table(of entity: String) -> String? {
        guard let root = schema.entity(named: entity)?.rootName else { return nil }
        return layout.entity(named: root)?.table
    }

    func problems() throws(StoreError) -> [String] {
        var problems: [String] = []
        var existing: [String: Set<String>] = [:]
        for table in layout.tables where file.tableNames.contains(table.name) {
            existing[table.name] = try Self.columns(of: table.name, in: db)
        }
        func has(_ table: String, _ column: String) -> Bool { existing[table]?.contains(column) == true }
        let maxima = Dictionary(file.primaryKeys.map { ($0.entityNumber, $0.maxPrimaryKey) }, uniquingKeysWith: { $1 })

        for table in layout.tables {
            guard let columns = existing[table.name] else { continue }
            switch table.kind {
            case .bookkeeping:
                continue
            case .entity(let root):
                guard columns.contains("Z_PK"), columns.contains("Z_ENT") else {
                    problems.append("\(table.name): no Z_PK or Z_ENT column")
                    continue
                }
                let numbers = hierarchyNumbers(of: root)
                if let number = layout.entity(named: root)?.number {
                    let highest = try db.rows("SELECT max(Z_PK) FROM \(q(table.name))").first?.first?.int
                    if let highest {
                        if let stored = maxima[Int64(number)] {
                            if stored < highest {
                                problems.append("\(table.name): Z_PK \(highest) is above Z_PRIMARYKEY.Z_MAX \(stored) of "
                                    + "\(root) (Z_ENT \(number)); new records would reuse its keys")
                            }
                        } else {
                            problems.append("Z_PRIMARYKEY: no row for \(root) (Z_ENT \(number)), whose table \(table.name) has rows")
                        }
                    }
                }
                let known = numbers.map(String.init).joined(separator: ", ")
                problems += try report(
                    "SELECT Z_PK, Z_ENT FROM \(q(table.name)) WHERE Z_ENT IS NULL OR Z_ENT NOT IN (\(known)) ORDER BY Z_PK"
                ) { "\(table.name).Z_ENT: row Z_PK \(text($0[0])) has Z_ENT \(text($0[1])), not an entity of the \(root) hierarchy (\(known))" }
                problems += try foreignKeys(table, has: has)
            case .join:
                problems += try joinRows(table, has: has)
            }
        }
        problems += try externalData(has: has)
        problems += try keptGlobalIDs()
        return problems
    }

    /// To-one keys, their entity columns, and the hidden keys of inverseless to-many relationships in `table`.
    private func foreignKeys(_ table: CoreDataLayout.Table, has: (String, String) -> Bool) throws(StoreError) -> [String] {
        var problems: [String] = []
        for column in table.columns where has(table.name, column.name) {
            switch column.role {
            case .foreignKey(let owner, let name):
                guard let destination = schema.entity(named: owner)?.relationship(name)?.destination,
                    let target = self.table(of: destination), has(target, "Z_PK")
                else { continue }
                let kinds = hierarchyNumbers(of: destination).map(String.init).joined(separator: ", ")
                let c = q(column.name)
                problems += try report(
                    "SELECT t.Z_PK, t.\(c), d.Z_ENT FROM \(q(table.name)) t LEFT JOIN \(q(target)) d ON d.Z_PK = t.\(c) "
                        + "WHERE t.\(c) IS NOT NULL AND (d.Z_PK IS NULL OR d.Z_ENT NOT IN (\(kinds))) ORDER BY t.Z_PK"
                ) {
                    $0[2].int == nil
                        ? "\(table.name).\(column.name) (\(owner).\(name)): row Z_PK \(text($0[0])) points to Z_PK \(text($0[1])), which is not in \(target)"
                        : "\(table.name).\(column.name) (\(owner).\(name)): row Z_PK \(text($0[0])) points to \(target) Z_PK \(text($0[1])), whose Z_ENT \(text($0[2])) is not \(destination) or a sub-entity of it"
                }
            case .foreignEntity(let owner, let name):
                guard let destination = schema.entity(named: owner)?.relationship(name)?.destination,
                    let target = self.table(of: destination),
                    let key = table.columns.first(where: { $0.role == .foreignKey(entity: owner, relationship: name) }),
                    has(table.name, key.name), has(target, "Z_PK")
                else { continue }
                let c = q(column.name), k = q(key.name)
                problems += try report(
                    "SELECT t.Z_PK, t.\(c), d.Z_ENT FROM \(q(table.name)) t JOIN \(q(target)) d ON d.Z_PK = t.\(k) "
                        + "WHERE t.\(c) IS NULL OR t.\(c) <> d.Z_ENT ORDER BY t.Z_PK"
                ) {
                    "\(table.name).\(column.name) (\(owner).\(name)): row Z_PK \(text($0[0])) says Z_ENT \(text($0[1])), but the row it points to in \(target) is Z_ENT \(text($0[2]))"
                }
            case .inverselessForeignKey(let source, let name):
                guard let owners = self.table(of: source), has(owners, "Z_PK") else { continue }
                let c = q(column.name)
                problems += try report(
                    "SELECT Z_PK, \(c) FROM \(q(table.name)) WHERE \(c) IS NOT NULL AND \(c) NOT IN (SELECT Z_PK FROM \(q(owners))) ORDER BY Z_PK"
                ) {
                    "\(table.name).\(column.name) (\(source).\(name)): row Z_PK \(text($0[0])) points to Z_PK \(text($0[1])), which is not in \(owners)"
                }
            default:
                continue
            }
        }
        return problems
    }

    /// Join-table rows whose keys point at no row.
    private func joinRows(_ table: CoreDataLayout.Table, has: (String, String) -> Bool) throws(StoreError) -> [String] {
        let keys = table.columns.filter {
            if case .joinKey = $0.role { return has(table.name, $0.name) }
            return false
        }
        guard keys.count == 2 else { return [] }
        var problems: [String] = []
        for column in keys {
            guard case .joinKey(let owner, let name) = column.role,
                let destination = schema.entity(named: owner)?.relationship(name)?.destination,
                let target = self.table(of: destination), has(target, "Z_PK")
            else { continue }
            let c = q(column.name)
            problems += try report(
                "SELECT \(q(keys[0].name)), \(q(keys[1].name)) FROM \(q(table.name)) "
                    + "WHERE \(c) IS NULL OR \(c) NOT IN (SELECT Z_PK FROM \(q(target))) ORDER BY 1, 2"
            ) {
                "\(table.name).\(column.name) (\(owner).\(name)): row (\(keys[0].name) \(text($0[0])), \(keys[1].name) "
                    + "\(text($0[1]))) points to a Z_PK that is not in \(target)"
            }
        }
        return problems
    }

    /// Malformed external-data values and references to missing files.
    private func externalData(has: (String, String) -> Bool) throws(StoreError) -> [String] {
        let columns = CoreDataExternalData.columns(layout, schema: schema).filter { has($0.table, $0.column) }
        guard !columns.isEmpty else { return [] }
        let folder = CoreDataExternalData.folder(ofStoreAt: url)
        var problems: [String] = []
        for r in try CoreDataExternalData.references(in: columns, rows: { sql throws(StoreError) in try db.rows(sql) }) {
            let place = "\(r.column.table).\(r.column.column) (\(r.column.attribute)): row Z_PK \(r.primaryKey)"
            switch r.content {
            case .file(let name):
                let path = folder.appendingPathComponent(name).path
                if !FileManager.default.fileExists(atPath: path) {
                    problems.append("\(place): external data file \(path) is missing")
                }
            case .invalid(let why):
                problems.append("\(place): \(why)")
            case .empty, .inline:
                continue
            }
        }
        return problems
    }
}

extension CoreDataStoreBackend {
    /// A `-wal` cut short (the only problem reported then), SQLite's `PRAGMA integrity_check` (read-only: a `-wal`
    /// is read, never checkpointed), then the consistency of
    /// the Z-tables (`Z_MAX`, `Z_ENT` values, foreign keys, join rows, external data
    /// files), with the model the store's records are read with. Each problem names the table, column and key.
    ///
    /// - Throws: the errors of ``readMetadata(at:)`` when the store's bookkeeping cannot be read at all.
    public func checkIntegrity(at url: URL) throws -> [String] {
        try requireStore(url, wholeWAL: false)
        // What SQLite reads of a cut -wal is an older store; checking that would only mislead.
        if let torn = CoreDataWALCheck.problem(ofStoreAt: url) { return [torn] }
        let db = try ReadOnlyDatabase.open(url)
        let engine = try db.rows("PRAGMA integrity_check").compactMap { $0.first?.text }.filter { $0 != "ok" }
        // Queries over a damaged file can report nonsense or fail; its own damage is what to fix first.
        guard engine.isEmpty else { return engine }
        let file = try CoreDataStoreFile.read(at: url)
        let (metadata, model, _) = try Self.metadata(of: file, appModel: modelURL)
        let layout: CoreDataLayout
        do throws(CoreDataFormatError) {
            layout = try CoreDataLayout(model: model)
        } catch {
            return ["the store's model cannot be laid out: \(error.description)"]
        }
        return try CoreDataStoreVerifier(url: url, db: db, file: file, schema: metadata.schema, layout: layout).problems()
    }
}
