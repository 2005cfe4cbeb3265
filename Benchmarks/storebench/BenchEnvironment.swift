import Foundation
import StoreAPI

/// What every section of one size needs: the dataset, its source stores, a scratch directory for destinations,
/// how our side runs, how many runs to take the median of, and where failures are counted.
final class BenchEnvironment {
    let dataset: Dataset
    let sourceDirectory: URL
    let scratch: URL
    let runs: Int
    let product: ProductRunner
    let table: ResultsTable
    /// Compare every destination with its source record by record up to this size (counts only above it).
    let verifyUpTo: Int
    /// The backends to measure (``Options/types``).
    let types: [String]
    private(set) var failures: [String] = []

    init(dataset: Dataset, sourceDirectory: URL, scratch: URL, runs: Int, product: ProductRunner, table: ResultsTable, verifyUpTo: Int,
         types: [String] = SourceStores.types) {
        self.dataset = dataset
        self.sourceDirectory = sourceDirectory
        self.scratch = scratch
        self.runs = runs
        self.product = product
        self.table = table
        self.verifyUpTo = verifyUpTo
        self.types = types
    }

    var total: Int { dataset.total }
    var label: String { ResultRow.count(total) }

    func source(_ type: String) -> URL { SourceStores.url(sourceDirectory, type) }

    /// A fresh path in the scratch directory (whatever was there is removed).
    func destination(_ name: String) -> URL {
        let url = scratch.appendingPathComponent(name)
        remove(url)
        return url
    }

    func remove(_ url: URL) {
        let fm = FileManager.default
        let name = url.lastPathComponent
        for entry in (try? fm.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)) ?? [] where entry.hasPrefix(name) {
            try? fm.removeItem(at: url.deletingLastPathComponent().appendingPathComponent(entry))
        }
    }

    func fail(_ message: String) {
        failures.append(message)
        print("error: \(message)")
    }

    /// Runs `body` `runs` times and returns the median of what it measured.
    func median(_ body: () throws -> Timing) rethrows -> Timing {
        var values: [Timing] = []
        for _ in 0..<runs { values.append(try body()) }
        return Timing.median(values)
    }

    /// Checks the store at `copy` against the source of `type`: every record compared (up to ``verifyUpTo``) or
    /// the per-entity counts. Records a failure when they differ.
    func verify(_ what: String, copy: URL, against type: String, comparesMetadata: Bool = true) {
        do {
            let a = try Self.openReadOnly(source(type))
            defer { try? a.close() }
            let b = try Self.openReadOnly(copy)
            defer { try? b.close() }
            if total <= verifyUpTo {
                let differences = try StoreComparison(comparesMetadata: comparesMetadata, listLimit: 5).compare(a, b)
                if !differences.isIdentical { fail("\(what): the result differs from its source:\n\(differences.summary)") }
            } else {
                for name in Dataset.entityNames {
                    let n = try b.count(FetchRequest(entity: name, includesSubentities: false))
                    if n != dataset.count(of: name) { fail("\(what): \(n) \(name) records, expected \(dataset.count(of: name))") }
                }
            }
        } catch {
            fail("\(what): cannot verify: \(error)")
        }
    }

    static func openReadOnly(_ url: URL) throws -> any PersistentStore {
        let backend = try BackendRegistry.shared.detectBackend(at: url)
        return try backend.open(at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
    }
}

/// How our side of a conversion or copy runs: the built `storectl` binary when it sits beside this one (what users
/// run), else this executable's own worker calling the same operation.
struct ProductRunner {
    let storectl: String?

    static func find(explicit: String?, preferSelf: Bool) -> ProductRunner {
        if preferSelf { return ProductRunner(storectl: nil) }
        if let explicit { return ProductRunner(storectl: explicit) }
        let beside = URL(fileURLWithPath: ChildProcess.selfExecutable).deletingLastPathComponent().appendingPathComponent("storectl").path
        return ProductRunner(storectl: FileManager.default.isExecutableFile(atPath: beside) ? beside : nil)
    }

    var description: String {
        storectl.map { "\($0) (convert/copy timed as whole processes)" }
            ?? "storebench's own worker calling StoreOperations.copyStore (storectl not built beside storebench)"
    }

    func convert(_ src: URL, _ dst: URL, type: String) throws -> ChildProcess.Outcome {
        if let storectl { return try ChildProcess.run(storectl, ["convert", src.path, dst.path, "--to", type, "--quiet"]) }
        return try ChildProcess.worker(["convert", src.path, dst.path, type])
    }

    /// Upgrades the store at `store` in place to the schema in the JSON file `model`.
    func upgrade(_ store: URL, model: URL) throws -> ChildProcess.Outcome {
        if let storectl { return try ChildProcess.run(storectl, ["upgrade", store.path, "--model", model.path, "--quiet"]) }
        return try ChildProcess.worker(["upgrade", store.path, model.path])
    }

    func copy(_ src: URL, _ dst: URL) throws -> ChildProcess.Outcome {
        if let storectl { return try ChildProcess.run(storectl, ["copy", src.path, dst.path, "--quiet"]) }
        return try ChildProcess.worker(["copy", src.path, dst.path])
    }

    /// What the runner takes to start and exit doing nothing, included in every figure it measures.
    func startup() -> Timing? {
        guard let storectl else { return nil }
        let times = (0..<3).compactMap { _ in try? ChildProcess.run(storectl, ["--help"], sampleMemory: false).timing }
        return times.isEmpty ? nil : Timing.median(times)
    }
}
