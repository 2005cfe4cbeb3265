import CoreDataBackend
import Foundation
import LMDBBackend
import StoreAPI

/// The `coredata` section: a Core Data store (``CoreDataDataset``: inheritance, to-one with entity column, ordered
/// to-many, many-to-many) converted to LMDB and back by our conversion beside the engines' C references doing the
/// same reads and writes on the same stores in the same run: sqlite3 `SELECT *` of every Core Data table and a read
/// of every to-many from its members' side + LMDB `mdb_put` of exactly our LMDB store's entries in one transaction, and an LMDB cursor walk + prepared INSERTs of
/// exactly the Core Data store's rows in one transaction. Then a fresh process opens the largest store and reads one
/// record by key.
///
/// Both sides run the same way: each in a fresh storebench worker process, timed over the region that does the work
/// (ours: the source's type detection, both stores' opening with their models, the copy and the closing; the
/// references: opening, reading or writing, closing). What a process takes to start and exit, the same for both
/// and not a cost of either, is measured apart (a worker doing nothing) and shown in a row of its own; our whole
/// process's CPU time is shown beside each ratio.
///
/// The references write exactly what ours writes and read what a conversion must read: reading Core Data, the rows
/// and every to-many from its members' side (``RefCoreData``: foreign keys through their indexes, an ordered
/// relationship's positions, a join table once per direction), which a conversion with memory flat in the store's
/// size cannot avoid. Each is given the other side's finished content, so neither computes what ours must: reading
/// Core Data, ours also derives each record's global ID (a SHA-1), which the captured LMDB entries already hold;
/// writing Core Data, ours also checks each record's global ID against the derived one, works out the `Z_FOK_`
/// positions and entity columns the captured rows already hold, and checks that the two sides of a many-to-many
/// agree. The ratio is therefore an upper bound on what ours costs over the engines. A second row for
/// coredata → lmdb sets ours beside a read of the rows alone (no to-many read), which no conversion could match;
/// it is shown, not a target.
///
/// Peak memory is measured the same way on both sides (each worker process's `VmHWM` and largest `RssAnon`; a
/// reference's peak is the larger of its read's and its write's), and the flatness section sets the growth of ours
/// from the smallest size to the largest beside the reference's.
enum CoreDataSection {
    /// The issue's targets: both conversions within 1.5× of their reference; one record of a 10⁶-record store
    /// opened and read in under 5 ms.
    static let maxRatio = 1.5
    static let openTargetSeconds = 0.005

    static func directory(root: URL, total: Int) -> URL {
        root.appendingPathComponent("coredata-v\(Dataset.version)-\(total)")
    }

    static func source(_ dir: URL, _ type: String) -> URL {
        dir.appendingPathComponent(type == "coredata" ? "source.sqlite" : "source.\(type)")
    }

