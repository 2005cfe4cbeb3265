import Foundation
import StoreAPI

/// Same-type copy (`storectl copy`, the backend's fast path) beside the engines' own copy tools, each a whole
/// process timed from start to exit: `sqlite3 SRC '.backup DST'`, `mdb_copy` and `mdb_copy -c` (our LMDB copy
/// compacts, so `-c` is its reference), and `cp` of the store's files followed by `sync` of the copies (our copies
/// are fsynced before they are moved into place). A second row per type times the same copy as a library call
/// inside a fresh process, which shows how much of the command's time is storectl's own start-up.
enum CopySection {
    static let maxRatio = 1.2

    static func run(_ env: BenchEnvironment) throws {
        for type in env.types {
            let src = env.source(type)
            // Each run of ours beside a run of the reference the target is set against (in turn first and
            // second), so a machine whose speed drifts moves both alike.
            var rss: [Double] = []
            var ours: [Timing] = []
            var references: [Timing] = []
            for run in 0..<env.runs {
                if run % 2 == 1 { references.append(try targetReference(env, type: type, src: src)) }
                let dst = env.destination("copy.\(type)")
                let o = try env.product.copy(src, dst)
                if rss.isEmpty { env.verify("copy \(type)", copy: dst, against: type) }
                env.remove(dst)
                rss.append(Double(o.peakRSS))
                ours.append(o.timing)
                if run % 2 == 0 { references.append(try targetReference(env, type: type, src: src)) }
            }
            let (median, reference) = (Timing.median(ours), Timing.median(references))
            let peak = Int(Measure.median(rss))
            // The same copy as a library call (StoreOperations.copyStore timed inside a fresh process: its first
            // use of everything, without storectl's start-up and argument parsing), beside the same reference process.
            let library = try env.median {
                let dst = env.destination("apicopy.\(type)")
                defer { env.remove(dst) }
                return try ChildProcess.worker(["copy", src.path, dst.path]).reportedTiming
            }
            env.table.add(.timed("copy \(type) (library call)", records: env.total, ours: library, reference: reference,
                                 referenceName: Self.targetReferenceName(type) + ", whole process"))
            switch type {
            case "sqlite":
                env.table.add(.timed("copy sqlite", records: env.total, ours: median, reference: reference,
                                     referenceName: "sqlite3 SRC '.backup DST'", maxRatio: maxRatio, peakRSS: peak))
            case "lmdb":
                env.table.add(.timed("copy lmdb", records: env.total, ours: median, reference: reference,
                                     referenceName: "mdb_copy -c (compacting, as ours)", maxRatio: maxRatio, peakRSS: peak))
                let plain = try env.median { try mdbCopy(env, src: src, compact: false) }
                env.table.add(.timed("copy lmdb", records: env.total, ours: median, reference: plain, referenceName: "mdb_copy (plain)"))
                // mdb_copy writes around the page cache but never fsyncs; ours is durable before it is in place.
                let durable = try env.median { try mdbCopy(env, src: src, compact: true, sync: true) }
                env.table.add(.timed("copy lmdb", records: env.total, ours: median, reference: durable,
                                     referenceName: "mdb_copy -c + sync of the copy (durable, as ours)"))
            default:
                env.table.add(.timed("copy xml", records: env.total, ours: median, reference: reference,
                                     referenceName: "cp + sync of the file", maxRatio: maxRatio, peakRSS: peak))
                continue
            }
            let cp = try env.median { try copyFiles(env, type: type) }
            env.table.add(.timed("copy \(type)", records: env.total, ours: median, reference: cp, referenceName: "cp + sync of the store's files"))
        }
    }

    private static func targetReferenceName(_ type: String) -> String {
        switch type {
        case "sqlite": "sqlite3 SRC '.backup DST'"
        case "lmdb": "mdb_copy -c"
        default: "cp + sync of the file"
        }
    }

    /// The engine's own copy the target is set against: `.backup` for SQLite, `mdb_copy -c` for LMDB, and for a
    /// single file (XML) copying and syncing it.
    private static func targetReference(_ env: BenchEnvironment, type: String, src: URL) throws -> Timing {
        switch type {
        case "sqlite":
            let dst = env.destination("backup.sqlite")
            defer { env.remove(dst) }
            return try ChildProcess.tool("sqlite3", [src.path, ".backup '\(dst.path)'"]).timing
        case "lmdb": return try mdbCopy(env, src: src, compact: true)
        default: return try copyFiles(env, type: type)
        }
    }

    /// `mdb_copy` into a new directory; with `sync`, then `sync` of the copied data file and the directory.
    private static func mdbCopy(_ env: BenchEnvironment, src: URL, compact: Bool, sync: Bool = false) throws -> Timing {
        let dst = env.destination("mdbcopy.lmdb")
        defer { env.remove(dst) }
        try FileManager.default.createDirectory(at: dst, withIntermediateDirectories: false)
        let copy = try ChildProcess.tool("mdb_copy", (compact ? ["-c"] : []) + [src.path, dst.path]).timing
        guard sync else { return copy }
        return copy + (try ChildProcess.tool("sync", [dst.appendingPathComponent("data.mdb").path, dst.path]).timing)
    }

    /// `cp -r` of every file the store owns, then `sync` of every copied file; seconds of both processes.
    private static func copyFiles(_ env: BenchEnvironment, type: String) throws -> Timing {
        let backend = try BackendRegistry.shared.backend(for: type)
        let files = backend.ownedFiles(ofStoreAt: env.source(type))
        let dir = env.destination("cp-\(type)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: false)
        defer { env.remove(dir) }
        let copy = try ChildProcess.tool("cp", ["-r"] + files.map(\.path) + [dir.path])
        var copied: [String] = []
        if let walker = FileManager.default.enumerator(atPath: dir.path) {
            while let relative = walker.nextObject() as? String {
                let path = dir.appendingPathComponent(relative).path
                var isDirectory: ObjCBool = false
                if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue { copied.append(path) }
            }
        }
        let sync = try ChildProcess.tool("sync", copied)
        return copy.timing + sync.timing
    }
}
