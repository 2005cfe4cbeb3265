import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The package's files, found from this source file's location.
enum PackagePaths {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let libraryModel = root.appendingPathComponent("Samples/Library.xcdatamodeld")
    static let libraryData = root.appendingPathComponent("Samples/library.ndjson")
}

/// The two executables the tests drive, built next to the test bundle (both are dependencies of this target).
enum Tools {
    static let storectl = find("storectl", environment: "STORECTL")
    static let storestress = find("storestress", environment: "STORESTRESS")

    static func find(_ name: String, environment key: String) -> URL? {
        let fm = FileManager.default
        if let explicit = ProcessInfo.processInfo.environment[key], fm.isExecutableFile(atPath: explicit) {
            return URL(fileURLWithPath: explicit)
        }
        var candidates: [URL] = []
        let bundle = Bundle.main.bundleURL
        candidates += [bundle.appendingPathComponent(name), bundle.deletingLastPathComponent().appendingPathComponent(name)]
        for b in Bundle.allBundles {
            candidates.append(b.bundleURL.deletingLastPathComponent().appendingPathComponent(name))
        }
        if let first = CommandLine.arguments.first {
            let exe = URL(fileURLWithPath: first).resolvingSymlinksInPath()
            candidates.append(exe.deletingLastPathComponent().appendingPathComponent(name))
            // macOS: …/debug/Package.xctest/Contents/MacOS/Package
            candidates.append(exe.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent(name))
        }
        candidates.append(PackagePaths.root.appendingPathComponent(".build/debug/\(name)"))
        return candidates.first { fm.isExecutableFile(atPath: $0.path) }
    }

    static func require(_ tool: URL?, _ name: String) throws -> URL {
        try #require(tool, "\(name) not found next to the test bundle; build it (swift build) or set \(name.uppercased())")
    }
}

/// A child process with its output captured in files, which a test can wait for, read while it runs, and kill.
final class Child {
    let process = Process()
    let name: String
    private let outURL: URL
    private let errURL: URL

    /// Starts `executable` with `arguments`; standard input is empty.
    init(_ executable: URL, _ arguments: [String], directory: URL? = nil) throws {
        name = ([executable.lastPathComponent] + arguments).joined(separator: " ")
        let tag = UUID().uuidString
        outURL = FileManager.default.temporaryDirectory.appendingPathComponent("reliability-out-\(tag)")
        errURL = FileManager.default.temporaryDirectory.appendingPathComponent("reliability-err-\(tag)")
        FileManager.default.createFile(atPath: outURL.path, contents: nil)
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        process.executableURL = executable
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    /// Runs `storectl` to the end.
    static func storectl(_ arguments: [String]) throws -> Child {
        let child = try Child(try Tools.require(Tools.storectl, "storectl"), arguments)
        child.wait()
        return child
    }

    /// Starts `storestress`.
    static func storestress(_ arguments: [String]) throws -> Child {
        try Child(try Tools.require(Tools.storestress, "storestress"), arguments)
    }

    deinit {
        if process.isRunning { killProcess(process.processIdentifier); process.waitUntilExit() }
        try? FileManager.default.removeItem(at: outURL)
        try? FileManager.default.removeItem(at: errURL)
    }

    var isRunning: Bool { process.isRunning }
    var stdout: String { (try? String(contentsOf: outURL, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOf: errURL, encoding: .utf8)) ?? "" }
    /// The exit status (meaningful after ``wait()`` when not ``killedBySignal``).
    var status: Int32 { process.terminationStatus }
    var killedBySignal: Bool { process.terminationReason == .uncaughtSignal }

    func wait() { process.waitUntilExit() }

    /// Waits up to `timeout` seconds; returns whether the process ended.
    func waitUntilExit(timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > deadline { return false }
            usleep(10_000)
        }
        process.waitUntilExit()
        return true
    }

    /// Sends SIGKILL if the process still runs, and reaps it. Returns whether the signal killed it (`false`: it
    /// had already finished on its own).
    @discardableResult
    func kill() -> Bool {
        if process.isRunning { killProcess(process.processIdentifier) }
        process.waitUntilExit()
        return killedBySignal
    }

    /// Waits until standard output contains `text` (true) or the process ends or `timeout` passes (false).
    func waitForOutput(_ text: String, timeout: Double = 60) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if stdout.contains(text) { return true }
            if !process.isRunning { return stdout.contains(text) }
            usleep(5_000)
        }
        return false
    }

    /// A description for failure messages.
    var summary: String {
        "\(name): \(killedBySignal ? "killed" : "exit \(status)")\n  stdout: \(stdout.suffix(400))\n  stderr: \(stderr.suffix(800))"
    }
}

/// SIGKILL, spelled for both C libraries (`kill` alone is shadowed by ``Child/kill()`` inside the class).
func killProcess(_ pid: Int32) {
    #if canImport(Glibc)
    _ = Glibc.kill(pid, SIGKILL)
    #else
    _ = Darwin.kill(pid, SIGKILL)
    #endif
}

/// Whether a process with this id exists.
func processExists(_ pid: Int32) -> Bool {
    #if canImport(Glibc)
    return Glibc.kill(pid, 0) == 0
    #else
    return Darwin.kill(pid, 0) == 0
    #endif
}

/// A reproducible random number generator (SplitMix64), so a failing kill point can be replayed with its seed.
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    /// A generator for one series, derived from the run's seed and the series' name.
    init(series: String) {
        var seed = RunSize.seed
        for byte in series.utf8 { seed = (seed ^ UInt64(byte)) &* 0x100_0000_01B3 }
        self.init(seed: seed)
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
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
