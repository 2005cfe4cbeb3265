import Foundation
import StoreAPI
import StoreTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What one series of kills found: how many runs were started with a kill scheduled, how many the signal actually
/// cut short (the rest had finished), what the destination was afterwards, and every broken promise.
struct CrashTally: CustomStringConvertible {
    var label: String
    var tried = 0
    var killed = 0
    var outcomes: [String: Int] = [:]
    var failures: [String] = []

    mutating func note(_ outcome: String) { outcomes[outcome, default: 0] += 1 }

    var description: String {
        let o = outcomes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        return "crash \(label): \(tried) kill points, \(killed) killed mid-run, \(tried - killed) finished first; \(o); \(failures.count) failures"
    }

    /// Prints the tally (the counts a full run reports) and records every failure.
    func report() {
        // Unbuffered, so a long run's log shows each series as it ends.
        FileHandle.standardOutput.write(Data((description + "\n").utf8))
        for f in failures.prefix(10) { Issue.record("\(label): \(f)") }
    }
}

/// A store-to-store storectl operation under test.
struct TransferCase: CustomStringConvertible, Sendable {
    enum Operation: String, Sendable { case convert, copy, replace }
    let operation: Operation
    let sourceType: String
    let destinationType: String

    var description: String { "\(operation.rawValue) \(sourceType)→\(destinationType)" }

    func arguments(source: URL, destination: URL) -> [String] {
        switch operation {
        case .convert: ["convert", source.path, destination.path, "--to", destinationType, "--force", "-q"]
        case .copy: ["copy", source.path, destination.path, "--force", "-q"]
        case .replace: ["replace", destination.path, "--with", source.path, "-q"]
        }
    }

    /// Each backend once as source and once as destination; copy keeps the type.
    static let all: [TransferCase] = [
        .init(operation: .convert, sourceType: "sqlite", destinationType: "lmdb"),
        .init(operation: .convert, sourceType: "lmdb", destinationType: "xml"),
        .init(operation: .convert, sourceType: "xml", destinationType: "sqlite"),
        .init(operation: .copy, sourceType: "sqlite", destinationType: "sqlite"),
        .init(operation: .copy, sourceType: "lmdb", destinationType: "lmdb"),
        .init(operation: .copy, sourceType: "xml", destinationType: "xml"),
        .init(operation: .replace, sourceType: "lmdb", destinationType: "sqlite"),
        .init(operation: .replace, sourceType: "xml", destinationType: "lmdb"),
        .init(operation: .replace, sourceType: "sqlite", destinationType: "xml"),
    ]
}

/// How a series picks its kill points.
enum KillPlan: String, Sendable, CustomStringConvertible {
    /// After seeded random delays within the length of a complete run.
    case timed
    /// On entry to seeded random file-system mutations of a complete run (all of them in a full run).
    case syscalls

    var description: String { rawValue }

    /// The kill points for `command` (program first): makes one complete run to measure or trace it first.
    ///
    /// Timed points are fractions of a complete run's duration, turned into delays when they are used: on a shared
    /// machine the duration drifts with the load, so ``KillPoint/delay(_:)`` values are refreshed every few
    /// points by ``refreshDelays(_:from:command:)``.
    func points(for command: [String], count: Int, random: inout SeededGenerator) throws -> (calibration: Child, points: [KillPoint]) {
        switch self {
        case .timed:
            let (child, duration) = try Self.completeRun(command)
            return (child, (0..<count).map { _ in .fraction(Double.random(in: 0...1.1, using: &random), of: duration) })
        case .syscalls:
            let (child, all) = try Syscalls.boundaries(of: command)
            return (child, Syscalls.sample(all, count: count, using: &random).map { .syscall($0) })
        }
    }

    /// Runs `command` to the end and times it.
    static func completeRun(_ command: [String]) throws -> (Child, Double) {
        let started = Date()
        let child = try Child(URL(fileURLWithPath: command[0]), Array(command.dropFirst()))
        child.wait()
        return (child, Date().timeIntervalSince(started))
    }

    /// Every tenth point of a timed series, a fresh complete run re-measures the duration the fractions apply to.
    /// (The complete run is also one more "next operation on that path"; its result is left for the next point's
    /// checks, which start by resetting the destination.)
    static func refresh(_ point: KillPoint, index: Int, command: [String]) throws -> KillPoint {
        guard case .fraction(let f, _) = point, index > 0, index % 10 == 0 else { return point }
        let (_, duration) = try completeRun(command)
        return .fraction(f, of: duration)
    }
}

/// SIGKILLs storectl and storestress at seeded random moments and checks every promise after each kill.
enum CrashHarness {
    static func sleep(_ seconds: Double) { usleep(UInt32(max(0, seconds) * 1_000_000)) }

