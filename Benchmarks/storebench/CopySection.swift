import Foundation
import StoreAPI

/// Same-type copy (`storectl copy`, the backend's fast path) beside the engines' own copy tools, each a whole
/// process timed from start to exit: `sqlite3 SRC '.backup DST'`, `mdb_copy` and `mdb_copy -c` (our LMDB copy
/// compacts, so `-c` is its reference), and `cp` of the store's files followed by `sync` of the copies (our copies
/// are fsynced before they are moved into place).
enum CopySection {
    static let maxRatio = 1.2

    static func run(_ env: BenchEnvironment) throws {
        for type in env.types {
            let src = env.source(type)
            var rss: [Double] = []
            let ours = try env.median {
                let dst = env.destination("copy.\(type)")
                defer { env.remove(dst) }
                let o = try env.product.copy(src, dst)
                if rss.isEmpty { env.verify("copy \(type)", copy: dst, against: type) }
                rss.append(Double(o.peakRSS))
                return o.timing
            }
            let cp = try env.median { try copyFiles(env, type: type) }
            switch type {
            case "sqlite":
                let backup = try env.median {
                    let dst = env.destination("backup.sqlite")
                    defer { env.remove(dst) }
                    return try ChildProcess.tool("sqlite3", [src.path, ".backup '\(dst.path)'"]).timing
                }
                env.table.add(.timed("copy sqlite", records: env.total, ours: ours, reference: backup,
                                     referenceName: "sqlite3 SRC '.backup DST'", maxRatio: maxRatio, peakRSS: Int(Measure.median(rss))))
            case "lmdb":
                let compact = try env.median { try mdbCopy(env, src: src, compact: true) }
                let plain = try env.median { try mdbCopy(env, src: src, compact: false) }
                env.table.add(.timed("copy lmdb", records: env.total, ours: ours, reference: compact,
                                     referenceName: "mdb_copy -c (compacting, as ours)", maxRatio: maxRatio, peakRSS: Int(Measure.median(rss))))
                env.table.add(.timed("copy lmdb", records: env.total, ours: ours, reference: plain, referenceName: "mdb_copy (plain)"))
            default:
                env.table.add(.timed("copy xml", records: env.total, ours: ours, reference: cp,
                                     referenceName: "cp + sync of the file", maxRatio: maxRatio, peakRSS: Int(Measure.median(rss))))
                continue
            }
            env.table.add(.timed("copy \(type)", records: env.total, ours: ours, reference: cp, referenceName: "cp + sync of the store's files"))
        }
    }

    private static func mdbCopy(_ env: BenchEnvironment, src: URL, compact: Bool) throws -> Timing {
        let dst = env.destination("mdbcopy.lmdb")
        defer { env.remove(dst) }
        try FileManager.default.createDirectory(at: dst, withIntermediateDirectories: false)
        return try ChildProcess.tool("mdb_copy", (compact ? ["-c"] : []) + [src.path, dst.path]).timing
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
