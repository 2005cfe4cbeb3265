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
    /// Prints `text` to standard error unless `quiet` — then the text is not even made.
    static func note(_ text: @autoclosure () -> String, quiet: Bool) {
        guard !quiet else { return }
        let text = text()
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
        return unit == 0 ? "\(bytes) bytes" : fixed(value, places: 1) + " " + units[unit]
    }

    static func seconds(since start: Date) -> String {
        fixed(Date().timeIntervalSince(start), places: 2) + " s"
    }

    /// `value` rounded to `places` decimals (to the nearest, halves away from zero), as `%.Nf` shows it, without
    /// Foundation's `String(format:)`, whose first call in a process is a noticeable part of a short run.
    static func fixed(_ value: Double, places: Int) -> String {
        var scale: Int64 = 1
        for _ in 0..<places { scale *= 10 }
        let scaled = (abs(value) * Double(scale)).rounded()
        guard value.isFinite, scaled < 9e15 else { return "\(value)" }
        let units = Int64(scaled)
        let whole = "\(value < 0 && units != 0 ? "-" : "")\(units / scale)"
        guard places > 0 else { return whole }
        let fraction = String(units % scale)
        return whole + "." + String(repeating: "0", count: places - fraction.count) + fraction
    }
}