    /// Whether the staging entries after a run show that an earlier run's leftovers survived this run's cleanup.
    /// Every operation removes stale staging before it stages anything itself, so once a run has created staging
    /// entries of its own, none from before may remain.
    static func survivingLeftovers(before: Set<String>, after: Set<String>) -> Set<String> {
        after.isSubset(of: before) ? [] : before.intersection(after)
    }

    /// Entries of `directory` named after `store` (the store and its sidecars), staging entries excluded.
    static func entries(of store: URL) -> [String] {
        let name = store.lastPathComponent
        return ((try? FileManager.default.contentsOfDirectory(atPath: store.deletingLastPathComponent().path)) ?? [])
            .filter { $0 == name || $0.hasPrefix(name + "-") || $0.hasPrefix(name + ".") }
    }

    // MARK: convert, copy, replace

    /// Kills `storectl` doing `c` at random points. After each kill: the source is byte-for-byte unchanged; the
    /// destination is absent, the store that was there before, or a complete copy (integrity, verifier and a
    /// logical comparison with the source); and the staging leftovers of one run are gone after the next.
    static func transferSeries(_ c: TransferCase, plan: KillPlan, points: Int) throws -> CrashTally {
        var tally = CrashTally(label: "\(c) (\(plan))")
        let scratch = try TemporaryDirectory("reliability-crash-\(c.operation.rawValue)-\(c.sourceType)-\(c.destinationType)")
        defer { scratch.remove() }
        let pristine = try Fixtures.library(c.sourceType)
        let other = try Fixtures.other(c.destinationType)
        let otherBytes = StoreBytes.contents(of: other)
        let sourceDirectory = try scratch.directory("src")
        let destinationDirectory = try scratch.directory("dst")
        let source = sourceDirectory.appendingPathComponent("library.\(c.sourceType)")
        try StoreBytes.copy(pristine, to: source)
        let pristineBytes = StoreBytes.contents(of: pristine)
        let destination = destinationDirectory.appendingPathComponent("store.\(c.destinationType)")
        let storectl = try BuiltTools.require(BuiltTools.storectl, "storectl")
        let arguments = c.arguments(source: source, destination: destination)
        let command = [storectl.path] + arguments
        if c.operation == .replace { try StoreBytes.copy(other, to: destination) }

        // One complete run first, timed or traced to choose the kill points (its result is checked like the
        // final run's, below).
        var random = SeededGenerator(series: "\(c) \(plan)")
        let (first, killPoints) = try plan.points(for: command, count: points, random: &random)
        #expect(first.status == 0, "\(first.summary)")
        var complete: Set<[String]> = []

        for (point, killPoint) in killPoints.enumerated() {
            let killPoint = try KillPlan.refresh(killPoint, index: point, command: command)
            StoreBytes.removeAll(at: destination)
            let hadOther = c.operation == .replace || Bool.random(using: &random)
            if hadOther { try StoreBytes.copy(other, to: destination) }
            let stagingBefore = StoreBytes.staging(in: destinationDirectory)
            let (child, killed) = try killPoint.run(command)
            tally.tried += 1
            if killed { tally.killed += 1 }
            let at = "point \(point) (\(hadOther ? "over another store" : "no destination"), \(killPoint), \(killed ? "killed" : "finished"))"
            if !killed && child.status != 0 { tally.failures.append("\(at): \(child.summary)") }

            if StoreBytes.contents(of: source) != pristineBytes { tally.failures.append("\(at): the source's files changed") }
            if !StoreBytes.staging(in: sourceDirectory).isEmpty { tally.failures.append("\(at): staging files beside the source") }

            if !FileManager.default.fileExists(atPath: destination.path) {
                tally.note(hadOther ? "destination absent (between the swap's renames)" : "destination absent")
                if !killed { tally.failures.append("\(at): no destination after a complete run") }
                let strays = entries(of: destination)
                if !strays.isEmpty { tally.failures.append("\(at): destination absent but \(strays) remain") }
            } else if hadOther && StoreBytes.contents(of: destination) == otherBytes {
                tally.note("destination as before")
                if !killed { tally.failures.append("\(at): the destination was not replaced by a complete run") }
            } else if complete.contains(StoreBytes.fingerprint(of: destination)) {
                tally.note("destination complete")
            } else if let p = StoreChecks.problems(at: destination, type: c.destinationType, identicalTo: pristine) {
                tally.failures.append("\(at): \(p)")
            } else {
                complete.insert(StoreBytes.fingerprint(of: destination))
                tally.note("destination complete")
            }

            let stagingAfter = StoreBytes.staging(in: destinationDirectory)
            if !killed && !stagingAfter.isEmpty { tally.failures.append("\(at): staging left after a complete run: \(stagingAfter.sorted())") }
            let surviving = survivingLeftovers(before: stagingBefore, after: stagingAfter)
            if !surviving.isEmpty { tally.failures.append("\(at): an earlier run's staging survived this run's cleanup: \(surviving.sorted())") }
        }

        // The next operation on the path, to the end: leaves no staging, a complete destination, the source intact.
        let last = try Child.storectl(arguments)
        if last.status != 0 { tally.failures.append("final run: \(last.summary)") }
        if let p = StoreChecks.problems(at: destination, type: c.destinationType, identicalTo: pristine) {
            tally.failures.append("final run: \(p)")
        }
        let left = StoreBytes.staging(in: destinationDirectory)
        if !left.isEmpty { tally.failures.append("final run: staging left: \(left.sorted())") }
        // (The source was compared byte for byte with the original after every run.)
        return tally
    }

