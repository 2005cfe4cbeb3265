import Foundation

/// Wall-clock timing and memory readings for benchmark phases.
enum Measure {
    /// Runs `body` and returns its result with the elapsed seconds.
    static func time<T>(_ body: () throws -> T) rethrows -> (T, Double) {
        let start = DispatchTime.now().uptimeNanoseconds
        let value = try body()
        return (value, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }

    /// Runs `body` and returns its result with the CPU seconds (user + system, all threads) it took — the
    /// micro-benchmarks' measure: on a shared machine wall time mostly measures the neighbours.
    static func cpu<T>(_ body: () throws -> T) rethrows -> (T, Double) {
        let start = cpuNow()
        let value = try body()
        return (value, cpuNow() - start)
    }

    /// CPU seconds (user + system, all threads) this process has used so far.
    static func cpuNow() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    /// Runs `body` and returns its result with the CPU and wall-clock seconds it took.
    static func timing<T>(_ body: () throws -> T) rethrows -> (T, Timing) {
        let cpu = cpuNow()
        let (value, wall) = try time(body)
        return (value, Timing(cpu: cpuNow() - cpu, wall: wall))
    }

    /// The median of `values` (the mean of the middle two for an even count); 0 for none.
    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let mid = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    }

    /// Peak resident set size of this process since the last ``resetPeakRSS()``, in bytes (Linux; 0 elsewhere).
    static func peakRSS() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let kb = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
            return kb * 1024
        }
        return 0
    }

    /// Resets the kernel's peak-RSS counter, so the next reading covers one phase only.
    static func resetPeakRSS() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    /// A fresh temporary directory, removed by the caller.
    static func temporaryDirectory(_ name: String) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("storebench-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }
}

/// CPU and wall-clock seconds of one measurement. Ratios use CPU time: on a shared machine wall time mostly
/// measures the neighbours (it is printed alongside). CPU time leaves out waiting for the disk (fsync), which both
/// sides do alike.
struct Timing {
    var cpu: Double
    var wall: Double

    static func + (a: Timing, b: Timing) -> Timing { Timing(cpu: a.cpu + b.cpu, wall: a.wall + b.wall) }

    /// The median of each component.
    static func median(_ runs: [Timing]) -> Timing {
        Timing(cpu: Measure.median(runs.map(\.cpu)), wall: Measure.median(runs.map(\.wall)))
    }
}

/// One line of the results table: our figure, the reference's, and the ratio.
struct BenchRow {
    var name: String
    var count: Int
    var ours: Double
    var reference: Double?
    var referenceName: String
    var note: String = ""

    var ratio: Double? { reference.map { ours / $0 } }
}

/// Prints rows as an aligned table.
enum Report {
    static func print(_ rows: [BenchRow], title: String, unit: String = "CPU seconds") {
        Swift.print("\n## \(title) (\(unit))")
        Swift.print(pad("operation", 44) + pad("records", 10) + pad("ours", 12) + pad("rec/s", 12) + pad("reference", 34) + pad("ref", 12) + "ours/ref")
        for r in rows {
            let rate = r.ours > 0 ? Double(r.count) / r.ours : 0
            let ref = r.reference.map { String(format: "%.3fs", $0) } ?? "-"
            let ratio = r.ratio.map { String(format: "%.2f×", $0) } ?? "-"
            Swift.print(pad(r.name, 44) + pad("\(r.count)", 10) + pad(String(format: "%.3fs", r.ours), 12)
                + pad(String(format: "%.0f", rate), 12) + pad(r.referenceName, 34) + pad(ref, 12) + ratio
                + (r.note.isEmpty ? "" : "  \(r.note)"))
        }
    }

    private static func pad(_ s: String, _ n: Int) -> String {
        s.count >= n ? s + " " : s + String(repeating: " ", count: n - s.count)
    }
}
