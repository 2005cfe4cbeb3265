import CLMDB
import Foundation
@_spi(BackendKit) import StoreAPI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Destroying and copying stores at the file level.
enum LMDBStoreFiles {
    // MARK: Destroy

    /// Deletes the data and lock files, then the directory when creating the store made it and it is now empty.
    /// Refuses anything that is not one of our stores, and a store that is open in this process; also one open in
    /// another process unless `force` (liblmdb there keeps working on the deleted files until it closes them).
    static func destroy(_ url: URL, force: Bool = false) throws {
        let inspection = LMDBStoreInspector.inspect(url)
        guard case .store(let location, _, let info) = inspection else {
            throw LMDBStoreInspector.refusal(inspection, url: url) ?? StoreError.storeNotFound(url)
        }
        guard let identity = LMDBStoreInspector.identity(of: location) else { throw StoreError.storeNotFound(url) }
        // Holding the registry's lock: nobody in this process can open the store while its files go.
        try EnvironmentRegistry.withEnvironment(identity) { env in
            if env != nil {
                throw StoreError.locked(url, reason: "the store is open in this process; close it before destroying it")
            }
            if !force, let pid = InUseProbe.processHolding(location.lockFile) {
                throw StoreError.locked(url, reason: "the store is open in another process (pid \(pid))")
            }
            try removeFiles(of: location, createdDirectory: info.createdDirectory)
        }
    }

    /// Removes a closed store's files, leaving the path empty in one atomic step wherever that can be done.
    ///
    /// A directory the store made is renamed aside to a staging name first: interrupted after that rename, the
    /// path holds nothing, and what was moved aside is staging the next operation near the path removes.
    /// Deleting the files in place would leave, when interrupted before the directory's `rmdir`, an empty
    /// directory at the store's path that no later operation could tell from one a user made (a relocation
    /// resumed after such a kill finished with the old path still there). A directory holding anything besides
    /// the store's two files stays where it is, without them, as does a directory the store did not make.
    ///
    /// Otherwise the lock file goes first: interrupted after it, the store is still whole (liblmdb makes a new
    /// lock file on open).
    static func removeFiles(of location: LMDBLocation, createdDirectory: Bool) throws {
        var files = location
        let ownDirectory = location.isDirectory && createdDirectory
        let aside = AtomicFile.stagingURL(for: location.url)
        let movedAside = ownDirectory && holdsOnlyStoreFiles(location) && rename(location.url.path, aside.path) == 0
        if movedAside {
            try? AtomicFile.fsyncDirectory(of: location.url)
            files = LMDBLocation(url: aside, isDirectory: true)
        }
        for file in [files.lockFile, files.dataFile] where FileProbe.exists(file) {
            if unlink(file.path) != 0 {
                throw StoreError.io(file, operation: "deleting", reason: FileProbe.errnoString())
            }
        }
        if movedAside && rmdir(aside.path) != 0 {
            // Someone put a file in the directory after it was listed: it goes back, without the store.
            _ = rename(aside.path, location.url.path)
        } else if ownDirectory && !movedAside {
            // Only an empty directory goes: anything else someone put there stays.
            _ = rmdir(location.url.path)
        }
        try? AtomicFile.fsyncDirectory(of: location.url)
    }

