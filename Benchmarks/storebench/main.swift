import CoreDataBackend
import Foundation
import LMDBBackend
import PostgresBackend
import SQLiteBackend
import StoreAPI
import XMLBackend

// storebench — our figures beside the engines' own, measured in the same run, on the same generated data.
//
//   storebench                          full run (10⁴, 10⁵, 10⁶ records)
//   storebench --smoke                  tiny size, every section once, every result checked (CI)
//   storebench --sizes 1e5 --only convert,copy
//
// Build with -c release for figures worth quoting.

// Line-buffered even into a file or pipe, so a long run shows its progress as it goes. (C's `stdout` global is
// not concurrency-safe to name in Swift 6, so it is looked up.)
if let symbol = dlsym(dlopen(nil, RTLD_NOW), "stdout"),
   let standardOutput = symbol.assumingMemoryBound(to: UnsafeMutablePointer<FILE>?.self).pointee {
    setvbuf(standardOutput, nil, _IOLBF, 0)
}

// The process setting storectl makes (SQLite's recommended one): the references measured in this process get it too.
SQLiteStoreBackend.disableMemoryStatistics()
BackendRegistry.shared.register(SQLiteStoreBackend())
BackendRegistry.shared.register(LMDBStoreBackend())
BackendRegistry.shared.register(XMLStoreBackend())
BackendRegistry.shared.register(CoreDataStoreBackend())
BackendRegistry.shared.register(PostgresStoreBackend())

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--worker" { Worker.run(Array(arguments.dropFirst())) }

