import Foundation

/// Every ordered pair of persistent backends: our conversion (a fresh process each run, so its peak RSS is its
/// own) beside the engines' reference read of the source plus reference write of the destination, measured on
/// the same stores in the same run.
enum ConvertSection {
    /// The target: convert within 1.5× of reference read + write.
    static let maxRatio = 1.5
    /// The target: peak RSS of a conversion at most 100 MB.
    static let rssLimit = 100_000_000

    /// The engines' reference read and write times per type (median of the runs), measured once per size.
    struct References {
        var read: [String: Timing] = [:]
        var write: [String: Timing] = [:]
        var readRSS: [String: Int] = [:]
    }

    static func references(_ env: BenchEnvironment) throws -> References {
        var refs = References()
        for type in SourceStores.types {
            var rss: [Double] = []
            refs.read[type] = try env.median {
                let o = try ChildProcess.worker(["ref-read", type, env.source(type).path])
                rss.append(Double(o.peakRSS))
                return o.reportedTiming
            }
            refs.readRSS[type] = Int(Measure.median(rss))
            refs.write[type] = try env.median {
                let dst = env.destination("ref-write.\(type)")
                defer { env.remove(dst) }
                let o = try ChildProcess.worker(["ref-write", type, env.source(type).path, dst.path])
                return o.reportedTiming
            }
        }
        print("references, \(env.label) records: " + SourceStores.types.map { t in
            String(format: "%@ read %.3f s, write %.3f s (CPU)", t, refs.read[t]?.cpu ?? 0, refs.write[t]?.cpu ?? 0)
        }.joined(separator: "; "))
        return refs
    }

    /// A conversion's peak memory: resident set (`VmHWM`) and anonymous memory (heap), bytes.
    struct Peak {
        var rss: Int
        var anon: Int
    }

    /// Runs every pair; returns each pair's median peaks (for the flatness check across sizes).
    static func run(_ env: BenchEnvironment, _ refs: References) throws -> [String: Peak] {
        var peaks: [String: Peak] = [:]
        for from in SourceStores.types {
            for to in SourceStores.types where to != from && (env.types.contains(from) || env.types.contains(to)) {
                let name = "convert \(from) → \(to)"
                var times: [Timing] = []
                var rss: [Double] = []
                var anon: [Double] = []
                for run in 0..<env.runs {
                    let dst = env.destination("converted-\(from).\(to)")
                    let outcome = try env.product.convert(env.source(from), dst, type: to)
                    times.append(outcome.timing)
                    rss.append(Double(outcome.peakRSS))
                    anon.append(Double(outcome.peakAnon))
                    if run == 0 { env.verify(name, copy: dst, against: from) }
                    env.remove(dst)
                }
                let peak = Peak(rss: Int(Measure.median(rss)), anon: Int(Measure.median(anon)))
                let zero = Timing(cpu: 0, wall: 0)
                let reference = (refs.read[from] ?? zero) + (refs.write[to] ?? zero)
                env.table.add(.timed(name, records: env.total, ours: Timing.median(times), reference: reference,
                                     referenceName: "\(readName(from)) + \(writeName(to))", maxRatio: maxRatio,
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
                                                   Double(peak.anon) / 1e6, from, Double(refs.readRSS[from] ?? 0) / 1e6)))
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
