import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The message the fault handler writes, prepared before any store is touched (a signal handler may only call
/// async-signal-safe functions: `write` and `_exit`, no allocation, no Swift runtime).
nonisolated(unsafe) private var faultMessage: UnsafeMutablePointer<CChar>?
nonisolated(unsafe) private var faultMessageLength = 0

/// Turns a memory fault into a clear error (exit status 2) instead of a core dump.
///
/// liblmdb maps a store's data file and trusts the page numbers and lengths inside it (by design: it validates
/// nothing it reads, for speed). The meta pages are validated before every open, but a store damaged *inside* —
/// an overflow value whose length runs past the end of the file, a node offset pointing outside its page — makes
/// liblmdb touch memory past the mapped file, and the kernel answers with SIGBUS (or SIGSEGV). No store is
/// written in place by any command (everything is staged, then renamed), so the only safe and useful thing left to
/// do is to say which store is damaged and exit; staging leftovers are removed by the next operation on that path.
enum FaultGuard {
    static func install(command name: String) {
        let arguments = CommandLine.arguments.dropFirst().joined(separator: " ")
        let text = "storectl \(name): error: \(arguments): a store's file is damaged: the storage engine faulted "
            + "reading it (a page or value points past the end of the file); nothing was written in place\n"
        let bytes = Array(text.utf8CString)
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count)
        buffer.initialize(from: bytes, count: bytes.count)
        faultMessage = buffer
        faultMessageLength = bytes.count - 1
        for sig in [SIGBUS, SIGSEGV] {
            signal(sig) { _ in
                if let message = faultMessage { _ = write(2, message, faultMessageLength) }
                _exit(2)
            }
        }
    }
}