    /// Whether the store's directory holds its data and lock files and nothing else.
    private static func holdsOnlyStoreFiles(_ location: LMDBLocation) -> Bool {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: location.url.path) else { return false }
        return Set(names).isSubset(of: [location.dataFile.lastPathComponent, location.lockFile.lastPathComponent])
    }

    // MARK: Copy

    /// Copies the store at `source` (open or not, writers may keep going) to `destination`, which must not exist,
    /// with `mdb_env_copyfd2` and compaction. The copy is written under a staging name, fsynced and then renamed
    /// (directory form) or linked (file form, `.mdb`) into place; no lock file is copied (liblmdb makes one on open).
    static func copy(from source: URL, to destination: URL) throws {
        let inspection = LMDBStoreInspector.inspect(source)
        guard case .store(let sourceLocation, _, let info) = inspection else {
            throw LMDBStoreInspector.refusal(inspection, url: source) ?? StoreError.storeNotFound(source)
        }
        try LMDBStoreInspector.checkFormat(info, location: sourceLocation)
        var st = stat()
        guard lstat(destination.path, &st) != 0 else { throw StoreError.storeExists(destination) }
        try AtomicFile.checkDirectory(of: destination)
        let target = LMDBLocation.forNewStore(at: destination, fileForm: false)

        let opened = try LMDBStoreOpener.acquire(source, options: StoreOptions(isReadOnly: true, createIfMissing: false), creating: nil)
        defer { EnvironmentRegistry.release(opened.environment) }
        let env = opened.environment
        let fm = FileManager.default

        if target.isDirectory {
            let staging = AtomicFile.stagingURL(for: destination)
            do {
                try FileProbe.makeStagingDirectory(staging, for: destination)
                let data = staging.appendingPathComponent("data.mdb")
                try write(env, to: data, source: source, destination: destination)
                if !info.createdDirectory {
                    // This copy made its directory, so destroying the copy may remove it.
                    try markCreatedDirectory(LMDBLocation(url: staging, isDirectory: true))
                }
                try AtomicFile.fsync(path: staging)
                if rename(staging.path, destination.path) != 0 {
                    let code = errno
                    if code == EEXIST || code == ENOTEMPTY { throw StoreError.storeExists(destination) }
                    throw StoreError.io(destination, operation: "moving the copy into place", reason: String(cString: strerror(code)))
                }
                try AtomicFile.fsyncDirectory(of: destination)
            } catch {
                try? fm.removeItem(at: staging)
                throw error
            }
        } else {
            let staging = AtomicFile.stagingURL(for: destination)
            do {
                try write(env, to: staging, source: source, destination: destination)
                if link(staging.path, destination.path) != 0 {
                    let code = errno
                    if code == EEXIST { throw StoreError.storeExists(destination) }
                    throw StoreError.io(destination, operation: "moving the copy into place", reason: String(cString: strerror(code)))
                }
                try? fm.removeItem(at: staging)
                try AtomicFile.fsyncDirectory(of: destination)
            } catch {
                try? fm.removeItem(at: staging)
                throw error
            }
        }
    }

    /// Writes a compacted snapshot of `env` into a new file (the staging file of `destination`) and fsyncs it.
    /// Compaction refuses environments with leaked pages; a plain copy is made then.
    private static func write(_ env: LMDBEnvironment, to url: URL, source: URL, destination: URL) throws {
        let fd = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            let reason = FileProbe.errnoString()
            if errno == EACCES || errno == EROFS { throw StoreError.readOnly(url, reason: reason) }
            throw StoreError.io(url, operation: "creating the copy", reason: reason)
        }
        defer { close(fd) }
        // Written around the page cache, as `mdb_env_copy2` does: copying a large store into the cache was most of
        // a copy's CPU time (the kernel's copy from user memory), and the fsync below then had it all to write.
        let direct = DirectIO.enable(on: fd)
        do {
            try env.copy(to: fd, compact: true)
        } catch let f as LMDBFailure where f.code == EINVAL && direct {
            // A file system that took the flag but refuses direct writes: the same copy through the cache.
            DirectIO.disable(on: fd)
            guard ftruncate(fd, 0) == 0, lseek(fd, 0, SEEK_SET) == 0 else {
                throw StoreError.io(url, operation: "restarting the copy", reason: FileProbe.errnoString())
            }
            do { try env.copy(to: fd, compact: true) } catch let f as LMDBFailure { throw f.copyError(source: source, destination: destination) }
        } catch let f as LMDBFailure where f.code > 0 {
            // Writing the copy failed (full disk, file-size limit): a plain copy would fail the same way.
            throw f.copyError(source: source, destination: destination)
        } catch {
            if direct { DirectIO.disable(on: fd) }
            guard ftruncate(fd, 0) == 0, lseek(fd, 0, SEEK_SET) == 0 else {
                throw StoreError.io(url, operation: "restarting the copy", reason: FileProbe.errnoString())
            }
            do { try env.copy(to: fd, compact: false) } catch let f as LMDBFailure { throw f.copyError(source: source, destination: destination) }
        }
        guard fsync(fd) == 0 else { throw StoreError.io(destination, operation: "fsync of the copy", reason: FileProbe.errnoString()) }
    }

    /// Records in a staged copy that its directory was made for it.
    private static func markCreatedDirectory(_ location: LMDBLocation) throws {
        do {
            var st = stat()
            _ = stat(location.dataFile.path, &st)
            let handle = try LMDBEnvironment.openHandle(
                location, readOnly: false, noLock: true, mapSize: Int(st.st_size) + (4 << 20), maxDatabases: 16)
            defer { mdb_env_close(handle) }
            var opened: OpaquePointer?
            try check(mdb_txn_begin(handle, nil, 0, &opened), "starting a write transaction")
            guard let txn = opened else { throw LMDBFailure(code: EINVAL, operation: "starting a write transaction") }
            do {
                var dbi: MDB_dbi = 0
                try check(mdb_dbi_open(txn, DatabaseName.meta, 0, &dbi), "opening the metadata database")
                try LMDBTransaction(handle: txn, isWrite: true).put(dbi, key: MetaKey.createdDirectory, value: Array("1".utf8))
            } catch {
                mdb_txn_abort(txn)
                throw error
            }
            try check(mdb_txn_commit(txn), "committing the copy's metadata")
        } catch let f as LMDBFailure {
            throw f.storeError(location.url)
        }
    }
}

/// Direct I/O (`O_DIRECT`, which Swift's Glibc module does not import: its value differs by architecture).
enum DirectIO {
    #if os(Linux) && (arch(x86_64) || arch(i386))
    static let flag: Int32 = 0o40000
    #elseif os(Linux) && (arch(arm64) || arch(arm))
    static let flag: Int32 = 0o200000
    #else
    static let flag: Int32 = 0
    #endif

    /// Turns direct I/O on for `fd` where the platform and file system allow it; whether it did.
    static func enable(on fd: Int32) -> Bool {
        guard flag != 0 else { return false }
        let flags = fcntl(fd, F_GETFL)
        return flags >= 0 && fcntl(fd, F_SETFL, flags | flag) == 0
    }

    /// Turns direct I/O off again.
    static func disable(on fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags & ~flag) }
    }
}
