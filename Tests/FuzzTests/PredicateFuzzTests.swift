import Foundation
import LMDBBackend
import PostgresBackend
import SQLiteBackend
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing
import XMLBackend

/// The predicate parser, fed mutated predicates; what parses is printed and parsed again, and run against the
/// fixture store in every backend (PostgreSQL too when its server binaries are installed), whose answers must agree
/// with the reference evaluator's — whether a backend runs the predicate in SQL or in memory.
@Suite struct PredicateFuzzTests {
    /// Seeds as `Entity|predicate`, over the fixture schema (every attribute type and relationship kind).
    static let seeds = [
        "Item|i16 == 5", "Item|i32 < 0 AND i64 > 100", "Item|dbl == -0.0", "Item|dbl != dbl", "Item|flt > 1e30 OR flt < -1e30",
        "Item|dec BETWEEN {0, 100}", "Item|str BEGINSWITH[cd] 'PL'", "Item|str CONTAINS 'a' OR str ENDSWITH[c] 'N'",
        "Item|str LIKE '*la?n*'", "Item|str MATCHES '.*[0-9]+.*'", "Item|flag == YES",
        "Item|when > CAST('2001-01-01T00:00:00Z', 'date')", "Item|when < CAST(100, \"NSDate\")",
        "Item|blob == CAST('AAEC', 'binary')", "Item|ident == CAST('F0220000-0000-4000-8000-000000000077', 'uuid')",
        "Item|link == CAST('https://example.com/a?b=c#d', 'uri')", "Item|code IN {'A-1', 'B-2', nil}",
        "Item|archived != nil AND NOT code == 'Z'", "Item|i16 IN {%d, %d}", "Item|%K == %@", "Item|self > 1",
        "Item|TRUEPREDICATE", "Item|i64 >= 9223372036854775807", "Item|i64 == -9223372036854775808",
        "Item|dec > 12.49 AND dec < 12.51", "Item|str == '\\0\\u{1}\\r\\n\\t<>&\"\\'🙂 \\u{FFFF}\\\\'",
        "Item|(i16 > 0 OR i32 > 0) AND !(flag == NO)", "Item|flt == %f", "Item|str LIKE[c] %@",
        "Book|author.name == 'Ann'", "Book|ANY tags.label == 'y'", "Book|ALL tags.label != 'x'",
        "Book|NONE tags.label IN {'x', 'y'}", "Book|tags.@count >= 2", "Book|title ==[c] 'one' OR title CONTAINS '\\n'",
        "Book|author == nil", "Book|author.books.@count == 3", "Book|'y' IN tags.label",
        "Author|books.@count > 0 AND name != nil", "Author|ANY books.tags.label == 'x'",
        "Person|spouse.spouse.name == 'P'", "Person|ANY pets.name BEGINSWITH 'R'",
        "Animal|owner.name == 'P' AND name != 'x'", "Dog|barks == TRUE", "Cat|lives BETWEEN {1, 9}",
        "Tag|books.@count == 0", "Tag|label MATCHES[c] '[XY]'", "Item|FALSEPREDICATE OR SELF == 2",
        "Item|str ==[c] 'PLAIN'", "Item|str LIKE[cd] '*É*'", "Item|str BEGINSWITH[c] 'STRASSE' OR code ==[cd] 'a-1'",
        "Item|str LIKE '%_*'", "Book|ANY tags.label LIKE[c] 'Y*'", "Book|ALL tags.label MATCHES '[a-z]'",
        "Author|NONE books.title ==[cd] 'ONE'", "Book|tags.label CONTAINS[c] 'X'", "Author|ANY books.tags.@count > 1",
    ]

    /// The fixture store in memory (the reference) and in every persistent backend.
    final class Stores: @unchecked Sendable {
        let dir: TemporaryDirectory
        let reference: MemoryStore
        let others: [(String, any PersistentStore)]
        /// The PostgreSQL store's URL, to drop its schema at the end.
        let postgres: URL?

        init() throws {
            dir = try TemporaryDirectory("fuzz-predicate")
            let schema = try FuzzFixture.schema()
            reference = MemoryStore(url: nil, metadata: FuzzFixture.metadata(schema, type: "memory"))
            try reference.save(StoreChanges(inserted: try FuzzFixture.records(schema)))
            var others: [(String, any PersistentStore)] = []
            for (name, backend) in [("fixture.sqlite", SQLiteStoreBackend() as any StoreBackend), ("fixture.lmdb", LMDBStoreBackend()),
                                    ("fixture.xml", XMLStoreBackend())] {
                let url = dir.path(name)
                try FuzzFixture.write(backend, at: url)
                others.append((backend.typeIdentifier, try backend.open(at: url, options: StoreProbe.readOnly, creating: nil)))
            }
            if PostgresTestServer.isAvailable {
                let url = try PostgresTestServer.shared().storeURL("fuzz")
                let backend = PostgresStoreBackend()
                try FuzzFixture.write(backend, at: url)
                others.append((backend.typeIdentifier, try backend.open(at: url, options: StoreOptions(), creating: nil)))
                postgres = url
            } else {
                postgres = nil
            }
            self.others = others
        }

