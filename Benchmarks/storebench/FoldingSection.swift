import Foundation
import GRDB
import StoreAPI

/// String predicates that need folding or pattern matching (`[c]`, `[cd]`, `LIKE`, `MATCHES`) and a quantifier over a
/// to-many relationship, fetched through a context on the SQLite backend: beside the plain predicate selecting the
/// same records (the goal: about the same cost, now that they run in SQL), beside the same predicate evaluated in
/// memory over every record (the path they took before), and a `[c]` prefix beside GRDB's `LIKE` (SQLite's own,
/// which folds ASCII only).
enum FoldingSection {
    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(
                name: "Person",
                attributes: [AttributeDescription(name: "name", type: .string), AttributeDescription(name: "n", type: .integer64)],
                relationships: [RelationshipDescription(name: "tags", destination: "Label", inverse: "people", isToMany: true)]),
            EntityDescription(
                name: "Label", attributes: [AttributeDescription(name: "title", type: .string)],
                relationships: [RelationshipDescription(name: "people", destination: "Person", inverse: "tags", isToMany: true)]),
        ])
    }

    /// Record `i`'s name: mixed case, a quarter of them non-ASCII, so `[c]` and `[d]` do real work.
    static func name(_ i: Int) -> String {
        switch i % 4 {
        case 0: "Name \(i)"
        case 1: "NAME \(i)"
        case 2: "Straße \(i)"
        default: "Élan \(i)"
        }
    }

    /// Returns false when a sanity check fails.
    static func run(count: Int, runs: Int) throws -> Bool {
        let dir = try Measure.temporaryDirectory("folding")
        defer { try? FileManager.default.removeItem(at: dir) }
        let schema = try schema()
        let coordinator = StoreCoordinator(schema: schema)
        try coordinator.addStore(StoreDescription(url: dir.appendingPathComponent("folding.sqlite"), type: "sqlite"))
        defer { for s in coordinator.stores { try? coordinator.removeStore(s) } }
        let loader = coordinator.newContext()
        let labels = try (0..<10).map { try loader.insert("Label", ["title": .string("label \($0)")]) }
        for i in 0..<count {
            let person = try loader.insert("Person", ["name": .string(name(i)), "n": .integer64(Int64(i))])
            try person.addObject(labels[i % 10], forKey: "tags")
        }
        try loader.save()

        let pool = try DatabasePool(path: dir.appendingPathComponent("grdb.sqlite").path)
        defer { try? pool.close() }
        try pool.write { db in
            try db.execute(sql: "CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT, n INTEGER)")
            for i in 0..<count { try db.execute(sql: "INSERT INTO person (name, n) VALUES (?, ?)", arguments: [name(i), i]) }
        }

        var ok = true
        func fetch(_ format: String) throws -> (count: Int, seconds: Double) {
            let predicate = try FetchPredicate(format)
            var best = Double.infinity
            var found = 0
            for _ in 0..<runs {
                let context = coordinator.newContext()
                let (objects, t) = try Measure.cpu { try context.fetch(FetchRequest(entity: "Person", predicate: predicate)) }
                best = min(best, t)
                found = objects.count
            }
            return (found, best)
        }
        /// The same predicate in memory: `self == self` compares two key paths, which no backend translates.
        func inMemory(_ format: String) throws -> (count: Int, seconds: Double) { try fetch("(\(format)) AND SELF == SELF") }

        var rows: [BenchRow] = []
        let cases: [(String, String, String)] = [
            ("name BEGINSWITH[c] 'name 1'", "name BEGINSWITH 'Name 1' OR name BEGINSWITH 'NAME 1'", "BEGINSWITH[c]"),
            ("name ==[cd] 'strasse 42'", "name == 'Straße 42'", "==[cd], non-ASCII"),
            ("name LIKE[c] '*e 1?'", "name ENDSWITH 'e 10' OR name ENDSWITH 'e 11' OR name ENDSWITH 'e 12' OR name ENDSWITH 'e 13' OR name ENDSWITH 'e 14' OR name ENDSWITH 'e 15' OR name ENDSWITH 'e 16' OR name ENDSWITH 'e 17' OR name ENDSWITH 'e 18' OR name ENDSWITH 'e 19' OR name ENDSWITH 'E 10' OR name ENDSWITH 'E 11' OR name ENDSWITH 'E 12' OR name ENDSWITH 'E 13' OR name ENDSWITH 'E 14' OR name ENDSWITH 'E 15' OR name ENDSWITH 'E 16' OR name ENDSWITH 'E 17' OR name ENDSWITH 'E 18' OR name ENDSWITH 'E 19'", "LIKE[c]"),
            ("name MATCHES 'Name 1[0-9]*'", "name BEGINSWITH 'Name 1'", "MATCHES"),
            ("ANY tags.title == 'label 3'", "n IN {3, 13, 23}", "ANY over a to-many"),
        ]
        for (folded, plain, label) in cases {
            let f = try fetch(folded)
            let p = try fetch(plain)
            let m = try inMemory(folded)
            if label != "ANY over a to-many" {
                ok = f.count == p.count && ok
            }
            ok = f.count == m.count && f.count > 0 && ok
            rows.append(BenchRow(name: "fetch \(label)", count: f.count, ours: f.seconds, reference: p.seconds,
                                 referenceName: "plain predicate", note: folded))
            rows.append(BenchRow(name: "fetch \(label)", count: f.count, ours: f.seconds, reference: m.seconds,
                                 referenceName: "same, evaluated in memory", note: "the path it took before"))
        }
        var grdbBest = Double.infinity
        var grdbCount = 0
        for _ in 0..<runs {
            let (names, t) = try Measure.cpu {
                try pool.read { try String.fetchAll($0, sql: "SELECT name FROM person WHERE name LIKE 'name 1%'") }
            }
            grdbBest = min(grdbBest, t)
            grdbCount = names.count
        }
        let prefix = try fetch("name BEGINSWITH[c] 'name 1'")
        ok = prefix.count == grdbCount && ok
        rows.append(BenchRow(name: "fetch BEGINSWITH[c]", count: prefix.count, ours: prefix.seconds, reference: grdbBest,
                             referenceName: "GRDB LIKE 'name 1%' (ASCII NOCASE)", note: "names only on GRDB's side"))
        Report.print(rows, title: "folding, LIKE, MATCHES and ANY in SQL, sqlite, \(count) records")
        if !ok { print("folding section: a predicate selected other records than its plain or in-memory twin") }
        return ok
    }
}