/// Runs the sections for every size and prints the table; returns the failures.
func runBenchmarks(_ options: Options) throws -> [String] {
    #if DEBUG
    let build = "debug"
    #else
    let build = "release"
    #endif
    // As the README runs it: scripts/bench.sh builds storectl (timed beside the engines' tools) as it is distributed.
    // scripts/bench.sh passes the storectl it built; the command that reproduces the run leaves that to it.
    var given = arguments
    if build == "release", let at = given.firstIndex(of: "--storectl"), at + 1 < given.count { given.removeSubrange(at...at + 1) }
    let reproduce = (build == "release" ? "scripts/bench.sh " : "swift run --package-path Benchmarks storebench ") + given.joined(separator: " ")
    print("storebench (\(build) build) — reproduce with: \(reproduce)")
    if build == "debug" { print("note: debug build; run with -c release for meaningful figures") }
    let product = ProductRunner.find(explicit: options.storectl, preferSelf: options.selfRunner)
    print("our side of convert/copy: \(product.description)")
    if let startup = product.startup() {
        print(String(format: "storectl start-up and exit alone: %.1f ms CPU, %.1f ms wall (included in each convert/copy figure)",
                     startup.cpu * 1000, startup.wall * 1000))
    }

    let fm = FileManager.default
    let work = try Measure.temporaryDirectory("run")
    defer { try? fm.removeItem(at: work) }
    let dataRoot = options.dataDirectory ?? work.appendingPathComponent("data")
    let table = ResultsTable()
    var failures: [String] = []
    var peaksBySize: [(Int, [String: ConvertSection.Peak])] = []

    for size in options.sizes {
        let dataset = try Dataset(total: size)
        let datasetSections = Options.sections.filter { !Options.ownDatasetSections.contains($0) && options.wants($0) }
        if !datasetSections.isEmpty {
            let dir = SourceStores.directory(root: dataRoot, total: dataset.total)
            print("\n# \(dataset.total) records: \(dataset.authors) authors, \(dataset.tags) tags, \(dataset.books) books, \(dataset.reviews) reviews")
            table.begin("source stores, \(ResultRow.count(dataset.total)) records (generated through each backend's store API; not a product figure)")
            for type in SourceStores.types {
                let seconds = try SourceStores.ensure(dataset, type: type, in: dir)
                let bytes = SourceStores.size(SourceStores.url(dir, type), type: type)
                var row = ResultRow.timed("build source (\(type))", records: dataset.total, ours: seconds ?? Timing(cpu: 0, wall: 0), reference: nil,
                                          referenceName: String(format: "%.1f MB on disk", Double(bytes) / 1e6))
                if seconds == nil {
                    row.ours = "reused"
                    row.rate = ""
                    row.oursWall = ""
                }
                table.add(row)
            }
            let scratch = work.appendingPathComponent("scratch-\(dataset.total)")
            try fm.createDirectory(at: scratch, withIntermediateDirectories: true)
            defer { try? fm.removeItem(at: scratch) }
            let env = BenchEnvironment(dataset: dataset, sourceDirectory: dir, scratch: scratch, runs: options.runs(for: size),
                                       product: product, table: table, verifyUpTo: options.smoke ? .max : options.verifyUpTo,
                                       types: options.types)
            if options.smoke || dataset.total <= 10_000 {
                // The three sources must be the same logical store, or every comparison below is meaningless.
                env.verify("source lmdb vs sqlite", copy: env.source("lmdb"), against: "sqlite", comparesMetadata: false)
                env.verify("source xml vs sqlite", copy: env.source("xml"), against: "sqlite", comparesMetadata: false)
            }

            if options.wants("convert") {
                table.begin("convert, \(env.label) records (each run a fresh process beside a reference run; target at 10⁶ records ≤1.5× reference read + write, peak RSS ≤100 MB)")
                peaksBySize.append((dataset.total, try ConvertSection.run(env)))
            }
            if options.wants("copy") {
                table.begin("same-type copy, \(env.label) records (whole processes; target ≤1.2× the engine's copy)")
                try CopySection.run(env)
            }
            if options.wants("upgrade") {
                table.begin("upgrade to a schema with one more optional attribute, \(env.label) records (whole processes; target at 10⁶ records for stores rewritten ≤1.2× a streamed same-type convert)")
                try UpgradeSection.run(env)
            }
            if options.wants("open") {
                table.begin("open a store + fetch its first book, \(env.label) records (fresh process)")
                try ContextSections.open(env)
            }
            if options.wants("fetch") {
                table.begin("fetch by object ID through a context, \(env.label) records")
                try ContextSections.fetchByID(env)
            }
            if options.wants("predicate") {
                table.begin("predicate fetch through a context: \(ContextSections.predicate)")
                try ContextSections.predicateFetch(env, expected: ContextSections.expectedMatches(dataset))
            }
            if options.wants("insert") {
                table.begin("insert the dataset through a context, \(env.label) records")
                try ContextSections.insert(env, referenceWrites: try ConvertSection.referenceWrites(env))
            }
            failures += env.failures
        }

        // The store-API micro-benchmarks on a flat record (their own tables).
        if options.wants("sqlite") {
            if !(try SQLiteSection.run(count: size)) { failures.append("sqlite micro-benchmark check") }
            if !(try runSQLiteBenchmark(count: size)) { failures.append("sqlite store-API check") }
        }
        if options.wants("lmdb"), !(try runLMDBBenchmark(count: size, runs: options.runs(for: size))) { failures.append("lmdb micro-benchmark check") }
        if options.wants("xml") { runXMLBenchmark(count: size) }
        // A server of its own, started and stopped by the section (skipped, saying so, without PostgreSQL's binaries).
        if options.wants("postgres") {
            failures += try PostgresSection.run(count: size, runs: options.runs(for: size), table: table, smoke: options.smoke)
        }
        // Its sizes are GRDB's own performance tests', whatever the run's sizes: it runs once.
        if options.wants("typed"), size == options.sizes.first,
           !(try TypedSection.run(insertCount: options.smoke ? size : 50_000, fetchCount: options.smoke ? size : 200_000,
                                  runs: options.smoke ? 1 : 3)) {
            failures.append("typed models check")
        }
        // Sync through a PostgreSQL server the section starts; its own store of flat records, at each size up to 10^5.
        if options.wants("sync"), options.smoke || size <= 100_000,
           !(try SyncSection.run(count: size, runs: options.runs(for: size), smoke: options.smoke)) {
            failures.append("sync check")
        }
        if options.wants("folding"), size == options.sizes.first,
           !(try FoldingSection.run(count: options.smoke ? size : 100_000, runs: options.smoke ? 1 : 3)) {
            failures.append("folding section check")
        }
        if options.wants("aggregate"), size == options.sizes.first,
           !(try AggregateSection.run(count: options.smoke ? size : 100_000, runs: options.smoke ? 1 : 3)) {
            failures.append("aggregate section check")
        }
        // History tracking's cost on saves and reads; 10^5 changes read, whatever the run's sizes: it runs once.
        if options.wants("history"), size == options.sizes.first,
           !(try HistorySection.run(changes: options.smoke ? size : 100_000, saves: options.smoke ? 20 : 500,
                                    runs: options.smoke ? 1 : 5)) {
            failures.append("history section check")
        }
    }

    if options.wants("coredata") {
        failures += try CoreDataSection.run(sizes: options.sizes, dataRoot: dataRoot, scratch: work, runs: options.runs(for:),
                                            table: table, verifyUpTo: options.smoke ? .max : options.verifyUpTo)
    }

    // Peak RSS of each conversion at the largest size over the next largest: flat means streaming.
    if peaksBySize.count >= 2 {
        let (largeSize, large) = peaksBySize[peaksBySize.count - 1]
        let (smallSize, small) = peaksBySize[peaksBySize.count - 2]
        table.begin("peak RSS flatness, \(ResultRow.count(smallSize)) → \(ResultRow.count(largeSize)) records (target ≤1.2×)")
        for (name, peak) in large.sorted(by: { $0.key < $1.key }) {
            guard let before = small[name] else { continue }
            var row = ResultRow.flatness("RSS growth " + name, small: (smallSize, before.rss), large: (largeSize, peak.rss), limit: 1.2)
            row.referenceName += String(format: "; anon (heap) %.1f → %.1f MB (%.2f×)", Double(before.anon) / 1e6,
                                        Double(peak.anon) / 1e6, Double(peak.anon) / Double(max(1, before.anon)))
            table.add(row)
        }
    }

    if !table.rows.isEmpty {
        print("\n# Results (\(build) build; medians; times are CPU seconds (user + system) and ratios compare them — wall")
        print("# clock alongside; ours/ref < 1 means faster than the reference)")
        table.printFinal()
    }
    print("\nreproduce with: \(reproduce)")
    return failures
}

do {
    let options = try Options(arguments)
    let failures = try runBenchmarks(options)
    if !failures.isEmpty {
        print("\n\(failures.count) check(s) failed:")
        for f in failures { print("  - \(f)") }
        exit(1)
    }
} catch let usage as Usage {
    print(usage)
    if case .help = usage { exit(0) }
    exit(2)
} catch {
    print("storebench: \(error)")
    exit(1)
}
