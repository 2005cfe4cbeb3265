import Foundation
import LMDBBackend
import SQLiteBackend
import StoreAPI
import XMLBackend

// storebench — our figures beside the engines' own, measured in the same run.
//
//   storebench                 full run (10⁴, 10⁵, 10⁶ records)
//   storebench --smoke         tiny sizes, every section once (CI)
//   storebench --sizes 10000,100000 --only sqlite
//
// Build with -c release for figures worth quoting.

struct Options {
    var sizes = [10_000, 100_000, 1_000_000]
    var only: Set<String> = []
    var smoke = false

    init(_ args: [String]) throws {
        var it = args.makeIterator()
        while let a = it.next() {
            switch a {
            case "--smoke":
                smoke = true
                sizes = [2_000]
            case "--sizes":
                guard let v = it.next() else { throw Usage.missing(a) }
                sizes = v.split(separator: ",").compactMap { Int($0) }
            case "--only":
                guard let v = it.next() else { throw Usage.missing(a) }
                only = Set(v.split(separator: ",").map(String.init))
            case "-h", "--help":
                throw Usage.help
            default:
                throw Usage.unknown(a)
            }
        }
    }

    func wants(_ section: String) -> Bool { only.isEmpty || only.contains(section) }
}

enum Usage: Error, CustomStringConvertible {
    case missing(String), unknown(String), help
    var description: String {
        switch self {
        case .missing(let a): "\(a) needs a value"
        case .unknown(let a): "unknown argument \(a)"
        case .help: "usage: storebench [--smoke] [--sizes N,N,...] [--only sqlite,lmdb,xml]"
        }
    }
}

BackendRegistry.shared.register(SQLiteStoreBackend())
BackendRegistry.shared.register(LMDBStoreBackend())
BackendRegistry.shared.register(XMLStoreBackend())

do {
    let options = try Options(Array(CommandLine.arguments.dropFirst()))
    #if DEBUG
    print("note: debug build; run with -c release for meaningful figures")
    #endif
    var failed = false
    for n in options.sizes {
        if options.wants("sqlite") {
            failed = !(try SQLiteSection.run(count: n)) || failed
            failed = !(try runSQLiteBenchmark(count: n)) || failed
        }
        if options.wants("lmdb") { failed = !(try runLMDBBenchmark(count: n)) || failed }
        if options.wants("xml") { runXMLBenchmark(count: n) }
    }
    if failed {
        print("\nsome checks failed")
        exit(1)
    }
} catch let usage as Usage {
    print(usage)
    if case .help = usage { exit(0) }
    exit(2)
} catch {
    print("storebench: \(error)")
    exit(2)
}
