import Foundation
import StoreTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Runs a program as a child process and measures what a test cannot measure in process: its peak memory
/// (`ru_maxrss` from `wait4`) and whether it finished in time (it is killed after the timeout, and a kill counts
/// as a hang). Foundation's `Process` reaps its children itself, so the child is spawned with `posix_spawn`.
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
        while true {
            let r = wait4(pid, &status, WNOHANG, &usage)
            if r == pid { break }
            if r < 0, errno != EINTR { break }
            if Date().timeIntervalSince(began) > timeout {
                timedOut = true
                kill(pid, SIGKILL)
                while wait4(pid, &status, 0, &usage) < 0, errno == EINTR {}
                break
            }
            usleep(5_000)
        }
        let seconds = Date().timeIntervalSince(began)
        let signaled = (status & 0x7F) != 0 && (status & 0x7F) != 0x7F
        return Result(
            exitStatus: signaled ? nil : (status >> 8) & 0xFF, signal: signaled ? status & 0x7F : nil, timedOut: timedOut,
            peakMemoryBytes: usage.ru_maxrss * 1024, seconds: seconds,
            stdout: (try? String(contentsOf: out, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: err, encoding: .utf8)) ?? "")
    }
}
