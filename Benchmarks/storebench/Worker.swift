import Foundation
@_spi(BackendKit) import StoreAPI

/// The hidden `--worker <kind> …` modes: each measured piece of work runs in a fresh child process (see
/// ``ChildProcess``) so its peak memory is its own, and reports `RESULT seconds=… …` on standard output.
///
/// - `convert SRC DST TYPE` / `copy SRC DST`: our conversion and same-type copy, exactly as `storectl convert` and
///   `storectl copy` do them (``StoreOperations/copyStore(from:sourceType:to:type:options:)`` with a progress
///   handler), the source's type detection included in the timed region; used when the `storectl` binary is not
///   built beside this one, and for the copy section's library-call rows.
/// - `upgrade STORE MODEL`: our upgrade to the JSON schema MODEL (as `storectl upgrade`).
/// - `convert-streamed SRC DST TYPE`: a same-type conversion record by record (no fast copy), the upgrade's reference.
/// - `ref-read TYPE PATH`: the engine's reference read of a whole store (`coredata`: its rows and every to-many
///   from its members' side, ``RefCoreData``).
/// - `ref-write TYPE FROM DST`: captures the store FROM (untimed), then times the engine writing the same content
///   to DST (`coredata`: SQLite with the Core Data backend's connection settings).
/// - `open TYPE PATH` / `ref-open TYPE PATH`: opening a store and fetching its first book, ours and the engine's.
/// - `pg-saves URL NAME SAVES`: one of the `postgres` section's concurrent writers (``PostgresSection/worker(_:)``).
/// - `coredata-open PATH`: opening a Core Data store read-only and reading its book with key 1 (timed in process).
/// - `noop`: nothing; timed as a whole process, what a worker's start-up and exit cost on their own.
enum Worker {
    static func run(_ args: [String]) -> Never {
        do {
            let fields = try perform(args)
            print("RESULT " + fields.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " "))
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("worker \(args.joined(separator: " ")): \(error)\n".utf8))
            exit(1)
        }
    }

    private struct UsageError: Error, CustomStringConvertible {
        let description: String
    }

    private static func perform(_ args: [String]) throws -> [String: String] {
        guard let kind = args.first else { throw UsageError(description: "missing worker kind") }
        let a = Array(args.dropFirst())
        func arg(_ i: Int) throws -> String {
            guard i < a.count else { throw UsageError(description: "\(kind): missing argument \(i + 1)") }
            return a[i]
        }
        func seconds(_ t: Timing, _ extra: [String: String] = [:]) -> [String: String] {
            extra.merging(["seconds": String(format: "%.6f", t.wall), "cpu": String(format: "%.6f", t.cpu)]) { $1 }
        }
        switch kind {
        case "pg-saves":
            return try PostgresSection.worker(a)
        case "noop":
            return [:]
        case "convert", "copy":
            let src = URL(fileURLWithPath: try arg(0))
            let dst = URL(fileURLWithPath: try arg(1))
            let operations = StoreOperations()
            let destinationType = kind == "copy" ? nil : try arg(2)
            var records = 0
            let (_, s) = try Measure.timing {
                AtomicFile.removeStaleStaging(near: dst)
                let sourceType = try operations.backend(ofStoreAt: src).typeIdentifier
                try operations.copyStore(from: src, sourceType: sourceType, to: dst, type: destinationType ?? sourceType,
                                         options: .init(progress: { records = max(records, $0.recordsDone) }))
            }
            return seconds(s, ["records": String(records)])
        case "upgrade":
            let store = URL(fileURLWithPath: try arg(0))
            let (_, s) = try Measure.timing {
                let schema = try Schema(jsonData: Data(contentsOf: URL(fileURLWithPath: try arg(1))))
                try StoreOperations().upgradeStore(at: store, to: schema)
            }
            return seconds(s)
        case "convert-streamed":
            let src = URL(fileURLWithPath: try arg(0))
            let dst = URL(fileURLWithPath: try arg(1))
            let (_, s) = try Measure.timing {
                try StoreOperations().copyStore(from: src, to: dst, type: try arg(2), options: .init(allowFastCopy: false))
            }
            return seconds(s)
        case "ref-read":
            let type = try arg(0)
            let path = try arg(1)
            let (sum, s) = try Measure.timing { () throws -> UInt64 in
                switch type {
                case "sqlite": try RefSQLite.read(path)
                case "coredata": try RefCoreData.read(path)
                case "lmdb": try RefLMDB.read(path)
                case "xml": try RefXML.read(path)
                default: throw UsageError(description: "unknown type \(type)")
                }
            }
            return seconds(s, ["checksum": String(sum % 1000)])
        case "ref-write":
            let type = try arg(0)
            let from = try arg(1)
            let dst = try arg(2)
            switch type {
            case "sqlite", "coredata":
                let image = try RefSQLite.capture(from)
                let (_, s) = try Measure.timing { try RefSQLite.write(image, to: dst, settings: type == "sqlite" ? .sqlite : .coredata) }
                return seconds(s, ["rows": String(image.rowCount)])
            case "lmdb":
                let image = try RefLMDB.capture(from)
                let (_, s) = try Measure.timing { try RefLMDB.write(image, to: dst) }
                return seconds(s, ["entries": String(image.entryCount)])
            case "xml":
                let image = try RefXML.capture(from)
                let (_, s) = try Measure.timing { try RefXML.write(image, to: dst) }
                return seconds(s, ["elements": String(image.elements)])
            default:
                throw UsageError(description: "unknown type \(type)")
            }
        case "open":
            let type = try arg(0)
            let url = URL(fileURLWithPath: try arg(1))
            let schema = try Dataset.makeSchema()
            let (title, s) = try Measure.timing { () throws -> String in
                let coordinator = StoreCoordinator(schema: schema)
                let loaded = try coordinator.addStore(StoreDescription(url: url, type: type, options: StoreOptions(createIfMissing: false)))
                let context = coordinator.newContext()
                let book = try context.object(with: ObjectID(storeUUID: loaded.identifier, entity: "Book", primaryKey: 1))
                return try withExtendedLifetime(context) { try book.value(forKey: "title").stringValue ?? "" }
            }
            return seconds(s, ["found": title.isEmpty ? "0" : "1"])
        case "coredata-open":
            let (found, s) = try CoreDataSection.openAndRead(try arg(0))
            return ["found": found ? "1" : "0", "seconds": String(format: "%.6f", s)]
        case "ref-open":
            let type = try arg(0)
            let path = try arg(1)
            let (found, s) = try Measure.timing { () throws -> Int in
                switch type {
                case "sqlite": try RefSQLite.fetch(path, table: "E_Book", keys: [1])
                case "lmdb": try RefLMDB.fetch(path, database: "records:Book", keys: [1])
                case "xml": try RefXML.read(path) > 0 ? 1 : 0
                default: throw UsageError(description: "unknown type \(type)")
                }
            }
            return seconds(s, ["found": String(found)])
        default:
            throw UsageError(description: "unknown worker kind \(kind)")
        }
    }
}