    // MARK: relocate

    /// Kills `storectl relocate` at random points. After each kill at least one path holds the store, a store at
    /// the new path is always complete, a store only at the old path is byte-for-byte the original, and the next
    /// relocate finishes the move (the series continues from whatever state the kill left).
    static func relocateSeries(_ type: String, plan: KillPlan, points: Int) throws -> CrashTally {
        var tally = CrashTally(label: "relocate \(type) (\(plan))")
        let scratch = try TemporaryDirectory("reliability-crash-relocate-\(type)")
        defer { scratch.remove() }
        let pristine = try Fixtures.library(type)
        let pristineBytes = StoreBytes.contents(of: pristine)
        let oldDirectory = try scratch.directory("old")
        let newDirectory = try scratch.directory("new")
        let old = oldDirectory.appendingPathComponent("library.\(type)")
        let new = newDirectory.appendingPathComponent("library.\(type)")
        let storectl = try BuiltTools.require(BuiltTools.storectl, "storectl")
        let command = [storectl.path, "relocate", old.path, new.path, "-q"]

        func reset() throws {
            StoreBytes.removeAll(at: new)
            StoreBytes.removeAll(at: old)
            try StoreBytes.copy(pristine, to: old)
        }
        func checkFinished(_ label: String, compare: Bool = true) {
            if Backends.storeType(at: old) != nil || FileManager.default.fileExists(atPath: old.path) {
                tally.failures.append("\(label): the old path still exists after a complete relocation")
            } else if !entries(of: old).isEmpty {
                tally.failures.append("\(label): \(entries(of: old)) remain beside the old path after a complete relocation")
            }
            if compare, let p = StoreChecks.problems(at: new, type: type, identicalTo: pristine) { tally.failures.append("\(label): \(p)") }
            for d in [oldDirectory, newDirectory] where !StoreBytes.staging(in: d).isEmpty {
                tally.failures.append("\(label): staging left in \(d.lastPathComponent)/: \(StoreBytes.staging(in: d).sorted())")
            }
        }

        try reset()
        var random = SeededGenerator(series: "relocate \(type) \(plan)")
        let (first, killPoints) = try plan.points(for: command, count: points, random: &random)
        #expect(first.status == 0, "\(first.summary)")
        checkFinished("first complete run", compare: false)
        var complete: Set<[String]> = []

        for (point, killPoint) in killPoints.enumerated() {
            let oldHolds = Backends.storeType(at: old) != nil
            if !oldHolds { try reset() }    // the last move finished: start another
            let resuming = oldHolds && Backends.storeType(at: new) != nil
            let stagingBefore = StoreBytes.staging(in: newDirectory)
            let (child, killed) = try killPoint.run(command)
            tally.tried += 1
            if killed { tally.killed += 1 }
            let at = "point \(point) (\(resuming ? "resuming" : "fresh"), \(killPoint), \(killed ? "killed" : "finished"))"
            if !killed && child.status != 0 { tally.failures.append("\(at): \(child.summary)") }

            let oldStore = Backends.storeType(at: old) != nil
            let newStore = Backends.storeType(at: new) != nil
            switch (oldStore, newStore) {
            case (false, false):
                tally.failures.append("\(at): the store is lost: neither path holds it")
            case (true, false):
                if StoreBytes.contents(of: old) == pristineBytes {
                    tally.note("old only")
                } else if let p = StoreChecks.problems(at: old, type: type, identicalTo: pristine) {
                    tally.failures.append("\(at): the old store changed: \(p)")
                } else {
                    // Removing the old store starts by folding SQLite's -wal into the database (so a removal
                    // killed halfway never leaves a database without its log's commits): different bytes, the
                    // same store. Its records, IDs, metadata and history are compared instead.
                    tally.note("old only, its -wal folded by an interrupted removal (same store)")
                }
            case (false, true):
                tally.note("new only")
                // The old store leaves its path in one step (its main file last, or its directory renamed aside).
                let strays = entries(of: old)
                if !strays.isEmpty { tally.failures.append("\(at): the old store is gone but \(strays) remain") }
            case (true, true):
                tally.note("both")
            }
            if newStore && !complete.contains(StoreBytes.fingerprint(of: new)) {
                if let p = StoreChecks.problems(at: new, type: type, identicalTo: pristine) {
                    tally.failures.append("\(at): \(p)")
                } else {
                    complete.insert(StoreBytes.fingerprint(of: new))
                }
            }
            if !killed { checkFinished(at, compare: false) }    // (the new store was just checked)
            let surviving = survivingLeftovers(before: stagingBefore, after: StoreBytes.staging(in: newDirectory))
            if !surviving.isEmpty { tally.failures.append("\(at): an earlier run's staging survived this run's cleanup: \(surviving.sorted())") }
        }

        let last = try Child.storectl(Array(command.dropFirst()))
        if last.status != 0 { tally.failures.append("final run: \(last.summary)") }
        checkFinished("final run")
        return tally
    }

