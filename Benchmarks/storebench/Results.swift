import Foundation

/// One line of the final table: our figure, the reference measured in the same run, their ratio, and the target
/// the issue sets for it (when there is one).
struct ResultRow {
    var name: String
    var records: Int?
    var ours: String
    var rate: String = ""
    var reference: String = "-"
    var oursWall: String = ""
    var referenceWall: String = ""
    var ratio: Double?
    var target: String = "-"
    var met: Bool?
    var peakRSS: String = ""
    var peakAnon: String = ""
    var referenceName: String = ""

    /// A timed row: CPU seconds, records per CPU second, the reference and the ratio of CPU times (checked against
    /// `maxRatio`), with wall-clock times alongside.
    static func timed(_ name: String, records: Int, ours: Timing, reference: Timing?, referenceName: String,
                      maxRatio: Double? = nil, peakRSS: Int? = nil, peakAnon: Int? = nil) -> ResultRow {
        let ratio = reference.flatMap { $0.cpu > 0 ? ours.cpu / $0.cpu : nil }
        return ResultRow(
            name: name, records: records, ours: seconds(ours.cpu), rate: ours.cpu > 0 ? rate(Double(records) / ours.cpu) : "",
            reference: reference.map { seconds($0.cpu) } ?? "-", oursWall: seconds(ours.wall),
            referenceWall: reference.map { seconds($0.wall) } ?? "",
            ratio: ratio, target: maxRatio.map { String(format: "≤%.1f×", $0) } ?? "-",
            met: maxRatio.flatMap { limit in ratio.map { $0 <= limit } },
            peakRSS: peakRSS.map(megabytes) ?? "", peakAnon: peakAnon.map(megabytes) ?? "", referenceName: referenceName)
    }

    /// A memory row: a peak against an absolute limit.
    static func memory(_ name: String, records: Int, bytes: Int, limit: Int, note: String) -> ResultRow {
        ResultRow(name: name, records: records, ours: megabytes(bytes), target: "≤" + megabytes(limit), met: bytes <= limit,
                  referenceName: note)
    }

    /// A flatness row: the peak at the larger size over the peak at the smaller.
    static func flatness(_ name: String, small: (Int, Int), large: (Int, Int), limit: Double) -> ResultRow {
        let ratio = Double(large.1) / Double(max(1, small.1))
        return ResultRow(name: name, records: large.0, ours: megabytes(large.1), reference: megabytes(small.1), ratio: ratio,
                         target: String(format: "≤%.1f×", limit), met: ratio <= limit,
                         referenceName: "peak RSS at \(count(small.0)) records")
    }

    static func seconds(_ s: Double) -> String {
        s < 0.1 ? String(format: "%.1f ms", s * 1000) : String(format: "%.3f s", s)
    }

    static func rate(_ r: Double) -> String {
        r >= 1e6 ? String(format: "%.2fM/s", r / 1e6) : r >= 1e3 ? String(format: "%.0fk/s", r / 1e3) : String(format: "%.0f/s", r)
    }

    static func megabytes(_ b: Int) -> String { String(format: "%.1f MB", Double(b) / 1e6) }

    static func count(_ n: Int) -> String {
        switch n {
        case 1_000_000: "10⁶"
        case 100_000: "10⁵"
        case 10_000: "10⁴"
        default: String(n)
        }
    }
}

/// Collects rows section by section and prints them as one aligned table.
final class ResultsTable {
    private(set) var rows: [ResultRow] = []
    private(set) var sections: [(title: String, range: Range<Int>)] = []
    private var open: (title: String, start: Int)?

    func begin(_ title: String) {
        finishSection()
        open = (title, rows.count)
    }

    func add(_ row: ResultRow) {
        rows.append(row)
        Self.printRows([row], header: false)
    }

    private func finishSection() {
        if let o = open { sections.append((o.title, o.start..<rows.count)) }
        open = nil
    }

    static let headers = ["row", "records", "ours", "rate", "reference", "ours/ref", "target", "met?", "peak RSS", "peak anon",
                          "wall ours", "wall ref", "reference is"]

    static func cells(_ r: ResultRow) -> [String] {
        [r.name, r.records.map { String($0) } ?? "", r.ours, r.rate, r.reference, r.ratio.map { String(format: "%.2f×", $0) } ?? "-",
         r.target, r.met.map { $0 ? "yes" : "NO" } ?? "", r.peakRSS, r.peakAnon, r.oursWall, r.referenceWall, r.referenceName]
    }

    private static let widths = [34, 9, 10, 9, 10, 9, 10, 5, 10, 10, 10, 10, 0]

    static func printRows(_ rows: [ResultRow], header: Bool, widths: [Int] = widths) {
        func line(_ cells: [String]) -> String {
            zip(cells, widths).map { cell, w in
                w == 0 || cell.count >= w ? cell + " " : cell + String(repeating: " ", count: w - cell.count) + " "
            }.joined().trimmingCharacters(in: .whitespaces)
        }
        if header { print(line(headers)) }
        for r in rows { print(line(cells(r))) }
    }

    /// The whole table, with column widths fitted to the content, section titles between groups.
    func printFinal() {
        finishSection()
        var widths = Self.headers.map(\.count)
        for r in rows {
            for (i, c) in Self.cells(r).enumerated() { widths[i] = max(widths[i], c.count) }
        }
        widths[widths.count - 1] = 0
        print("")
        Self.printRows([], header: true, widths: widths)
        for s in sections where !s.range.isEmpty {
            print("— \(s.title)")
            Self.printRows(Array(rows[s.range]), header: false, widths: widths)
        }
        let judged = rows.compactMap(\.met)
        print("\ntargets met: \(judged.filter { $0 }.count) of \(judged.count)")
    }
}
