import Foundation
import StoreAPI
import StoreTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A property an input broke that is not a thrown error of the code under test (a round trip that differs, an
/// error that does not name its file, …). Never an accepted outcome.
struct FuzzViolation: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// What one campaign did, for the report and for the tests' own checks.
struct FuzzStats: CustomStringConvertible {
    var target: String
    var tried = 0
    var accepted = 0
    var rejected: [String: Int] = [:]
    var failures = 0
    var largestInput = 0
    var seconds = 0.0

    var rejectedTotal: Int { rejected.values.reduce(0, +) }

    var description: String {
        let kinds = rejected.sorted { $0.value > $1.value }.prefix(8).map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        return "fuzz \(target): seed 0x\(String(FuzzConfiguration.seed, radix: 16)), inputs \(tried) "
            + "(from #\(FuzzConfiguration.start)), accepted \(accepted), rejected \(rejectedTotal) [\(kinds)], "
            + "failures \(failures), largest input \(largestInput) bytes, \(String(format: "%.1f", seconds)) s"
    }
}

/// Runs one target over mutated corpus inputs, in process: every input either works or fails with an error the
/// target documents; anything else — another error type, a ``FuzzViolation``, too much memory — is recorded as
/// a test issue with the input saved for replay. A crash ends the whole test run (the point); the input being
/// tried is always on disk (``currentInputURL``), and a hang is turned into an abort by the ``Watchdog``.
struct FuzzCampaign {
    let target: String
    let corpus: [[UInt8]]
    let mutator: Mutator
    let iterations: Int
    /// A short label for an accepted error (statistics), or `nil` for an error the target must never throw.
    let classify: (any Error) -> String?
    /// Percent of inputs that are corpus members left as they are (the valid path keeps being exercised).
    var unmutatedPercent = 3
    /// Failures that are known, open bugs (in code another engineer owns): returns why, and the failure is then
    /// recorded as a known issue (still listed in the output, with the input saved) instead of failing the run.
    var knownIssue: ((String) -> String?)?

    init(target: String, corpus: [[UInt8]], dialect: Dialect, maxSize: Int? = nil, gentle: Bool = false, ciIterations: Int,
         classify: @escaping (any Error) -> String?) {
        self.target = target
        self.corpus = corpus
        self.mutator = Mutator(dialect: dialect, corpus: corpus, maxSize: maxSize, gentle: gentle)
        self.iterations = FuzzConfiguration.iterations(target: target, ciDefault: ciIterations)
        self.classify = classify
    }

    /// The input with index `index`: the same for the same seed, wherever and whenever it is generated.
    func input(_ index: Int) -> [UInt8] {
        var rng = SeededGenerator(seed: FuzzConfiguration.seed, target: target, index: index)
        let base = rng.pick(corpus)
        if rng.percent(unmutatedPercent) { return base }
        return mutator.mutate(base, rng: &rng)
    }

    var currentInputURL: URL { FuzzConfiguration.directory.appendingPathComponent("current/\(target).input") }

    /// Runs every input through `body`, which gets the input and its index.
    @discardableResult
    func run(sourceLocation: SourceLocation = #_sourceLocation, _ body: (_ input: [UInt8], _ index: Int) throws -> Void) -> FuzzStats {
        var stats = FuzzStats(target: target)
        guard !corpus.isEmpty else {
            Issue.record("fuzz \(target): empty corpus", sourceLocation: sourceLocation)
            return stats
        }
        let began = Date()
        let current = currentInputURL
        try? FileManager.default.createDirectory(at: current.deletingLastPathComponent(), withIntermediateDirectories: true)
        let indexURL = current.deletingPathExtension().appendingPathExtension("index")
        defer {
            try? FileManager.default.removeItem(at: current)
            try? FileManager.default.removeItem(at: indexURL)
        }
        let first = FuzzConfiguration.start
        for index in first..<(first + iterations) {
            let data = input(index)
            stats.tried += 1
            stats.largestInput = max(stats.largestInput, data.count)
            // Breadcrumbs: if the process dies on this input, it is on disk.
            try? Data(data).write(to: current)
            try? Data("seed 0x\(String(FuzzConfiguration.seed, radix: 16)) index \(index)\n".utf8).write(to: indexURL)
            let peakBefore = Self.peakResidentBytes()
            let token = Watchdog.shared.begin("fuzz \(target) input #\(index) (seed 0x\(String(FuzzConfiguration.seed, radix: 16)); saved at \(current.path))")
            var failure: String?
            do {
                try body(data, index)
                stats.accepted += 1
            } catch {
                if let label = classify(error) {
                    stats.rejected[label, default: 0] += 1
                } else {
                    failure = "unexpected error \(type(of: error)): \(error)"
                }
            }
            Watchdog.shared.end(token)
            let growth = Self.peakResidentBytes() - peakBefore
            if growth > FuzzConfiguration.memoryGrowthLimit {
                failure = (failure.map { $0 + "; " } ?? "") + "peak memory grew by \(growth >> 20) MB on this input"
            }
            if let failure { record(failure, data: data, index: index, stats: &stats, sourceLocation: sourceLocation) }
        }
        stats.seconds = Date().timeIntervalSince(began)
        print(stats.description)
        return stats
    }

    private func record(_ failure: String, data: [UInt8], index: Int, stats: inout FuzzStats, sourceLocation: SourceLocation) {
        stats.failures += 1
        guard stats.failures <= 10 else { return }
        let dir = FuzzConfiguration.failureDirectory
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("\(target)-seed\(String(FuzzConfiguration.seed, radix: 16))-\(index).bin")
        try? Data(data).write(to: file)
        let message: Comment = """
            fuzz \(target) input #\(index): \(failure)
            input saved at \(file.path); replay: STORE_FUZZ_SEED=0x\(String(FuzzConfiguration.seed, radix: 16)) \
            STORE_FUZZ_START=\(index) STORE_FUZZ_ITERATIONS=1
            """
        if let why = knownIssue?(failure) {
            withKnownIssue(Comment(rawValue: why), isIntermittent: true) {
                Issue.record(message, sourceLocation: sourceLocation)
            }
        } else {
            Issue.record(message, sourceLocation: sourceLocation)
        }
    }

    /// The process's peak resident set so far, in bytes.
    static func peakResidentBytes() -> Int {
        var usage = rusage()
        #if os(Linux)
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        return usage.ru_maxrss * 1024
    }
}

/// Labels for the documented error types.
enum FuzzErrors {
    /// `corruptStore`, `io`, … for a ``StoreError``; `nil` for anything else.
    static func store(_ error: any Error) -> String? {
        guard let e = error as? StoreError else { return nil }
        return caseName(e)
    }

    /// `schema.unreadableModel`, … for a ``SchemaError``.
    static func schema(_ error: any Error) -> String? {
        guard let e = error as? SchemaError else { return nil }
        return "schema." + caseName(e)
    }

    /// An ``InterchangeError`` (a bad NDJSON file), or a ``StoreError`` from the store being imported into.
    static func interchange(_ error: any Error) -> String? {
        if error is InterchangeError { return "interchange" }
        return store(error)
    }

    static func caseName(_ value: Any) -> String {
        let mirror = Mirror(reflecting: value)
        if let label = mirror.children.first?.label { return label }
        return String(describing: value).split(separator: " ").first.map(String.init) ?? "?"
    }
}