    // MARK: save loop

    /// Kills `storestress saves` at random points. After each kill the store passes its integrity check and the
    /// verifier and holds exactly the saves 1…n with n at least the last one printed (and at most one more: the
    /// save in flight may have committed before its line was printed), each whole; n never goes down from one
    /// kill to the next. The loop resumes from the store's counter each time.
    static func saveSeries(_ type: String, plan: KillPlan, points: Int) throws -> CrashTally {
        var tally = CrashTally(label: "context saves \(type) (\(plan))")
        let scratch = try TemporaryDirectory("reliability-crash-saves-\(type)")
        defer { scratch.remove() }
        let store = scratch.path("saves.\(type)")
        try StoreBytes.copy(try Fixtures.empty(type), to: store)
        let storestress = try BuiltTools.require(BuiltTools.storestress, "storestress").path
        let loop = [storestress, "saves", store.path, "--writer", "w", "--history"]
        var random = SeededGenerator(series: "saves \(type) \(plan)")
        // A complete run of five saves (timed or traced: each later run resumes the counter and repeats the pattern
        // of mutations, so a traced boundary falls at the same step of some save).
        let (first, killPoints) = try plan.points(for: loop + ["--count", "5"], count: points, random: &random)
        #expect(first.status == 0, "\(first.summary)")
        let killPointsForLoop: [KillPoint] = plan == .timed
            ? (0..<points).map { _ in .delay(Double.random(in: 0...1.2, using: &random)) } : killPoints
        var previous = 5

        for (point, killPoint) in killPointsForLoop.enumerated() {
            let stagingBefore = StoreBytes.staging(in: scratch.url)
            // A timed kill stops an endless loop; a syscall kill gets a bounded one, longer than the traced run, in
            // case this run never makes the traced call (one made only by a new store's first open, say).
            let command = plan == .timed ? loop : loop + ["--count", "\(previous + 8)"]
            let (child, killed) = try killPoint.run(command)
            tally.tried += 1
            if killed { tally.killed += 1 }
            let printed = SaveLog.lastPrinted(child.stdout)
            let at = "point \(point) (\(killPoint), last printed save \(printed))"
            if !killed && (plan == .timed || child.status != 0) {
                tally.failures.append("\(at): the save loop ended on its own: \(child.summary)")
            }

            let log = SaveLog(store: store, writers: ["w"], history: ["w"])
            tally.failures += log.problems.map { "\(at): \($0)" }
            let n = log.committed["w"] ?? 0
            // (A run killed before its first save prints nothing; it started from the previous count.)
            let reported = max(printed, previous)
            if n < reported { tally.failures.append("\(at): save \(reported) was reported committed, the store holds \(n)") }
            if n > reported + 1 { tally.failures.append("\(at): the store holds \(n) saves, only \(reported) were reported") }
            if n < previous { tally.failures.append("\(at): the store went back from \(previous) to \(n) saves") }
            tally.note(n > reported ? "save in flight committed" : "save in flight lost (never reported)")
            previous = n
            let surviving = survivingLeftovers(before: stagingBefore, after: StoreBytes.staging(in: scratch.url))
            if !surviving.isEmpty { tally.failures.append("\(at): an earlier save's staging survived the next run: \(surviving.sorted())") }
        }

        // A last run to the end: two more saves, then a clean exit with nothing staged.
        let last = try Child.storestress(["saves", store.path, "--writer", "w", "--history", "--count", "\(previous + 2)"])
        last.wait()
        if last.status != 0 { tally.failures.append("final run: \(last.summary)") }
        let log = SaveLog(store: store, writers: ["w"], history: ["w"])
        tally.failures += log.problems.map { "final run: \($0)" }
        if log.committed["w"] != previous + 2 { tally.failures.append("final run: \(log.committed["w"] ?? 0) saves, expected \(previous + 2)") }
        let left = StoreBytes.staging(in: scratch.url)
        if !left.isEmpty { tally.failures.append("final run: staging left: \(left.sorted())") }
        return tally
    }
}
