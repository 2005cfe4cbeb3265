import Foundation
import StoreTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Runs a program as a child process and measures what a test cannot measure in process: its peak memory
/// and whether it finished in time (it is killed after the timeout, and a kill counts as a hang). Foundation's
/// `Process` reaps its children itself, so the child is spawned with `posix_spawn`.
///
/// The peak is the child's `ru_maxrss` from `wait4` when that exceeds this process's own peak; otherwise the highest
/// `VmHWM` read from `/proc` every millisecond while it ran (so what it allocates in its last millisecond may be
/// missed). Linux carries the spawning process's high-water mark into a child spawned sharing its memory (as
/// `posix_spawn` does), so a child's `ru_maxrss` is never below the test process's own — which, with many tests
/// running in it, can exceed a bound the child itself stays far below.
enum ChildProcess {
    struct Result: CustomStringConvertible {
        var exitStatus: Int32?
        var signal: Int32?
        var timedOut: Bool
        var peakMemoryBytes: Int
        var seconds: Double
        var stdout: String
        var stderr: String

        var description: String {
            let how = timedOut ? "killed after the timeout" : signal.map { "killed by signal \($0)" } ?? "exit \(exitStatus ?? -1)"
            return "\(how), peak memory \(peakMemoryBytes >> 20) MB, \(String(format: "%.1f", seconds)) s; stderr: \(stderr.prefix(600))"
        }
    }

    /// Runs `executable` with `arguments` (give it absolute paths); kills it after `timeout` seconds.
    static func run(_ executable: URL, _ arguments: [String], timeout: Double) throws -> Result {
        let tag = UUID().uuidString
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-child-\(tag).out")
        let err = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-child-\(tag).err")
        defer {
            try? FileManager.default.removeItem(at: out)
            try? FileManager.default.removeItem(at: err)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, out.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, err.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable.path, &actions, nil, argv, environ)
        guard rc == 0 else {
            throw FuzzViolation("cannot start \(executable.path): \(String(cString: strerror(rc)))")
        }
        let began = Date()
        var status: Int32 = 0
        var usage = rusage()
        var timedOut = false
        var sampledPeak = 0
        while true {
            sampledPeak = max(sampledPeak, Self.highWaterMark(of: pid) ?? 0)
            let r = wait4(pid, &status, WNOHANG, &usage)
            if r == pid { break }
            if r < 0, errno != EINTR { break }
            if Date().timeIntervalSince(began) > timeout {
                timedOut = true
                kill(pid, SIGKILL)
                while wait4(pid, &status, 0, &usage) < 0, errno == EINTR {}
                break
            }
            usleep(1_000)
        }
        let seconds = Date().timeIntervalSince(began)
        var own = rusage()
        #if os(Linux)
        getrusage(RUSAGE_SELF.rawValue, &own)
        #else
        getrusage(RUSAGE_SELF, &own)
        #endif
        let reported = usage.ru_maxrss * 1024
        let peak = reported > own.ru_maxrss * 1024 ? reported : sampledPeak
        let signaled = (status & 0x7F) != 0 && (status & 0x7F) != 0x7F
        return Result(
            exitStatus: signaled ? nil : (status >> 8) & 0xFF, signal: signaled ? status & 0x7F : nil, timedOut: timedOut,
            peakMemoryBytes: peak, seconds: seconds,
            stdout: (try? String(contentsOf: out, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: err, encoding: .utf8)) ?? "")
    }

    /// The `VmHWM` of process `pid` in bytes, or `nil` when it cannot be read (the process is gone, or not Linux).
    static func highWaterMark(of pid: pid_t) -> Int? {
        // Read with read(2): /proc files report a size of 0, which Foundation's whole-file readers trust.
        let fd = open("/proc/\(pid)/status", O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        let status = String(decoding: bytes[..<n], as: UTF8.self)
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let kilobytes = line.dropFirst("VmHWM:".count).split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) }
            return kilobytes.map { $0 * 1024 }
        }
        return nil
    }
}
