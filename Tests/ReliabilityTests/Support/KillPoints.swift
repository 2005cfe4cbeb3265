import Foundation
import StoreTestSupport
import Testing

/// Where a run is killed: after a delay (real timing), or on entry to its k-th file-system mutation, delivered by
/// strace's syscall tampering — no hook in the code under test, and it reaches windows a few microseconds wide
/// (between two renames of a placement, between the unlinks of a destroy) that timing alone rarely hits.
enum KillPoint: CustomStringConvertible {
    case delay(Double)
    /// A fraction of a complete run's duration (measured in seconds).
    case fraction(Double, of: Double)
    case syscall(Syscalls.Boundary)

    var description: String {
        switch self {
        case .delay(let d): String(format: "after %.3f s", d)
        case .fraction(let f, let d): String(format: "after %.3f s (%.0f%% of a %.3f s run)", f * d, f * 100, d)
        case .syscall(let b): "at \(b)"
        }
    }

    /// Starts `command` (program first) so that it dies at this point; returns once it has ended, and whether the
    /// kill landed (`false`: the run finished first).
    func run(_ command: [String]) throws -> (child: Child, killed: Bool) {
        switch self {
        case .fraction(let f, let duration):
            return try KillPoint.delay(f * duration).run(command)
        case .delay(let seconds):
            let child = try Child(URL(fileURLWithPath: command[0]), Array(command.dropFirst()))
            usleep(UInt32(max(0, seconds) * 1_000_000))
            let killed = child.kill()
            return (child, killed)
        case .syscall(let boundary):
            let strace = try #require(Syscalls.strace, "strace is needed for syscall kill points")
            let child = try Child(strace, Syscalls.killArguments(at: boundary) + command)
            // A run that never reaches the boundary ends on its own; this only guards against a hang.
            if !child.waitUntilExit(timeout: 300) {
                child.kill()
                Issue.record("\(command.joined(separator: " ")): still running 300 s after its start, killed")
            }
            // strace ends itself with the signal its tracee died of.
            return (child, child.killedBySignal || child.status == 128 + SIGKILL)
        }
    }
}

/// The file-system mutations a run makes, as strace sees them.
enum Syscalls {
    /// The calls that change what is on disk or make it durable: every crash window lies between two of them.
    static let mutations = "unlink,unlinkat,rename,renameat,renameat2,link,linkat,rmdir,mkdir,mkdirat,fsync,fdatasync,ftruncate"

    /// strace, when it is installed and may trace (containers can forbid ptrace).
    static let strace: URL? = {
        let url = URL(fileURLWithPath: "/usr/bin/strace")
        guard FileManager.default.isExecutableFile(atPath: url.path),
              let probe = try? Child(url, ["-f", "-qq", "-o", "/dev/null", "/bin/true"])
        else { return nil }
        probe.wait()
        return probe.status == 0 ? url : nil
    }()

    static let skipReason: Comment = "strace is not installed or may not trace here; syscall kill points need it"

    /// One mutation: the k-th call overall, the `ordinal`-th call of `name` in its thread (strace counts
    /// injections per syscall and per thread).
    struct Boundary: CustomStringConvertible {
        let index: Int
        let name: String
        let ordinal: Int
        let call: String

        var description: String { "mutation \(index) \(call.prefix(160))" }
    }

    /// Runs `command` to the end under strace and lists its mutations.
    static func boundaries(of command: [String]) throws -> (child: Child, boundaries: [Boundary]) {
        let strace = try #require(strace, "strace is needed for syscall kill points")
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("reliability-strace-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: log) }
        let child = try Child(strace, ["-f", "-qq", "--seccomp-bpf", "-o", log.path, "-e", "trace=\(mutations)"] + command)
        child.wait()
        let lines = ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n")
        var counts: [String: Int] = [:]
        var found: [Boundary] = []
        for line in lines where !line.contains("resumed>") && !line.contains("+++") && !line.contains("---") {
            let fields = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            guard fields.count == 2, let paren = fields[1].firstIndex(of: "(") else { continue }
            let thread = String(fields[0])
            let name = String(fields[1][..<paren]).trimmingCharacters(in: .whitespaces)
            let key = thread + " " + name
            counts[key, default: 0] += 1
            found.append(Boundary(index: found.count + 1, name: name, ordinal: counts[key] ?? 1,
                                  call: String(fields[1]).trimmingCharacters(in: .whitespaces)))
        }
        return (child, found)
    }

    static func killArguments(at boundary: Boundary) -> [String] {
        // (Not with --seccomp-bpf: strace then lets injected calls through.)
        ["-f", "-qq", "-o", "/dev/null", "-e", "trace=\(boundary.name)",
         "-e", "inject=\(boundary.name):signal=KILL:when=\(boundary.ordinal)"]
    }

    /// Up to `count` boundaries, spread by `random` (all of them when there are no more than `count`).
    static func sample(_ all: [Boundary], count: Int, using random: inout SeededGenerator) -> [Boundary] {
        guard all.count > count else { return all }
        return Array(all.shuffled(using: &random).prefix(count)).sorted { $0.index < $1.index }
    }
}
