import Foundation

/// storebench's command line.
struct Options {
    /// The sections over the generated library dataset, in the order they run.
    static let sections = ["convert", "copy", "upgrade", "open", "fetch", "predicate", "insert", "coredata"]
    /// The sections with a dataset of their own (not the library's source stores).
    static let ownDatasetSections: Set<String> = ["coredata"]
    /// The older store-API micro-benchmarks on a flat 8-column record (run with `--only`, and by `--smoke`).
    static let microSections = ["sqlite", "lmdb", "xml", "typed", "sync", "postgres", "folding", "aggregate", "history"]

    var sizes = [10_000, 100_000, 1_000_000]
    var only: Set<String> = []
    /// The backends the sections measure (a conversion is measured when either side is one of them).
    var types = SourceStores.types
    var smoke = false
    var runs: Int?
    var dataDirectory: URL?
    var storectl: String?
    var selfRunner = false
    var verifyUpTo = 100_000

    init(_ args: [String]) throws {
        var it = args.makeIterator()
        func value(_ a: String) throws -> String {
            guard let v = it.next() else { throw Usage.missing(a) }
            return v
        }
        while let a = it.next() {
            switch a {
            case "--smoke":
                smoke = true
                sizes = [2_000]
                runs = 1
            case "--sizes":
                let v = try value(a)
                sizes = try v.split(separator: ",").map { try Self.count(String($0), option: a) }
            case "--only":
                only = Set(try value(a).split(separator: ",").map(String.init))
                let known = Set(Self.sections + Self.microSections)
                if let bad = only.first(where: { !known.contains($0) }) { throw Usage.bad(a, bad) }
            case "--types":
                let v = try value(a)
                let wanted = v.split(separator: ",").map(String.init)
                if let bad = wanted.first(where: { !SourceStores.types.contains($0) }) { throw Usage.bad(a, bad) }
                types = SourceStores.types.filter(wanted.contains)
            case "--runs":
                let v = try value(a)
                guard let n = Int(v), n > 0 else { throw Usage.bad(a, v) }
                runs = n
            case "--data-dir":
                dataDirectory = URL(fileURLWithPath: try value(a))
            case "--storectl":
                storectl = try value(a)
            case "--runner":
                let v = try value(a)
                switch v {
                case "self": selfRunner = true
                case "storectl": selfRunner = false
                default: throw Usage.bad(a, v)
                }
            case "--verify-up-to":
                verifyUpTo = try Self.count(try value(a), option: a)
            case "-h", "--help":
                throw Usage.help
            default:
                throw Usage.unknown(a)
            }
        }
        if sizes.isEmpty { throw Usage.bad("--sizes", "(empty)") }
    }

    /// A record count: `100000`, `1e5`, `10^5` or `100k` / `1M`.
    static func count(_ text: String, option: String) throws -> Int {
        let t = text.trimmingCharacters(in: .whitespaces).lowercased()
        var n: Double?
        if t.hasPrefix("10^"), let e = Double(t.dropFirst(3)) { n = pow(10, e) }
        else if t.hasSuffix("k"), let v = Double(t.dropLast()) { n = v * 1e3 }
        else if t.hasSuffix("m"), let v = Double(t.dropLast()) { n = v * 1e6 }
        else { n = Double(t) }
        guard let n, n >= 1, n <= 1e9 else { throw Usage.bad(option, text) }
        return Int(n)
    }

    func wants(_ section: String) -> Bool {
        if only.isEmpty { return Self.sections.contains(section) || (smoke && Self.microSections.contains(section)) }
        return only.contains(section)
    }

    /// Median of this many runs for a size (unless `--runs`): 9 up to 10⁴ records, whose runs last tens of
    /// milliseconds and swing with whatever else the machine runs, 3 up to 10⁵, 1 above.
    func runs(for size: Int) -> Int { runs ?? (size <= 10_000 ? 9 : size <= 100_000 ? 3 : 1) }
}

enum Usage: Error, CustomStringConvertible {
    case missing(String), unknown(String), bad(String, String), help

    var description: String {
        switch self {
        case .missing(let a): "\(a) needs a value\n\(Self.text)"
        case .unknown(let a): "unknown argument \(a)\n\(Self.text)"
        case .bad(let a, let v): "\(a): bad value '\(v)'\n\(Self.text)"
        case .help: Self.text
        }
    }

    static let text = """
        usage: storebench [--smoke] [--sizes N,N,...] [--only SECTION,...] [--types TYPE,...] [--runs K] [--data-dir DIR]
                          [--runner storectl|self] [--storectl PATH] [--verify-up-to N]

          --smoke            tiny size (2,000 records), every section once, every result checked; exits 1 on a wrong result
          --sizes            record counts (default 10^4,10^5,10^6; also 1e5, 100k, 1M)
          --only             sections: \(Options.sections.joined(separator: ",")) (default: all of these);
                             micro-benchmarks of the store API on a flat record: \(Options.microSections.joined(separator: ","))
          --types            backends to measure: \(SourceStores.types.joined(separator: ",")) (default: all); a conversion
                             is measured when either side is one of them
          --runs K           median of K runs (default 9 up to 10^4 records, 3 up to 10^5, 1 above)
          --data-dir DIR     keep the generated source stores in DIR and reuse them in later runs
          --runner           our side of convert/copy: the storectl binary beside storebench (default when built),
                             or storebench's own worker calling the same StoreOperations API
          --verify-up-to N   compare every converted/copied store with its source record by record up to N
                             records (default 10^5); above that, per-entity counts
        Build with -c release for figures worth quoting.
        """
}