    /// Builds the Core Data and LMDB source stores through each backend's store API, unless kept from a run before.
    static func ensureSources(_ dataset: CoreDataDataset, in dir: URL) throws -> [String: Timing?] {
        var built: [String: Timing?] = [:]
        for type in ["coredata", "lmdb"] {
            let url = source(dir, type)
            let stamp = dir.appendingPathComponent(".complete-\(type)")
            if FileManager.default.fileExists(atPath: stamp.path), FileManager.default.fileExists(atPath: url.path) {
                built[type] = .some(nil)
                continue
            }
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            for leftover in (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
            where leftover.hasPrefix(url.lastPathComponent) {
                try FileManager.default.removeItem(at: dir.appendingPathComponent(leftover))
            }
            let (_, seconds) = try Measure.timing {
                let backend = try BackendRegistry.shared.backend(for: type)
                let store = try backend.open(at: url, options: StoreOptions(), creating: dataset.metadata(type: type))
                do {
                    try dataset.forEachBatch(5_000) { try store.save(StoreChanges(inserted: $0)) }
                    try store.close()
                } catch {
                    try? store.close()
                    throw error
                }
            }
            _ = FileManager.default.createFile(atPath: stamp.path, contents: Data())
            built[type] = seconds
        }
        return built
    }

    /// Runs the section for every size; returns the failures.
    static func run(sizes: [Int], dataRoot: URL, scratch: URL, runs: (Int) -> Int, table: ResultsTable,
                    verifyUpTo: Int) throws -> [String] {
        var failures: [String] = []
        var largest: (total: Int, url: URL)?
        var peaks: [(Int, [String: Int])] = []
        var referencePeaks: [(Int, [String: Int])] = []
        for size in sizes {
            let dataset = try CoreDataDataset(total: size)
            let dir = directory(root: dataRoot, total: dataset.total)
            table.begin("coredata: convert to and from a Core Data store, \(ResultRow.count(dataset.total)) records "
                + "(Person/Author inheritance, to-one, ordered to-many, many-to-many; target ≤1.5× the C reference)")
            for (type, seconds) in try ensureSources(dataset, in: dir).sorted(by: { $0.key < $1.key }) {
                var row = ResultRow.timed("build source (\(type))", records: dataset.total, ours: seconds ?? Timing(cpu: 0, wall: 0),
                                          reference: nil, referenceName: "generated through the store API; not a product figure")
                if seconds == nil { row.ours = "reused"; row.rate = ""; row.oursWall = "" }
                table.add(row)
            }
            let work = scratch.appendingPathComponent("coredata-\(dataset.total)")
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: work) }
            var sizePeaks: [String: Int] = [:], sizeReferencePeaks: [String: Int] = [:]
            for (from, to) in [("coredata", "lmdb"), ("lmdb", "coredata")] {
                let name = "convert \(from) → \(to)"
                var times: [Timing] = [], wholes: [Timing] = [], references: [Timing] = [], rss: [Double] = [], anon: [Double] = []
                var referenceRSS: [Double] = [], referenceAnon: [Double] = [], rowsOnlyReferences: [Timing] = []
                for run in 0..<runs(dataset.total) {
                    func reference() throws {
                        let read = try ChildProcess.worker(["ref-read", from, source(dir, from).path])
                        let dst = work.appendingPathComponent("ref-write.\(to)")
                        remove(dst)
                        defer { remove(dst) }
                        let write = try ChildProcess.worker(["ref-write", to, source(dir, to).path, dst.path])
                        references.append(read.reportedTiming + write.reportedTiming)
                        // The reference is two processes: its peak is the larger of theirs.
                        referenceRSS.append(Double(max(read.peakRSS, write.peakRSS)))
                        referenceAnon.append(Double(max(read.peakAnon, write.peakAnon)))
                        if from == "coredata" {
                            let rowsOnly = try ChildProcess.worker(["ref-read", "sqlite", source(dir, from).path])
                            rowsOnlyReferences.append(rowsOnly.reportedTiming + write.reportedTiming)
                        }
                    }
                    if run % 2 == 1 { try reference() }
                    let dst = work.appendingPathComponent(to == "coredata" ? "converted.sqlite" : "converted.lmdb")
                    remove(dst)
                    let outcome = try ChildProcess.worker(["convert", source(dir, from).path, dst.path, to])
                    times.append(outcome.reportedTiming)
                    wholes.append(outcome.timing)
                    rss.append(Double(outcome.peakRSS))
                    anon.append(Double(outcome.peakAnon))
                    if run == 0, let problem = verify(dst, against: source(dir, from), dataset: dataset, verifyUpTo: verifyUpTo) {
                        failures.append("coredata \(name): \(problem)")
                        print("error: coredata \(name): \(problem)")
                    }
                    remove(dst)
                    if run % 2 == 0 { try reference() }
                }
                let peak = Int(Measure.median(rss))
                sizePeaks[name] = peak
                let whole = String(format: "; ours as a whole process %.1f ms CPU", Timing.median(wholes).cpu * 1000)
                table.add(.timed(name, records: dataset.total, ours: Timing.median(times), reference: Timing.median(references),
                                 referenceName: (from == "coredata" ? "sqlite3 SELECT * + to-manys from members' side + mdb_put, 1 txn"
                                                                    : "mdb_cursor walk + prepared INSERTs, 1 txn") + whole,
                                 maxRatio: maxRatio, peakRSS: peak, peakAnon: Int(Measure.median(anon))))
                if !rowsOnlyReferences.isEmpty {
                    // Shown beside the target row, not a target: this reference reads no to-many (see the type's notes).
                    table.add(.timed(name + " (rows-only read)", records: dataset.total, ours: Timing.median(times),
                                     reference: Timing.median(rowsOnlyReferences),
                                     referenceName: "sqlite3 SELECT * (no to-many read) + mdb_put, 1 txn; a lower bound, not a target"))
                }
                let referencePeak = Int(Measure.median(referenceRSS))
                sizeReferencePeaks[name] = referencePeak
                table.add(referenceMemoryRow(name, records: dataset.total, peakRSS: referencePeak,
                                             peakAnon: Int(Measure.median(referenceAnon)), readsCoreData: from == "coredata"))
            }
            table.add(try startupRow(runs: max(3, runs(dataset.total))))
            peaks.append((dataset.total, sizePeaks))
            referencePeaks.append((dataset.total, sizeReferencePeaks))
            largest = (dataset.total, source(dir, "coredata"))
        }
        if peaks.count >= 2, let (smallSize, small) = peaks.first, let (largeSize, large) = peaks.last {
            table.begin("coredata: peak RSS flatness, \(ResultRow.count(smallSize)) → \(ResultRow.count(largeSize)) records (target ≤1.2×)")
            let referenceSmall = referencePeaks.first?.1 ?? [:], referenceLarge = referencePeaks.last?.1 ?? [:]
            for (name, rss) in large.sorted(by: { $0.key < $1.key }) {
                guard let before = small[name] else { continue }
                let ours = ResultRow.flatness("RSS growth " + name, small: (smallSize, before), large: (largeSize, rss), limit: 1.2)
                table.add(ours)
                guard let referenceBefore = referenceSmall[name], let referenceAfter = referenceLarge[name] else { continue }
                var reference = ResultRow.flatness("RSS growth C reference " + name, small: (smallSize, referenceBefore),
                                                   large: (largeSize, referenceAfter), limit: 1.2)
                // Shown beside ours, not a target of ours.
                reference.target = "-"
                reference.met = nil
                table.add(reference)
                if let oursGrowth = ours.ratio, let referenceGrowth = reference.ratio, referenceGrowth > 0 {
                    var row = ResultRow(name: "RSS growth ours / C reference " + name, records: largeSize,
                                        ours: String(format: "%.2f×", oursGrowth), reference: String(format: "%.2f×", referenceGrowth))
                    row.ratio = oursGrowth / referenceGrowth
                    row.referenceName = "growth \(ResultRow.count(smallSize)) → \(ResultRow.count(largeSize)), ours against the reference's"
                    table.add(row)
                }
            }
        }
        if let largest {
            table.begin("coredata: open a \(ResultRow.count(largest.total))-record store and read one record by key (fresh process; target < 5 ms at 10⁶)")
            var opens: [Double] = []
            for _ in 0..<max(3, runs(largest.total)) {
                let outcome = try ChildProcess.worker(["coredata-open", largest.url.path])
                guard outcome.result["found"] == "1" else {
                    failures.append("coredata open: the record was not found")
                    break
                }
                opens.append(outcome.double("seconds") ?? .infinity)
            }
            let median = Measure.median(opens)
            var row = ResultRow(name: "open + read Book p1 (coredata)", records: largest.total, ours: String(format: "%.2f ms", median * 1000))
            row.target = largest.total >= 1_000_000 ? "<5 ms" : "-"
            row.met = largest.total >= 1_000_000 ? median < openTargetSeconds : nil
            row.referenceName = "open, metadata, model, one SELECT by Z_PK (in-process time)"
            table.add(row)
        }
        return failures
    }

    /// The C reference's peak memory for one conversion, measured as ours is (`VmHWM` and the largest `RssAnon` of
    /// its worker processes, the larger of its read's and its write's). Not a like-for-like figure: the write holds
    /// the whole captured content in memory, and an LMDB read maps the file, so its resident set counts the file's
    /// pages.
    static func referenceMemoryRow(_ name: String, records: Int, peakRSS: Int, peakAnon: Int, readsCoreData: Bool) -> ResultRow {
        var row = ResultRow(name: "C reference peak RSS, \(name.dropFirst("convert ".count))", records: records,
                            ours: ResultRow.megabytes(peakRSS))
        row.peakRSS = ResultRow.megabytes(peakRSS)
        row.peakAnon = ResultRow.megabytes(peakAnon)
        row.referenceName = readsCoreData
            ? "larger of sqlite3 SELECT * and mdb_put (the write holds the captured entries in memory)"
            : "larger of the LMDB cursor walk (maps the file) and the INSERTs (hold the captured rows in memory)"
        return row
    }

    /// What a worker process takes to start and exit doing nothing (whole process, median of `runs`): in neither
    /// side's timed region above, and the same for both.
    static func startupRow(runs: Int) throws -> ResultRow {
        var times: [Timing] = []
        for _ in 0..<runs { times.append(try ChildProcess.worker(["noop"]).timing) }
        var row = ResultRow.timed("worker process start-up + exit", records: 0, ours: Timing.median(times), reference: nil,
                                  referenceName: "not in either side's timed region; the same for both")
        row.records = nil
        row.rate = ""
        return row
    }

    /// `nil` when the store at `copy` holds the records of `source` (compared record by record up to `verifyUpTo`,
    /// else counted); otherwise what differs.
    static func verify(_ copy: URL, against source: URL, dataset: CoreDataDataset, verifyUpTo: Int) -> String? {
        do {
            let a = try BenchEnvironment.openReadOnly(source)
            defer { try? a.close() }
            let b = try BenchEnvironment.openReadOnly(copy)
            defer { try? b.close() }
            if dataset.total <= verifyUpTo {
                let differences = try StoreComparison(comparesMetadata: false, listLimit: 5).compare(a, b)
                return differences.isIdentical ? nil : differences.summary
            }
            for name in CoreDataDataset.entityNames {
                let n = try b.count(FetchRequest(entity: name, includesSubentities: false))
                if n != dataset.count(of: name) { return "\(n) \(name) records, expected \(dataset.count(of: name))" }
            }
            return nil
        } catch {
            return "cannot verify: \(error)"
        }
    }

    /// Removes `url` and every file beside it whose name starts with its name (sidecars, staging).
    static func remove(_ url: URL) {
        let fm = FileManager.default
        let dir = url.deletingLastPathComponent()
        for entry in (try? fm.contentsOfDirectory(atPath: dir.path)) ?? [] where entry.hasPrefix(url.lastPathComponent) {
            try? fm.removeItem(at: dir.appendingPathComponent(entry))
        }
        try? fm.removeItem(at: dir.appendingPathComponent("." + url.deletingPathExtension().lastPathComponent + "_SUPPORT"))
    }

    /// The worker's `coredata-open PATH`: opens the store read-only and reads Book key 1, timed in process.
    static func openAndRead(_ path: String) throws -> (found: Bool, seconds: Double) {
        let url = URL(fileURLWithPath: path)
        let (found, t) = try Measure.timing { () throws -> Bool in
            let store = try CoreDataStoreBackend().open(
                at: url, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
            defer { try? store.close() }
            return try store.records(withKeys: [1], root: "Book").first?.primaryKey == 1
        }
        return (found, t.wall)
    }
}
