import Foundation
import StoreAPI

/// A one-line progress bar on standard error, drawn only when standard error is a terminal and not silenced.
///
/// Its ``handler`` is passed to store operations as their progress callback; it also carries Ctrl-C requests into
/// the operation (which then cancels cleanly).
final class ProgressBar {
    private let label: String
    private let enabled: Bool
    private var lastDraw = Date.distantPast
    private var drawn = false
    private(set) var recordsDone = 0

    init(_ label: String, quiet: Bool) {
        self.label = label
        self.enabled = !quiet && Console.stderrIsTerminal
    }

    var handler: ProgressHandler {
        { [self] progress in
            try Interrupt.check()
            recordsDone = max(recordsDone, progress.recordsDone)
            draw(progress)
        }
    }

    private func draw(_ p: TransferProgress) {
        guard enabled else { return }
        let now = Date()
        guard now.timeIntervalSince(lastDraw) >= 0.1 || p.recordsDone == p.recordsTotal else { return }
        lastDraw = now
        var line = "\(label) "
        if let total = p.recordsTotal, total > 0 {
            let fraction = min(1, Double(p.recordsDone) / Double(total))
            let width = 30
            let filled = Int(fraction * Double(width))
            line += "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
            let percent = String(Int(fraction * 100))
            line += String(repeating: " ", count: max(0, 3 - percent.count)) + percent + "% "
                + "\(Console.count(p.recordsDone))/\(Console.count(total)) records"
        } else {
            line += "\(Console.count(p.recordsDone)) records"
        }
        if let entity = p.entity { line += "  \(entity)" }
        FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8))
        drawn = true
    }

    /// Clears the bar so the next message starts on a clean line.
    func finish() {
        guard enabled, drawn else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
        drawn = false
    }
}
