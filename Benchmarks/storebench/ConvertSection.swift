import Foundation

/// Every ordered pair of persistent backends: our conversion (a fresh process each run, so its peak RSS is its
/// own) beside the engines' reference read of the source plus reference write of the destination, measured on
/// the same stores in the same run — run by run, interleaved with ours, so that a machine whose speed drifts over
/// minutes (a shared one does, by a third and more) moves both sides of a ratio alike.
enum ConvertSection {
    /// The target: convert within 1.5× of reference read + write, for stores of 10⁶ records (the size it is set for;
    /// smaller conversions show their ratio without a target, since storectl's start-up is a large part of them).
    static let maxRatio = 1.5
    static let targetRecords = 1_000_000
    /// The target: peak RSS of a conversion at most 100 MB.
    static let rssLimit = 100_000_000

    /// The engines' reference write time per type (median of the runs), for the insert section: the engine
    /// writing exactly the stored rows.
    static func referenceWrites(_ env: BenchEnvironment) throws -> [String: Timing] {
        var writes: [String: Timing] = [:]
        for type in env.types {
            writes[type] = try env.median { try referenceWrite(env, type).reportedTiming }
        }
        return writes
    }

    private static func referenceRead(_ env: BenchEnvironment, _ type: String) throws -> ChildProcess.Outcome {
        try ChildProcess.worker(["ref-read", type, env.source(type).path])
    }

    private static func referenceWrite(_ env: BenchEnvironment, _ type: String) throws -> ChildProcess.Outcome {
        let dst = env.destination("ref-write.\(type)")
        defer { env.remove(dst) }
        return try ChildProcess.worker(["ref-write", type, env.source(type).path, dst.path])
    }

    /// A conversion's peak memory: resident set (`VmHWM`) and anonymous memory (heap), bytes.
    struct Peak {
        var rss: Int
        var anon: Int
    }

    /// Runs every pair, each run of ours beside a reference read and write of its own (in turn first and second);
    /// returns each pair's median peaks (for the flatness check across sizes).
    static func run(_ env: BenchEnvironment) throws -> [String: Peak] {
        var peaks: [String: Peak] = [:]
        var readRSS: [String: [Double]] = [:]
        for from in SourceStores.types {
            for to in SourceStores.types where to != from && (env.types.contains(from) || env.types.contains(to)) {
                let name = "convert \(from) → \(to)"
                var times: [Timing] = []
                var references: [Timing] = []
                var rss: [Double] = []
                var anon: [Double] = []
                for run in 0..<env.runs {
                    func reference() throws {
                        let read = try referenceRead(env, from)
                        readRSS[from, default: []].append(Double(read.peakRSS))
                        references.append(read.reportedTiming + (try referenceWrite(env, to).reportedTiming))
                    }
                    if run % 2 == 1 { try reference() }
                    let dst = env.destination("converted-\(from).\(to)")
                    let outcome = try env.product.convert(env.source(from), dst, type: to)
                    times.append(outcome.timing)
                    rss.append(Double(outcome.peakRSS))
                    anon.append(Double(outcome.peakAnon))
                    if run == 0 { env.verify(name, copy: dst, against: from) }
                    env.remove(dst)
                    if run % 2 == 0 { try reference() }
                }
                let peak = Peak(rss: Int(Measure.median(rss)), anon: Int(Measure.median(anon)))
                env.table.add(.timed(name, records: env.total, ours: Timing.median(times), reference: Timing.median(references),
                                     referenceName: "\(readName(from)) + \(writeName(to))",
                                     maxRatio: env.total >= targetRecords ? maxRatio : nil,
                                     peakRSS: peak.rss, peakAnon: peak.anon))
                peaks[name] = peak
            }
        }
        for from in SourceStores.types {
            for to in SourceStores.types where to != from && (env.types.contains(from) || env.types.contains(to)) {
                let name = "convert \(from) → \(to)"
                let peak = peaks[name] ?? Peak(rss: 0, anon: 0)
                env.table.add(.memory("peak RSS " + name, records: env.total, bytes: peak.rss, limit: rssLimit,
                                      note: String(format: "anon (heap) %.1f MB; the reference read of %@ alone peaks at %.1f MB RSS",
                                                   Double(peak.anon) / 1e6, from, Measure.median(readRSS[from] ?? []) / 1e6)))
            }
        }
        return peaks
    }

    static func readName(_ type: String) -> String {
        switch type {
        case "sqlite": "sqlite3 SELECT *"
        case "lmdb": "mdb_cursor walk"
        default: "xmlTextReader pass"
        }
    }

    static func writeName(_ type: String) -> String {
        switch type {
        case "sqlite": "prepared INSERTs, 1 txn"
        case "lmdb": "mdb_put, 1 txn"
        default: "xmlTextWriter + fsync"
        }
    }
}
