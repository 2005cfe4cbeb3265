import Foundation
import StoreTestSupport

/// How big a fuzz run is, read from the environment so the same tests do the short CI run and the long run.
///
/// - `STORE_FUZZ_SEED`: the run's seed (decimal or `0x` hex). Default: a fixed seed, so CI runs are repeatable.
/// - `STORE_FUZZ_ITERATIONS`: inputs per target, replacing every target's CI default;
///   `STORE_FUZZ_ITERATIONS_<TARGET>` (e.g. `STORE_FUZZ_ITERATIONS_LMDB_FILE`) for one target.
/// - `STORE_FUZZ_START`: the first input index (with `STORE_FUZZ_ITERATIONS=1`, replays one input).
/// - `STORE_FUZZ_HANG_SECONDS`: one input running longer than this is a hang: the process aborts, naming it.
///   Default 120 (generous: debug builds on a loaded machine).
/// - `STORE_FUZZ_MEMORY_MB`: the most one input may add to the process's peak resident memory. Default 1024.
/// - `STORE_FUZZ_DIR`: where inputs being tried and failing inputs are kept. Default: a folder in the temporary
///   directory; the folder of failing inputs survives the run.
enum FuzzConfiguration {
    static let environment = ProcessInfo.processInfo.environment

    static let seed: UInt64 = {
        guard let text = environment["STORE_FUZZ_SEED"] else { return 0x5EED_0009 }
        if text.hasPrefix("0x"), let v = UInt64(text.dropFirst(2), radix: 16) { return v }
        return UInt64(text) ?? SeededGenerator.fnv1a(text)
    }()

    /// Inputs to try for `target` (CI default `ciDefault`): `STORE_FUZZ_ITERATIONS_<TARGET>` (the target's name
    /// upper-cased, `-` as `_`, e.g. `STORE_FUZZ_ITERATIONS_LMDB_FILE`), else `STORE_FUZZ_ITERATIONS`.
    static func iterations(target: String, ciDefault: Int) -> Int {
        let specific = "STORE_FUZZ_ITERATIONS_" + target.uppercased().replacingOccurrences(of: "-", with: "_")
        return environment[specific].flatMap(Int.init) ?? environment["STORE_FUZZ_ITERATIONS"].flatMap(Int.init) ?? ciDefault
    }

    /// Whether the counts were set by hand (a long run): targets then skip nothing for time.
    static var isLongRun: Bool { environment["STORE_FUZZ_ITERATIONS"] != nil }

    static let start: Int = environment["STORE_FUZZ_START"].flatMap(Int.init) ?? 0
    static let hangSeconds: Double = environment["STORE_FUZZ_HANG_SECONDS"].flatMap(Double.init) ?? 120
    static let memoryGrowthLimit: Int = (environment["STORE_FUZZ_MEMORY_MB"].flatMap(Int.init) ?? 1024) << 20

    /// The root of this run's working files.
    static let directory: URL = {
        if let dir = environment["STORE_FUZZ_DIR"] { return URL(fileURLWithPath: dir) }
        return FileManager.default.temporaryDirectory.appendingPathComponent("storeapi-fuzz")
    }()

    /// Where failing inputs are saved (kept after the run).
    static var failureDirectory: URL { directory.appendingPathComponent("failures") }
}
