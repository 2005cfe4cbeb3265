import Foundation
import Synchronization

/// A timestamp per step of a sync, printed to standard error when the environment variable `STORESYNC_PHASES` is
/// set: how a pull divides its wall time, without a profiler. Nothing is measured or printed otherwise.
enum SyncPhases {
    static let enabled = ProcessInfo.processInfo.environment["STORESYNC_PHASES"] != nil

    private static let last = Mutex(Date())

    /// Prints the time since the previous mark, naming the step that just ended.
    static func mark(_ step: @autoclosure () -> String) {
        guard enabled else { return }
        let now = Date()
        let since = last.withLock { last in
            defer { last = now }
            return now.timeIntervalSince(last)
        }
        let name = step()
        let padded = name + String(repeating: " ", count: max(0, 28 - name.count))
        FileHandle.standardError.write(Data("sync phase \(padded) \(String(format: "%8.1f", since * 1000)) ms\n".utf8))
    }
}