        deinit {
            for (_, s) in others { try? s.close() }
            if let postgres { try? PostgresStoreBackend().destroyStore(at: postgres) }
        }
    }

    /// Arguments for the placeholders in `format`: key names for `%K`, values of the right kind for the others.
    static func arguments(for format: String, entity: Entity?) -> [StoreValue] {
        var out: [StoreValue] = []
        let bytes = Array(format.utf8)
        var i = 0
        while i + 1 < bytes.count {
            if bytes[i] == UInt8(ascii: "%") {
                switch bytes[i + 1] {
                case UInt8(ascii: "K"): out.append(.string(entity?.attributes.first?.name ?? "title"))
                case UInt8(ascii: "@"): out.append(out.count % 2 == 0 ? .string("x") : .integer64(5))
                case UInt8(ascii: "d"), UInt8(ascii: "i"), UInt8(ascii: "u"), UInt8(ascii: "l"): out.append(.integer64(Int64(out.count)))
                case UInt8(ascii: "f"), UInt8(ascii: "g"): out.append(.double(1.5))
                default: break
                }
            }
            i += 1
        }
        return out
    }

    /// Property: a mutated predicate parses or throws ``StoreError/predicateSyntax(message:position:source:)``
    /// with a position inside the text; what parses prints a description that parses to the same predicate, and
    /// every backend's fetch agrees with the reference evaluator (same records, or all refuse).
    @Test func mutatedPredicates() throws {
        let stores = try Stores()
        let schema = stores.reference.metadata.schema
        let campaign = FuzzCampaign(target: "predicate", corpus: Self.seeds.map { Array($0.utf8) }, dialect: .predicate,
                                    maxSize: 16 << 10, ciIterations: 600, classify: FuzzErrors.store)
        var agreed = 0
        let stats = campaign.run { bytes, _ in
            let text = String(decoding: bytes, as: UTF8.self)
            let parts = text.split(separator: "|", maxSplits: 1)
            let entity = parts.count == 2 ? schema.entity(named: String(parts[0])) : nil
            let format = parts.count == 2 && entity != nil ? String(parts[1]) : text
            let predicate: FetchPredicate
            do {
                predicate = try FetchPredicate(format, arguments: Self.arguments(for: format, entity: entity))
            } catch {
                if case StoreError.predicateSyntax(_, let position, let source) = error, position < 0 || position > source.count {
                    throw FuzzViolation("error position \(position) is outside the \(source.count)-character text")
                }
                throw error
            }
            let printed = predicate.description
            let reparsed: FetchPredicate
            do { reparsed = try FetchPredicate(printed) } catch {
                throw FuzzViolation("the description \(String(reflecting: printed)) does not parse: \(error)")
            }
            guard reparsed == predicate else {
                throw FuzzViolation("the description \(String(reflecting: printed)) parses to another predicate")
            }
            if try Self.backendsAgree(predicate, entity: entity?.name ?? "Item", stores: stores) { agreed += 1 }
        }
        print("fuzz predicate: \(agreed) predicates ran on every backend with the same answer")
        #expect(stats.accepted > 0 && stats.rejectedTotal > 0, "the campaign exercised both paths: \(stats)")
        #expect(agreed > 0)
    }

    /// Runs the predicate on every store; `true` when all returned records (the same ones), `false` when all
    /// refused it; a disagreement is a ``FuzzViolation``.
    static func backendsAgree(_ predicate: FetchPredicate, entity: String, stores: Stores) throws -> Bool {
        let request = FetchRequest(entity: entity, predicate: predicate)
        let expected: Result<Set<UUID>, any Error> = Result { Set(try stores.reference.fetch(request).map(\.globalID)) }
        for (type, store) in stores.others {
            let got: Result<Set<UUID>, any Error> = Result { Set(try store.fetch(request).map(\.globalID)) }
            switch (expected, got) {
            case (.success(let a), .success(let b)) where a == b: continue
            case (.failure(let a), .failure(let b)) where a is StoreError && b is StoreError: continue
            case (_, .failure(let b)) where !(b is StoreError): throw b
            default:
                throw FuzzViolation("\(type) and the reference evaluator disagree on \(entity) where \(predicate): "
                    + "reference \(describe(expected)), \(type) \(describe(got))")
            }
        }
        if case .success = expected { return true }
        return false
    }

    static func describe(_ r: Result<Set<UUID>, any Error>) -> String {
        switch r {
        case .success(let s): "\(s.count) records"
        case .failure(let e): "error \(e)"
        }
    }
}
