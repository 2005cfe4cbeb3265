import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// Store paths that need care — spaces, non-ASCII, a leading dash, a newline, a 255-byte component, a path over
/// 1024 bytes — through every operation of every persistent backend: create, save, fetch, backup, restore,
/// convert to every type, replace, migrate, relocate, destroy.
@Suite struct PathNameTests {
    /// Directory components and store base names. The long cases keep the store's own name short enough for its
    /// sidecars (`-journal`, `.lock`) and the operations' staging names to stay within the 255-byte limit of a
    /// file name; ``longStoreNames(_:)`` covers names up to that limit.
    static let cases: [(label: String, directories: [String], name: String)] = [
        ("spaces", ["with spaces"], "my store"),
        ("non-ASCII", ["Données ünïcödé 日本語"], "Données ünïcödé 日本語"),
        ("leading dash", ["-leading-dash"], "-store"),
        ("newline", ["new\nline"], "store\nname"),
        ("255-byte component", [String(repeating: "L", count: 255)], "store"),
        ("path over 1024 bytes", (0..<6).map { "d\($0)" + String(repeating: "é", count: 99) }, "deep"),
    ]

    static let types = ["sqlite", "lmdb", "xml"]

    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Author", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [
                RelationshipDescription(name: "books", destination: "Book", inverse: "author", isToMany: true, isOrdered: true),
            ]),
            EntityDescription(name: "Book", attributes: [AttributeDescription(name: "title", type: .string)], relationships: [
                RelationshipDescription(name: "author", destination: "Author", inverse: "books"),
            ]),
        ])
    }

    static func names(_ store: LoadedStore, in coordinator: StoreCoordinator) throws -> [String] {
        _ = store
        let context = coordinator.newContext()  // objects read their values through a live context
        return try context.fetch(FetchRequest(entity: "Book")).map { object -> String in
            guard case .string(let title) = try object.value(forKey: "title") else { return "?" }
            return title
        }.sorted()
    }

    /// Every operation, for every case and type: the stores work, copies are identical, and when everything is
    /// destroyed the directories are empty (nothing left behind, nothing of anyone else touched).
    @Test(arguments: types)
    func everyOperationWorksOnEveryPath(_ type: String) throws {
        let root = try TemporaryDirectory("paths")
        for c in Self.cases {
            let dir = c.directories.reduce(root.url) { $0.appendingPathComponent($1, isDirectory: true) }
            if dir.path.utf8.count > 512 {
                // SQLite's unix VFS refuses paths over 512 bytes (MAX_PATHNAME, SQLITE_CANTOPEN): every step that
                // touches an SQLite file must then fail with a typed error naming that file; the rest must work.
                do {
                    try Self.everyOperation(c.label, in: dir, name: c.name, type: type)
                } catch let error as StoreError {
                    let text = "\(error)"
                    #expect(text.contains(".sqlite") && text.contains("unable to open database file"),
                            "\(c.label), \(type): only SQLite may refuse a long path: \(text)")
                }
            } else {
                try Self.everyOperation(c.label, in: dir, name: c.name, type: type)
            }
        }
    }

    static func everyOperation(_ label: String, in dir: URL, name: String, type: String) throws {
        let operations = StoreOperations(registry: FuzzBackends.registry)
        let schema = try Self.schema()
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let neighbour = dir.appendingPathComponent("neighbour.txt")
        try Data("not a store".utf8).write(to: neighbour)
        let url = dir.appendingPathComponent("\(name).\(type)")
        let context = "\(label), \(type), \(url.path.utf8.count)-byte path"

        // Create, save, fetch.
        let coordinator = StoreCoordinator(schema: schema, registry: FuzzBackends.registry)
        var store = try coordinator.addStore(StoreDescription(url: url, type: type))
        let ctx = coordinator.newContext()
        let author = try ctx.insert("Author", ["name": .string(name)])
        for title in ["A", "B"] {
            let book = try ctx.insert("Book", ["title": .string(title)])
            try book.setObject(author, forKey: "author")
        }
        try ctx.save()
        #expect(try Self.names(store, in: coordinator) == ["A", "B"], "\(context)")

        // Backup, change, restore.
        let backup = dir.appendingPathComponent("\(name) backup.\(type)")
        try coordinator.backupStore(store, to: backup, label: name)
        let extra = coordinator.newContext()
        try extra.insert("Book", ["title": "C"])
        try extra.save()
        store = try coordinator.restoreStore(store, fromBackupAt: backup)
        #expect(try Self.names(store, in: coordinator) == ["A", "B"], "restore: \(context)")

        // Convert to every type beside it, compare, replace one with the original.
        for other in Self.types {
            let copy = dir.appendingPathComponent("\(name) → copy.\(other)")
            try operations.copyStore(from: url, to: copy, type: other)
            try Self.expectIdentical(url, copy, context: "\(context) → \(other)")
            try operations.replaceStore(at: copy, with: backup)
            try Self.expectIdentical(backup, copy, context: "replace \(context) ← \(other)")
            try operations.destroyStore(at: copy)
        }

        // Relocate the loaded store into a sibling directory with the same odd name, then migrate it back.
        let moved = dir.appendingPathComponent("\(name) moved", isDirectory: true)
        try FileManager.default.createDirectory(at: moved, withIntermediateDirectories: true)
        let relocated = moved.appendingPathComponent(url.lastPathComponent)
        #expect(try coordinator.relocateStore(from: url, to: relocated) == .moved, "\(context)")
        store = try #require(coordinator.store(at: relocated))
        #expect(try Self.names(store, in: coordinator) == ["A", "B"], "relocate: \(context)")
        store = try coordinator.migrateStore(store, to: url, type: type)
        #expect(try Self.names(store, in: coordinator) == ["A", "B"], "migrate: \(context)")

        // Destroy everything: only the neighbour is left.
        try coordinator.destroyStore(at: url)
        try operations.destroyStore(at: backup)
        try FileManager.default.removeItem(at: moved)
        #expect(Self.listing(dir) == ["neighbour.txt"], "\(context)")
    }

    /// Long store names. Operations stage their work under `.storeapi-staging-<UUID>-<name>` (55 bytes more), and
    /// a backend staging its own work beside that nests a second or third prefix; a name of 80 bytes takes every
    /// operation. Longer names up to the 255-byte limit either work or fail with a ``StoreError`` naming the path,
    /// and leave no staging behind either way.
    @Test(arguments: types)
    func longStoreNames(_ type: String) throws {
        let dir = try TemporaryDirectory("long-names")
        let ext = ".\(type)"
        try Self.everyOperation("80-byte name", in: dir.url, name: String(repeating: "n", count: 80 - ext.utf8.count), type: type)
        try FileManager.default.removeItem(at: dir.path("neighbour.txt"))
        for length in [180, 255] {
            let name = String(repeating: "x", count: length - ext.utf8.count)
            do {
                try Self.everyOperation("\(length)-byte name", in: dir.url, name: name, type: type)
            } catch let error as StoreError {
                #expect("\(error)".contains("xxxxxxxx"), "\(type), \(length)-byte name: the error names the path: \(error)")
            } catch {
                Issue.record("\(type), \(length)-byte name: an untyped error: \(error)")
            }
            // Whatever the test itself created may still be there after a refusal; staging must not be.
            let staging = dir.listing().filter { $0.hasPrefix(AtomicFile.stagingPrefix) }
            #expect(staging.isEmpty, "\(type), \(length)-byte name: staging left behind: \(staging)")
            for entry in dir.listing() { try? FileManager.default.removeItem(at: dir.path(entry)) }
        }
    }

    /// Files that merely look like sidecars of an SQLite store are someone else's: stores named with `-wal` or
    /// `.sqlite-wal` in them next to an SQLite store survive its copy, relocation and destruction.
    @Test func namesEndingInWALNextToAnSQLiteStore() throws {
        let dir = try TemporaryDirectory("wal-names")
        let operations = StoreOperations(registry: FuzzBackends.registry)
        let schema = try Self.schema()
        let main = dir.path("journal.sqlite")
        let lookalikes = [dir.path("journal-wal.sqlite"), dir.path("journal.sqlite-wal.xml"), dir.path("journal.sqlite-walrus.lmdb")]
        for url in [main] + lookalikes {
            let type = try #require(FuzzBackends.registry.backend(forExtensionOf: url)).typeIdentifier
            let store = try FuzzBackends.registry.backend(for: type).open(at: url, options: StoreOptions(),
                                                                            creating: StoreMetadata(storeType: type, schema: schema))
            try store.close()
        }
        let before = try lookalikes.map { try Self.digest($0) }
        let moved = dir.path("moved")
        try FileManager.default.createDirectory(at: moved, withIntermediateDirectories: true)
        try operations.copyStore(from: main, to: dir.path("copy.sqlite"))
        #expect(try operations.relocateStore(from: main, to: moved.appendingPathComponent("journal.sqlite")) == .moved)
        try operations.destroyStore(at: moved.appendingPathComponent("journal.sqlite"))
        try operations.destroyStore(at: dir.path("copy.sqlite"))
        #expect(try lookalikes.map { try Self.digest($0) } == before)
        #expect(dir.listing() == ["journal-wal.sqlite", "journal.sqlite-wal.xml", "journal.sqlite-wal.xml.lock",
                                  "journal.sqlite-walrus.lmdb", "moved"])
    }

    static func expectIdentical(_ a: URL, _ b: URL, context: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let sa = try FuzzBackends.registry.detectBackend(at: a).open(at: a, options: StoreProbe.readOnly, creating: nil)
        defer { try? sa.close() }
        let sb = try FuzzBackends.registry.detectBackend(at: b).open(at: b, options: StoreProbe.readOnly, creating: nil)
        defer { try? sb.close() }
        let differences = try StoreComparison(comparesMetadata: false).compare(sa, sb)
        #expect(differences.isIdentical, "\(context): \(differences.summary)", sourceLocation: sourceLocation)
    }

    /// The names in a directory (hidden ones included, but not the `-wal`/`-shm` a read may leave).
    static func listing(_ dir: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted()
    }

    /// Every file under a path (a store directory or file) with its contents, to see that nothing changed.
    static func digest(_ url: URL) throws -> [String: Data] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else { return [:] }
        guard isDirectory.boolValue else { return [url.lastPathComponent: try Data(contentsOf: url)] }
        var out: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: url.path) where name != "lock.mdb" {
            out[name] = try Data(contentsOf: url.appendingPathComponent(name))
        }
        return out
    }
}
