import Foundation
import StoreTestSupport
import Testing

/// The real `storectl` binary moving the sample store onto a PostgreSQL server and off it again.
@Suite(.enabled(if: PostgresTestServer.isAvailable, PostgresTestServer.skipReason))
struct PostgresStorectlTests {
    /// sqlite → postgres → lmdb, each step diffed identical with the source; info, verify and export read the
    /// server store; destroy drops it and then finds nothing there.
    @Test func roundTripThroughPostgres() throws {
        let server = try PostgresTestServer.shared()
        let dir = try TemporaryDirectory("pg-storectl")
        let pg = server.storeURL("library").absoluteString
        let create = try Child.storectl(["create", "library.sqlite", "--model", PackagePaths.libraryModel.path,
                                         "--import", PackagePaths.libraryData.path], in: dir)
        try #require(create.status == 0, "\(create.stderr)")

        let toPG = try Child.storectl(["convert", "library.sqlite", pg], in: dir)
        try #require(toPG.status == 0, "\(toPG.stderr)")
        #expect(toPG.stderr.contains("(postgres)"))
        let toLMDB = try Child.storectl(["convert", pg, "library.lmdb"], in: dir)
        try #require(toLMDB.status == 0, "\(toLMDB.stderr)")

        for (a, b) in [("library.sqlite", pg), (pg, "library.lmdb"), ("library.sqlite", "library.lmdb")] {
            let diff = try Child.storectl(["diff", a, b], in: dir)
            #expect(diff.status == 0, "diff \(a) \(b): \(diff.stdout) \(diff.stderr)")
            #expect(diff.stderr.contains("identical"), "diff \(a) \(b): \(diff.stderr)")
        }
        let info = try Child.storectl(["info", pg, "--json"], in: dir)
        #expect(info.status == 0, "\(info.stderr)")
        #expect(info.stdout.contains("\"type\" : \"postgres\"") || info.stdout.contains("\"type\":\"postgres\""), "\(info.stdout)")
        let verify = try Child.storectl(["verify", pg], in: dir)
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
        let export = try Child.storectl(["export", pg, "-o", "out.ndjson"], in: dir)
        #expect(export.status == 0, "\(export.stderr)")
        let exported = try String(contentsOf: dir.path("out.ndjson"), encoding: .utf8)
        let original = try String(contentsOf: PackagePaths.libraryData, encoding: .utf8)
        #expect(exported.split(separator: "\n").count == original.split(separator: "\n").count)

        // An existing destination is refused; --force replaces it atomically, never doubling records.
        let again = try Child.storectl(["convert", "library.lmdb", pg], in: dir)
        #expect(again.status != 0)
        let forced = try Child.storectl(["convert", "library.lmdb", pg, "--force"], in: dir)
        #expect(forced.status == 0, "\(forced.stderr)")
        let diff = try Child.storectl(["diff", "library.sqlite", pg], in: dir)
        #expect(diff.status == 0, "\(diff.stdout) \(diff.stderr)")

        let destroy = try Child.storectl(["destroy", pg], in: dir)
        #expect(destroy.status == 0, "\(destroy.stderr)")
        let gone = try Child.storectl(["info", pg], in: dir)
        #expect(gone.status != 0)
        #expect(gone.stderr.contains("no store there"), "\(gone.stderr)")
    }

