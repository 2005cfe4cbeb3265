import Foundation
import StoreTestSupport
import Testing

/// The crash harness: every write path is SIGKILLed at seeded random points and the store promises are checked
/// after each kill — at random moments (real timing), and on entry to random file-system mutations (delivered by
/// strace, no hook in the code). `STORE_CRASH_POINTS=100` runs the full size (100 timed points per series and every
/// mutation boundary); the default is sized for CI. `STORE_CRASH_SEED` replays a run. Each series prints its tally.
@Suite("Crash kills")
struct CrashKillTests {
    @Test("storectl convert, copy and replace killed at random moments", arguments: TransferCase.all)
    func transfer(_ c: TransferCase) throws {
        let tally = try CrashHarness.transferSeries(c, plan: .timed, points: RunSize.crashPoints)
        tally.report()
        #expect(tally.tried == RunSize.crashPoints)
    }

    @Test("storectl convert, copy and replace killed at file-system mutations", .enabled(if: Syscalls.strace != nil, Syscalls.skipReason),
          arguments: TransferCase.all)
    func transferAtSyscalls(_ c: TransferCase) throws {
        let tally = try CrashHarness.transferSeries(c, plan: .syscalls, points: RunSize.syscallPoints)
        tally.report()
        #expect(tally.tried > 0)
    }

    @Test("storectl relocate killed at random moments", arguments: Backends.types)
    func relocate(_ type: String) throws {
        let tally = try CrashHarness.relocateSeries(type, plan: .timed, points: RunSize.crashPoints)
        tally.report()
        #expect(tally.tried == RunSize.crashPoints)
    }

    @Test("storectl relocate killed at file-system mutations", .enabled(if: Syscalls.strace != nil, Syscalls.skipReason),
          arguments: Backends.types)
    func relocateAtSyscalls(_ type: String) throws {
        let tally = try CrashHarness.relocateSeries(type, plan: .syscalls, points: RunSize.syscallPoints)
        tally.report()
        #expect(tally.tried > 0)
    }

    @Test("a process looping context saves killed at random moments", arguments: Backends.types)
    func saves(_ type: String) throws {
        let tally = try CrashHarness.saveSeries(type, plan: .timed, points: RunSize.crashPoints)
        tally.report()
        #expect(tally.tried == RunSize.crashPoints)
    }

    @Test("a process looping context saves killed at file-system mutations", .enabled(if: Syscalls.strace != nil, Syscalls.skipReason),
          arguments: Backends.types)
    func savesAtSyscalls(_ type: String) throws {
        let tally = try CrashHarness.saveSeries(type, plan: .syscalls, points: RunSize.syscallPoints)
        tally.report()
        #expect(tally.tried > 0)
    }
}

