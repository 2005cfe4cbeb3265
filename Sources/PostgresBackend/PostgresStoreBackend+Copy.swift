import Foundation
@_spi(BackendKit) import StoreAPI

extension PostgresStoreBackend {
    /// Copies the store at `source` into the new schema of `destination` inside the server, when both are in the
    /// same database of the same server: in one transaction that reads the source as one snapshot, the
    /// destination's tables and indexes are created as a new store's and filled with `INSERT … SELECT` from the
    /// source's, so no row leaves the server. Another server or database is ``StoreAPI/StoreError/unsupported(_:)``,
    /// and the copy is streamed instead.
    ///
    /// Store operations call this with a staging schema as `destination` (see
    /// ``StoreAPI/StoreOperations/copyStore(from:sourceType:to:type:options:)``), and put it in place afterwards.
    public func copyStore(from source: URL, to destination: URL) throws {
        let from = try PostgresLocation(source)
        let to = try PostgresLocation(destination)
        guard Self.sameDatabase(from, to) else {
            throw StoreError.unsupported("copying a PostgreSQL store to another server or database inside the server")
        }
        let c = try connectToStore(source)
        defer { c.close() }
        try c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        do {
            let metadata = try Self.readMetadata(c)
            let layout = PostgresLayout(schema: metadata.schema)
            let target = PostgresLayout.quote(to.schema)
            let origin = PostgresLayout.quote(from.schema)
            try c.execute("CREATE SCHEMA \(target)")
            // The new store's tables and indexes exactly as a new store has them (names included, which errors
            // map back to constraints), whatever order columns an in-place upgrade left in the source's tables.
            try c.execute("SELECT set_config('search_path', $1, true)", [target])
            for statement in layout.creationStatements { try c.execute(statement) }
            for (table, columns) in Self.tableColumns(layout) {
                let list = columns.map(PostgresLayout.quote).joined(separator: ", ")
                let name = PostgresLayout.quote(table)
                try c.execute("INSERT INTO \(target).\(name) (\(list)) SELECT \(list) FROM \(origin).\(name)")
            }
            try c.execute("COMMIT")
        } catch {
            if !c.isBroken { _ = try? c.execute("ROLLBACK") }
            throw error
        }
    }

    /// Whether two locations name the same database on the same server as the same user (they may differ in
    /// schema, timeouts and client settings).
    static func sameDatabase(_ a: PostgresLocation, _ b: PostgresLocation) -> Bool {
        let keys: Set<String> = ["host", "hostaddr", "port", "dbname", "user", "service"]
        func identity(_ l: PostgresLocation) -> [String: String] {
            var out: [String: String] = [:]
            for (k, v) in l.parameters where keys.contains(k) { out[k] = v }
            return out
        }
        return identity(a) == identity(b)
    }

    /// Every table of a store with its columns, in creation order.
    static func tableColumns(_ layout: PostgresLayout) -> [(String, [String])] {
        var out: [(String, [String])] = [
            (PostgresLayout.metadataTable, ["id", "layout", "json"]),
            (PostgresLayout.keysTable, ["root", "next"]),
            (PostgresLayout.historyTable, ["token", "json"]),
        ]
        for root in layout.schema.rootEntities {
            guard let t = layout.tables[root.name] else { continue }
            out.append((t.name, ["_pk", "_ent", "_gid", "_ver"] + t.columns.map(\.name)))
        }
        for j in layout.joinTables { out.append((j.name, ["src", "dst", "ord"])) }
        return out
    }
}