    /// xml → postgres → xml, diffed identical; `import` fills an empty server store (`create` without data) and
    /// `replace` swaps a server store's contents for an xml store's, each diffed identical with its source.
    @Test func xmlImportAndReplaceThroughPostgres() throws {
        let server = try PostgresTestServer.shared()
        let dir = try TemporaryDirectory("pg-storectl-xml")
        let pg = server.storeURL("libraryxml").absoluteString
        let imported = server.storeURL("libraryimport").absoluteString
        defer {
            _ = try? Child.storectl(["destroy", pg], in: dir)
            _ = try? Child.storectl(["destroy", imported], in: dir)
        }
        let create = try Child.storectl(["create", "library.xml", "--model", PackagePaths.libraryModel.path,
                                         "--import", PackagePaths.libraryData.path], in: dir)
        try #require(create.status == 0, "\(create.stderr)")
        let toPG = try Child.storectl(["convert", "library.xml", pg], in: dir)
        try #require(toPG.status == 0, "\(toPG.stderr)")
        let back = try Child.storectl(["convert", pg, "back.xml"], in: dir)
        try #require(back.status == 0, "\(back.stderr)")
        for (a, b) in [("library.xml", pg), ("library.xml", "back.xml")] {
            let diff = try Child.storectl(["diff", a, b], in: dir)
            #expect(diff.status == 0 && diff.stderr.contains("identical"), "diff \(a) \(b): \(diff.stdout) \(diff.stderr)")
        }

        let empty = try Child.storectl(["create", imported, "--model", PackagePaths.libraryModel.path], in: dir)
        try #require(empty.status == 0, "\(empty.stderr)")
        let load = try Child.storectl(["import", imported, PackagePaths.libraryData.path], in: dir)
        #expect(load.status == 0, "\(load.stderr)")
        let export = try Child.storectl(["export", imported, "-o", "imported.ndjson"], in: dir)
        #expect(export.status == 0, "\(export.stderr)")
        let exported = try String(contentsOf: dir.path("imported.ndjson"), encoding: .utf8)
        let original = try String(contentsOf: PackagePaths.libraryData, encoding: .utf8)
        #expect(exported.split(separator: "\n").count == original.split(separator: "\n").count)

        // A record deleted from the server store, then replace makes it an exact copy of the xml store again.
        let first = try #require(original.split(separator: "\n").first)
        let line = try #require(try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any])
        let entity = try #require(line["entity"] as? String)
        let id = try #require(line["id"] as? String)
        try Data("{\"entity\":\"\(entity)\",\"id\":\"\(id)\",\"delete\":true}\n".utf8).write(to: dir.path("delete.ndjson"))
        let delete = try Child.storectl(["import", imported, "delete.ndjson", "--upsert"], in: dir)
        #expect(delete.status == 0, "\(delete.stderr)")
        let differs = try Child.storectl(["diff", "library.xml", imported], in: dir)
        #expect(!differs.stderr.contains("identical"), "the delete reached the server store: \(differs.stderr)")
        let replace = try Child.storectl(["replace", imported, "--with", "library.xml"], in: dir)
        #expect(replace.status == 0, "\(replace.stderr)")
        let diff = try Child.storectl(["diff", "library.xml", imported], in: dir)
        #expect(diff.status == 0 && diff.stderr.contains("identical"), "\(diff.stdout) \(diff.stderr)")
    }

    /// `storectl create` makes a store on the server from a model and an import, all or nothing, and refuses a
    /// second create of the same store.
    @Test func createsAStoreOnTheServer() throws {
        let server = try PostgresTestServer.shared()
        let dir = try TemporaryDirectory("pg-storectl-create")
        defer { dir.remove() }
        let pg = server.storeURL("created").absoluteString
        let create = try Child.storectl(["create", pg, "--model", PackagePaths.libraryModel.path,
                                         "--import", PackagePaths.libraryData.path], in: dir)
        try #require(create.status == 0, "\(create.stderr)")
        #expect(create.stderr.contains("(postgres,"), "\(create.stderr)")
        let export = try Child.storectl(["export", pg, "-o", "server.ndjson"], in: dir)
        #expect(export.status == 0, "\(export.stderr)")
        let exported = try String(contentsOf: dir.path("server.ndjson"), encoding: .utf8).split(separator: "\n")
        let imported = try String(contentsOf: PackagePaths.libraryData, encoding: .utf8).split(separator: "\n")
        #expect(exported.count == imported.count)
        // Every record the import names by its global ID is there under it (the others get new ones).
        func globalID(_ line: Substring) -> String? {
            line.range(of: #""id":"[0-9A-Fa-f-]{36}""#, options: .regularExpression).map { line[$0].uppercased() }
        }
        let stored = Set(exported.compactMap(globalID))
        let named = imported.compactMap(globalID)
        #expect(!named.isEmpty && named.allSatisfy(stored.contains))
        let verify = try Child.storectl(["verify", pg], in: dir)
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")

        let again = try Child.storectl(["create", pg, "--model", PackagePaths.libraryModel.path], in: dir)
        #expect(again.status == 2)
        #expect(again.stderr.contains("already exists"), "\(again.stderr)")
        let destroy = try Child.storectl(["destroy", pg], in: dir)
        #expect(destroy.status == 0, "\(destroy.stderr)")
    }

    /// A password in the URL reaches libpq and nothing else: not the error of a refused connection, not the
    /// output of a failed command.
    @Test func passwordsNeverAppearInOutput() throws {
        let dir = try TemporaryDirectory("pg-storectl-secret")
        let port = try PostgresTestServer.freePort()
        let url = "postgres://someone:s3cr3t-pw@127.0.0.1:\(port)/db?schema=app&connect_timeout=2"
        let info = try Child.storectl(["info", url], in: dir)
        #expect(info.status != 0)
        #expect(!info.stderr.contains("s3cr3t-pw") && !info.stdout.contains("s3cr3t-pw"), "\(info.stderr)")
        #expect(info.stderr.contains("127.0.0.1"), "the error names the host: \(info.stderr)")
    }
}