/// The narrowest crash windows of relocate, hit on purpose: a kill at each file-system mutation of the old store's
/// removal, then a resumed relocate. The SQLite fixture keeps commits only in its hot `-wal`, so a removal that
/// deleted the log before the database would leave a stale old store that resuming copies over the new one.
@Suite("Relocate resumed after a kill in the old store's removal")
struct RelocateResumeTests {
    @Test("every mutation of the old path", .enabled(if: Syscalls.strace != nil, Syscalls.skipReason), arguments: Backends.types)
    func killedWhileRemovingOld(_ type: String) throws {
        let scratch = try TemporaryDirectory("reliability-resume-\(type)")
        defer { scratch.remove() }
        let pristine = try Fixtures.library(type)
        let old = try scratch.directory("old").appendingPathComponent("library.\(type)")
        let new = try scratch.directory("new").appendingPathComponent("library.\(type)")
        let command = [try BuiltTools.require(BuiltTools.storectl, "storectl").path, "relocate", old.path, new.path, "-q"]
        func reset() throws {
            StoreBytes.removeAll(at: new)
            StoreBytes.removeAll(at: old)
            try StoreBytes.copy(pristine, to: old)
        }
        try reset()
        let (first, all) = try Syscalls.boundaries(of: command)
        #expect(first.status == 0, "\(first.summary)")
        let targets = all.filter { $0.call.contains(old.deletingLastPathComponent().path + "/") }
        #expect(!targets.isEmpty, "no mutation of the old path among \(all.count)")
        for boundary in targets {
            try reset()
            let (child, killed) = try KillPoint.syscall(boundary).run(command)
            #expect(killed, "\(boundary): \(child.summary)")
            let resumed = try Child.storectl(Array(command.dropFirst()))
            #expect(resumed.status == 0, "\(boundary): \(resumed.summary)")
            let problems = StoreChecks.problems(at: new, type: type, identicalTo: pristine)
            #expect(problems == nil, "killed \(boundary), then resumed: \(problems ?? "")")
            #expect(Backends.storeType(at: old) == nil, "\(boundary): the old store is still there")
            // Nothing of it either: not an emptied directory, not a sidecar, not a staging leftover.
            #expect(!FileManager.default.fileExists(atPath: old.path), "\(boundary): the old path still exists")
            #expect(CrashHarness.entries(of: old).isEmpty, "\(boundary): \(CrashHarness.entries(of: old)) remain at the old path")
            #expect(StoreBytes.staging(in: old.deletingLastPathComponent()).isEmpty,
                    "\(boundary): staging left beside the old path: \(StoreBytes.staging(in: old.deletingLastPathComponent()).sorted())")
        }
        FileHandle.standardOutput.write(Data("relocate \(type): killed at \(targets.count) mutations of the old store's removal, resumed each\n".utf8))
    }
}

/// `storectl destroy` killed at each of its file-system mutations: the path holds the whole store or nothing of it,
/// and running destroy again leaves nothing at all — no emptied directory, no sidecar, no staging.
@Suite("Destroy killed at each file-system mutation")
struct DestroyKillTests {
    @Test("every mutation of the store's path", .enabled(if: Syscalls.strace != nil, Syscalls.skipReason), arguments: Backends.types)
    func killedWhileDestroying(_ type: String) throws {
        let scratch = try TemporaryDirectory("reliability-destroy-\(type)")
        defer { scratch.remove() }
        let pristine = try Fixtures.library(type)
        let directory = try scratch.directory("stores")
        let store = directory.appendingPathComponent("library.\(type)")
        let command = [try BuiltTools.require(BuiltTools.storectl, "storectl").path, "destroy", store.path, "-q"]
        try StoreBytes.copy(pristine, to: store)
        let (first, all) = try Syscalls.boundaries(of: command)
        #expect(first.status == 0, "\(first.summary)")
        #expect(CrashHarness.entries(of: store).isEmpty, "a complete destroy left \(CrashHarness.entries(of: store))")
        let targets = all.filter { $0.call.contains(directory.path + "/") }
        #expect(!targets.isEmpty, "no mutation of the store among \(all.count)")
        for boundary in targets {
            StoreBytes.removeAll(at: store)
            try StoreBytes.copy(pristine, to: store)
            let (child, killed) = try KillPoint.syscall(boundary).run(command)
            #expect(killed, "\(boundary): \(child.summary)")
            let whole = Backends.storeType(at: store) != nil
            if whole {
                let problems = StoreChecks.problems(at: store, type: type, identicalTo: pristine)
                #expect(problems == nil, "killed \(boundary), the store left is not whole: \(problems ?? "")")
            } else {
                #expect(CrashHarness.entries(of: store).isEmpty, "killed \(boundary): part of the store remains: \(CrashHarness.entries(of: store))")
            }
            let again = try Child.storectl(Array(command.dropFirst()))
            // A whole store is destroyed now; a path already emptied is reported as holding no store.
            #expect((again.status == 0) == whole, "\(boundary), destroyed again: \(again.summary)")
            #expect(CrashHarness.entries(of: store).isEmpty, "\(boundary), destroyed again: \(CrashHarness.entries(of: store)) remain")
            #expect(StoreBytes.staging(in: directory).isEmpty,
                    "\(boundary), destroyed again: staging left: \(StoreBytes.staging(in: directory).sorted())")
        }
        FileHandle.standardOutput.write(Data("destroy \(type): killed at \(targets.count) mutations, destroyed again each\n".utf8))
    }
}
