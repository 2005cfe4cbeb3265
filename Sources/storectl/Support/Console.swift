import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Output helpers: results on standard output, messages and progress on standard error.
enum Console {
    /// Whether standard error is a terminal (progress bars are drawn only then).
    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// An informational line on standard error (kept off standard output so results stay parseable).
    static func note(_ text: String, quiet: Bool) {
        guard !quiet else { return }
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    static func output(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// `1234567` → `1,234,567`.
    static func count(_ n: Int) -> String {
        let digits = String(n.magnitude)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return (n < 0 ? "-" : "") + out
    }

    /// `1 relationship`, `2 relationships`, `1,000 records` (`plural` where adding an s is wrong).
    static func count(_ n: Int, _ noun: String, plural: String? = nil) -> String {
        "\(count(n)) \(n == 1 ? noun : plural ?? noun + "s")"
    }

    /// `1536` → `1.5 KB`.
    static func size(_ bytes: Int64) -> String {
        let units = ["bytes", "KB", "MB", "GB", "TB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) bytes" : String(format: "%.1f %@", value, units[unit])
    }

    static func seconds(since start: Date) -> String {
        String(format: "%.2f s", Date().timeIntervalSince(start))
    }
}
