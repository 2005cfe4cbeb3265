import Foundation
import StoreTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The kill-point series' use of the shared SplitMix64 generator.
extension SeededGenerator {
    /// A generator for one series, derived from the run's seed and the series' name (a failing kill point can be
    /// replayed with its seed).
    init(series: String) {
        var seed = RunSize.seed
        for byte in series.utf8 { seed = (seed ^ UInt64(byte)) &* 0x100_0000_01B3 }
        self.init(seed: seed)
    }
}

/// How many kill points each series tries: a CI-sized default; `STORE_CRASH_POINTS` sets the timed points of a full
/// run (and then every syscall boundary is tried too), `STORE_CRASH_SYSCALL_POINTS` the syscall points.
enum RunSize {
    static let crashPoints: Int = number("STORE_CRASH_POINTS") ?? 2

    static let syscallPoints: Int = number("STORE_CRASH_SYSCALL_POINTS") ?? (number("STORE_CRASH_POINTS") != nil ? Int.max : 2)

    static func number(_ name: String) -> Int? {
        guard let text = ProcessInfo.processInfo.environment[name], let n = Int(text), n > 0 else { return nil }
        return n
    }

    /// `STORE_CRASH_SEED` replays a run; the default is fixed, so CI runs are reproducible too.
    static let seed: UInt64 = {
        if let text = ProcessInfo.processInfo.environment["STORE_CRASH_SEED"], let n = UInt64(text) { return n }
        return 0x5EED_0009
    }()
}
