import CLMDB
import Foundation
import StoreAPI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where an LMDB environment's files are, in one of liblmdb's two layouts.
///
/// - Directory form (the default): the store URL is a directory holding `data.mdb` and `lock.mdb`.
/// - File form (`MDB_NOSUBDIR`): the store URL is the data file itself and the lock file is `<file>-lock`.
struct LMDBLocation: Sendable, Hashable {
    /// The store URL as given.
    let url: URL
    /// Whether the URL is a directory holding `data.mdb` and `lock.mdb`.
    let isDirectory: Bool
    /// The data file.
    let dataFile: URL
    /// The lock file.
    let lockFile: URL

    init(url: URL, isDirectory: Bool) {
        self.url = url
        self.isDirectory = isDirectory
        // Built once: appending a path component may ask the file system whether it is a directory.
        dataFile = isDirectory ? url.appendingPathComponent("data.mdb", isDirectory: false) : url
        lockFile = isDirectory
            ? url.appendingPathComponent("lock.mdb", isDirectory: false)
            : url.deletingLastPathComponent().appendingPathComponent(url.lastPathComponent + "-lock", isDirectory: false)
    }
    /// The path given to `mdb_env_open` and `mdb_env_copy`.
    var environmentPath: String { url.path }
    /// The environment flag for the layout.
    var layoutFlags: UInt32 { isDirectory ? 0 : UInt32(MDB_NOSUBDIR) }

    /// The layout of what exists at `url`: a directory is the directory form, a regular file the file form.
    /// `nil` when nothing is there.
    static func existing(_ url: URL) -> LMDBLocation? {
        var st = stat()
        guard stat(url.path, &st) == 0 else { return nil }
        return LMDBLocation(url: url, isDirectory: (st.st_mode & S_IFMT) == S_IFDIR)
    }

    /// The layout of a new store at `url`: the file form when asked for, or when the name ends in `.mdb` (the
    /// extension of an LMDB data file); otherwise the directory form.
    static func forNewStore(at url: URL, fileForm: Bool) -> LMDBLocation {
        LMDBLocation(url: url, isDirectory: !(fileForm || url.pathExtension.lowercased() == "mdb"))
    }
}

/// A file's identity on its device, so one environment is opened once per process whatever path spelling
/// reaches it (liblmdb: closing a second handle on the same files drops the first one's `fcntl` locks).
struct FileIdentity: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64

    init?(path: String) {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
    }
}

/// Small file-system queries used before anything is opened.
enum FileProbe {
    static func exists(_ url: URL) -> Bool {
        var st = stat()
        return stat(url.path, &st) == 0
    }

    static func isDirectory(_ url: URL) -> Bool {
        var st = stat()
        return stat(url.path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    static func isWritable(_ url: URL) -> Bool { access(url.path, W_OK) == 0 }

    static func isSymbolicLink(_ url: URL) -> Bool {
        var st = stat()
        return lstat(url.path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFLNK
    }

    /// The names in a directory, or `nil` when it cannot be listed.
    static func contents(of directory: URL) -> [String]? {
        try? FileManager.default.contentsOfDirectory(atPath: directory.path)
    }

    static func errnoString() -> String { String(cString: strerror(errno)) }

    /// Makes the staging directory `staging` for the store at `store`; a failure (a name too long once the staging
    /// prefix is added, a read-only or full directory) is a ``StoreError`` naming the store.
    static func makeStagingDirectory(_ staging: URL, for store: URL) throws {
        guard mkdir(staging.path, 0o755) == 0 else {
            let code = errno
            let reason = "creating \(staging.lastPathComponent): \(String(cString: strerror(code)))"
            if code == EACCES || code == EROFS || code == EPERM { throw StoreError.readOnly(store, reason: reason) }
            throw StoreError.io(store, operation: "staging the store", reason: reason)
        }
    }
}
