import Foundation
import StoreTestSupport
import Testing

/// Small file systems for resource-failure tests: a size-limited tmpfs (a disk that fills up) and a read-only bind
/// mount (root ignores permission bits, not a read-only mount). Both need root and mount rights, which CI
/// containers may not grant: ``available`` probes once, and the tests that need a mount are skipped without it.
enum Mounts {
    static let available: Bool = {
        guard getuid() == 0, let scratch = try? TemporaryDirectory("reliability-mount-probe") else { return false }
        defer { scratch.remove() }
        let ok = run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", scratch.url.path]) == nil
        if ok { unmount(scratch.url) }
        return ok
    }()

    static let skipReason: Comment = "mounting a tmpfs or a read-only bind mount is not permitted here (needs root with CAP_SYS_ADMIN)"

    /// Runs a mount command; returns its error output when it fails.
    @discardableResult
    static func run(_ arguments: [String]) -> String? {
        do {
            let child = try Child(URL(fileURLWithPath: "/usr/bin/env"), arguments)
            child.wait()
            return child.status == 0 ? nil : child.stderr
        } catch {
            return "\(error)"
        }
    }

    /// Mounts a tmpfs of `bytes` (rounded up to pages) on the empty directory `directory`.
    static func tmpfs(at directory: URL, bytes: Int) throws {
        let size = (bytes + 4095) / 4096 * 4096
        if let error = run(["mount", "-t", "tmpfs", "-o", "size=\(size)", "tmpfs", directory.path]) {
            throw MountFailure(description: "mount tmpfs on \(directory.path): \(error)")
        }
    }

    /// Makes `directory` read-only, contents and all, by bind-mounting it read-only onto itself.
    static func readOnly(_ directory: URL) throws {
        if let error = run(["mount", "--bind", directory.path, directory.path]) {
            throw MountFailure(description: "bind mount \(directory.path): \(error)")
        }
        if let error = run(["mount", "-o", "remount,bind,ro", directory.path]) {
            unmount(directory)
            throw MountFailure(description: "remount \(directory.path) read-only: \(error)")
        }
    }

    static func unmount(_ directory: URL) {
        if run(["umount", directory.path]) != nil { run(["umount", "-l", directory.path]) }
    }

    struct MountFailure: Error, CustomStringConvertible {
        let description: String
    }
}
