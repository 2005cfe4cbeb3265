import Foundation

/// A problem with an NDJSON interchange file: which file, which line, and what is wrong.
///
/// The importer checks a whole file before it writes anything, so one error usually comes with the other problems
/// it found (``others``); ``description`` lists them all, one per line, the way a compiler lists errors.
public struct InterchangeError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// The file the line belongs to (a path, or a name such as `<stdin>`).
    public var file: String
    /// The 1-based line number, or 0 when the problem is not about one line (an unreadable file).
    public var line: Int
    /// What is wrong, in words a person can act on.
    public var message: String
    /// Further problems found in the same check, in line order.
    public var others: [InterchangeError]
    /// How many problems the check found beyond those listed; when there are any, the last of ``others`` says
    /// how many (`… and 490 more problems`).
    public var omittedCount: Int

    /// Creates an error.
    public init(file: String, line: Int, message: String, others: [InterchangeError] = [], omittedCount: Int = 0) {
        self.file = file
        self.line = line
        self.message = message
        self.others = others
        self.omittedCount = omittedCount
    }

    /// How many problems the check found: those listed and those left out.
    public var problemCount: Int {
        1 + others.count - (omittedCount > 0 ? 1 : 0) + omittedCount
    }

    /// Every problem, this one first.
    public var all: [InterchangeError] {
        [InterchangeError(file: file, line: line, message: message)] + others
    }

    /// `file:line: message` for this problem alone.
    public var singleLine: String {
        line > 0 ? "\(file):\(line): \(message)" : "\(file): \(message)"
    }

    public var description: String {
        guard !others.isEmpty else { return singleLine }
        return ([singleLine] + others.map(\.singleLine)).joined(separator: "\n")
    }

    public var errorDescription: String? { description }
}

/// Collects problems up to a limit, so a file with a systematic mistake reports enough to fix it without
/// printing a million lines.
struct ProblemList {
    let file: String
    let limit: Int
    private(set) var problems: [InterchangeError] = []
    private(set) var dropped = 0

    init(file: String, limit: Int) {
        self.file = file
        self.limit = max(1, limit)
    }

    var isEmpty: Bool { problems.isEmpty }
    var isFull: Bool { problems.count >= limit }

    mutating func add(line: Int, _ message: String) {
        if problems.count < limit {
            problems.append(InterchangeError(file: file, line: line, message: message))
        } else {
            dropped += 1
        }
    }

    /// Throws the collected problems, if any, as one error (sorted by line).
    func throwIfAny() throws {
        guard !problems.isEmpty else { return }
        var sorted = problems.enumerated().sorted { ($0.element.line, $0.offset) < ($1.element.line, $1.offset) }.map(\.element)
        if dropped > 0 {
            sorted.append(InterchangeError(file: file, line: 0, message: "… and \(dropped) more problems"))
        }
        let first = sorted.removeFirst()
        throw InterchangeError(file: first.file, line: first.line, message: first.message, others: sorted, omittedCount: dropped)
    }
}
