import CSQLite
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A database file opened through SQLite's default VFS instead of `open(2)`, for looking at a file this process may
/// also have open as a database.
///
/// SQLite's locks are POSIX `fcntl` locks, which belong to the process: closing *any* descriptor of a file drops
/// every lock the process holds on it. A plain `open`/`close` of a live database (to read its header, say) would
/// silently release this process's shared lock — after which another process closing its connection believes it
/// is the last one, checkpoints and deletes the `-wal` this process is still writing to, and later commits are
/// lost. The VFS keeps one lock table per file and defers closing a descriptor while locks are held, so opening,
/// reading, locking and closing through it disturbs no connection. Nothing is created, recovered or written.
public final class VFSFile {
    private let vfs: UnsafeMutablePointer<sqlite3_vfs>
    private let name: sqlite3_filename
    private let raw: UnsafeMutableRawPointer
    private let file: UnsafeMutablePointer<sqlite3_file>
    private let methods: UnsafePointer<sqlite3_io_methods>
    /// Whether the file is open for writing (a read-write open falls back to read-only when it must).
    public let isWritable: Bool

    /// Opens `url` as a main database file; `nil` (with `errno` set by the failed open) when it cannot be opened.
    /// Symbolic links are resolved first, as `sqlite3_open` does (the VFS itself refuses to open through one).
    public init?(_ url: URL, readWrite: Bool) {
        guard let resolved = realpath(url.path, nil) else { return nil }
        defer { free(resolved) }
        guard let vfs = sqlite3_vfs_find(nil), let xOpen = vfs.pointee.xOpen,
              let name = sqlite3_create_filename(resolved, "", "", 0, nil)
        else { return nil }
        let size = max(Int(vfs.pointee.szOsFile), MemoryLayout<sqlite3_file>.size)
        let raw = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        let file = raw.bindMemory(to: sqlite3_file.self, capacity: 1)
        var outFlags: Int32 = 0
        let flags = SQLITE_OPEN_MAIN_DB | (readWrite ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY)
        let rc = xOpen(vfs, name, file, flags, &outFlags)
        guard let methods = file.pointee.pMethods else {
            let code = errno
            raw.deallocate()
            sqlite3_free_filename(name)
            errno = code
            return nil
        }
        self.vfs = vfs
        self.name = name
        self.raw = raw
        self.file = file
        self.methods = methods
        isWritable = readWrite && outFlags & SQLITE_OPEN_READONLY == 0
        if rc != SQLITE_OK { return nil }
    }

    deinit {
        _ = methods.pointee.xClose?(file)
        raw.deallocate()
        sqlite3_free_filename(name)
    }

    /// The file's size in bytes, or `nil` when it cannot be read.
    public var size: Int? {
        var n: sqlite3_int64 = 0
        guard let xFileSize = methods.pointee.xFileSize, xFileSize(file, &n) == SQLITE_OK else { return nil }
        return Int(n)
    }

    /// Reads `count` bytes from the start of the file (fewer when it is shorter); `nil` on an I/O error.
    public func readPrefix(_ count: Int) -> [UInt8]? {
        guard let size, let xRead = methods.pointee.xRead else { return nil }
        let n = min(count, size)
        guard n > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: n)
        let rc = bytes.withUnsafeMutableBytes { xRead(file, $0.baseAddress, Int32(n), 0) }
        return rc == SQLITE_OK ? bytes : nil
    }

    /// Takes a lock level (`SQLITE_LOCK_SHARED`, `SQLITE_LOCK_EXCLUSIVE`); returns SQLite's result code.
    public func lock(_ level: Int32) -> Int32 { methods.pointee.xLock?(file, level) ?? SQLITE_MISUSE }

    /// Drops to a lock level (`SQLITE_LOCK_NONE` releases everything this handle holds).
    public func unlock(_ level: Int32) { _ = methods.pointee.xUnlock?(file, level) }

    /// Whether another connection — in another process, or through another handle in this one — holds a lock on
    /// the file: takes the shared and then the exclusive lock for an instant, writing nothing, and releases them.
    /// In WAL mode every connection holds a shared lock from its first read until it closes, so this finds the
    /// open connections; in a rollback journal mode connections lock only during transactions. `false` for a
    /// handle opened read-only (it cannot take the exclusive lock).
    public func isLockedByAnotherConnection() -> Bool {
        guard isWritable else { return false }
        defer { unlock(SQLITE_LOCK_NONE) }
        let shared = lock(SQLITE_LOCK_SHARED)
        if shared == SQLITE_BUSY { return true }    // a writer is committing or checkpointing right now
        guard shared == SQLITE_OK else { return false }
        return lock(SQLITE_LOCK_EXCLUSIVE) == SQLITE_BUSY
    }
}
