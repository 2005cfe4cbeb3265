import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs one measured piece of work in a fresh child process, so its peak memory is its own.
///
/// Peak memory is read from `/proc/<pid>/status` while the child runs: `VmHWM` (the kernel's high-water mark of
/// the child's resident set — exact whenever a sample follows the peak, since it never decreases) and the largest
/// `RssAnon` seen (anonymous memory: heap and stacks, not the file pages of an LMDB map). Not `ru_maxrss` from
/// `wait4`: on Linux a child's `ru_maxrss` also counts the *parent's* resident set at the time of `fork`/`vfork`
/// (exec records the old address space's high-water mark), so it would report this benchmark's own memory.
enum ChildProcess {
    struct Outcome {
        /// Wall-clock seconds from spawn to exit (what a user waits for).
        var seconds: Double
        /// CPU seconds (user + system) the child used, from `wait4` (exact: CPU time is not inherited).
        var cpuSeconds: Double
        /// Peak resident set size (`VmHWM`), bytes; 0 when not sampled.
        var peakRSS: Int
        /// Peak anonymous resident memory seen by sampling (`RssAnon`), bytes; 0 when not sampled.
        var peakAnon: Int
        var status: Int32
        var stdout: String
        var stderr: String

        /// The `RESULT key=value …` line a worker printed, as a dictionary.
        var result: [String: String] {
            guard let line = stdout.split(separator: "\n").last(where: { $0.hasPrefix("RESULT ") }) else { return [:] }
            var out: [String: String] = [:]
            for pair in line.dropFirst(7).split(separator: " ") {
                let kv = pair.split(separator: "=", maxSplits: 1)
                if kv.count == 2 { out[String(kv[0])] = String(kv[1]) }
            }
            return out
        }

        func double(_ key: String) -> Double? { result[key].flatMap(Double.init) }

        /// The whole process's timing.
        var timing: Timing { Timing(cpu: cpuSeconds, wall: seconds) }

        /// The timing a worker reported for its measured region (`seconds=` and `cpu=`), else the whole process's.
        var reportedTiming: Timing {
            guard let wall = double("seconds"), let cpu = double("cpu") else { return timing }
            return Timing(cpu: cpu, wall: wall)
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// This executable (to re-run as a worker).
    static var selfExecutable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// Runs `executable` with `arguments`; throws if it cannot start or exits non-zero (with its stderr).
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], sampleMemory: Bool = true) throws -> Outcome {
        let tag = UUID().uuidString
        let outPath = FileManager.default.temporaryDirectory.appendingPathComponent("storebench-out-\(tag)").path
        let errPath = FileManager.default.temporaryDirectory.appendingPathComponent("storebench-err-\(tag)").path
        defer {
            unlink(outPath)
            unlink(errPath)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let start = DispatchTime.now().uptimeNanoseconds
        let rc = argv.withUnsafeBufferPointer { buf -> Int32 in
            guard let base = buf.baseAddress else { return EINVAL }
            return posix_spawn(&pid, executable, &actions, nil, base, environ)
        }
        guard rc == 0 else { throw Failure(description: "cannot start \(executable): \(String(cString: strerror(rc)))") }

        let sampler = sampleMemory ? MemorySampler(pid: pid) : nil
        sampler?.start()
        // Wait without reaping, so the sampler never reads a recycled pid; then reap.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let (hwm, anon) = sampler?.stop() ?? (0, 0)
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        let cpu = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6

        let out = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        let exitCode: Int32 = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        let outcome = Outcome(seconds: seconds, cpuSeconds: cpu, peakRSS: hwm, peakAnon: anon, status: exitCode,
                              stdout: out, stderr: err)
        guard exitCode == 0 else {
            let name = URL(fileURLWithPath: executable).lastPathComponent
            throw Failure(description: "\(name) \(arguments.joined(separator: " ")) exited with \(exitCode): \(err.isEmpty ? out : err)")
        }
        return outcome
    }

    /// The full path of a command found on `PATH` (so timing a tool does not include an extra `env` exec).
    static func which(_ name: String) throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw Failure(description: "\(name) not found on PATH (install it: sqlite3, lmdb-utils)")
    }

    /// Runs a tool found on `PATH`, without sampling its memory.
    @discardableResult
    static func tool(_ name: String, _ arguments: [String]) throws -> Outcome {
        try run(try which(name), arguments, sampleMemory: false)
    }

    /// Runs this executable as a worker (`--worker <kind> …`).
    static func worker(_ arguments: [String]) throws -> Outcome {
        try run(selfExecutable, ["--worker"] + arguments)
    }
}

/// Polls a process's `VmHWM` and `RssAnon` every millisecond or so and keeps the largest values.
private final class MemorySampler: @unchecked Sendable {
    // @unchecked: `hwm`, `anon` and `running` are only touched under `lock`.
    private let path: String
    private let lock = NSLock()
    private var hwm = 0
    private var anon = 0
    private var running = true
    private let done = DispatchSemaphore(value: 0)

    init(pid: pid_t) { path = "/proc/\(pid)/status" }

    func start() {
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while lock.withLock({ running }) {
                let fd = open(path, O_RDONLY)
                if fd >= 0 {
                    let n = read(fd, &buffer, buffer.count)
                    close(fd)
                    if n > 0, let text = String(bytes: buffer[0..<n], encoding: .utf8) {
                        let h = Self.field("VmHWM:", in: text) ?? 0
                        let a = Self.field("RssAnon:", in: text) ?? 0
                        lock.withLock {
                            hwm = max(hwm, h * 1024)
                            anon = max(anon, a * 1024)
                        }
                    }
                }
                usleep(1_000)
            }
            done.signal()
        }
        thread.start()
    }

    /// Stops sampling; returns the peak `VmHWM` and `RssAnon`, in bytes.
    func stop() -> (Int, Int) {
        lock.withLock { running = false }
        done.wait()
        return lock.withLock { (hwm, anon) }
    }

    /// The number (kB) after `name` in a `/proc/<pid>/status` text.
    static func field(_ name: String, in text: String) -> Int? {
        guard let range = text.range(of: name) else { return nil }
        let digits = text[range.upperBound...].drop { $0 == " " || $0 == "\t" }.prefix { $0.isNumber }
        return Int(digits)
    }
}
