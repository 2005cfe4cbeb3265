import CLMDB
import Foundation
import Logging
@_spi(BackendKit) import StoreAPI
import Synchronization

/// One open liblmdb environment, shared by every store open on the same files in this process (see
/// ``EnvironmentRegistry``).
///
/// Concurrency rules it enforces (from lmdb.h):
/// - Every transaction runs inside one synchronous call, so a write transaction begins and commits on one thread;
///   read transactions use `MDB_NOTLS` and are not tied to threads anyway.
/// - `mdb_env_set_mapsize` needs every transaction of the process finished: transactions hold ``mapLock``
///   shared, growing the map holds it exclusively.
/// - Only one transaction at a time may open database handles: ``openDatabases(_:create:)`` is serialised and
///   every other transaction only uses handles already opened.
/// - Writers of this process queue on ``writerLock``, then on the inter-process ``WriterLock`` (both with the
///   store's timeout), before liblmdb's own writer lock, so a writer that must grow the map never waits for another
///   writer of its own process, and a writer kept waiting by another process gives up after its timeout.
final class LMDBEnvironment: @unchecked Sendable {
    let handle: OpaquePointer
    let location: LMDBLocation
    let identity: FileIdentity
    /// Opened with `MDB_RDONLY` (the files are not writable).
    let isReadOnly: Bool
    /// Opened with `MDB_NOLOCK` (a read-only location without a usable lock file).
    let isUnlocked: Bool
    /// The largest map the environment may grow to.
    let maxMapSize: Int
    /// liblmdb's descriptor of the data file, which writers lock (see ``WriterLock``); `nil` when read-only.
    private let dataDescriptor: Int32?

    /// Open stores on this environment (guarded by the registry's lock).
    var references = 0

    private let mapLock = ReadWriteLock()
    private let writerLock = NSLock()
    private let databaseOpenLock = NSLock()
    private let databases = Mutex<[String: MDB_dbi]>([:])
    private let currentLayout = Mutex<LMDBLayout?>(nil)
    /// Map bytes touched since the resident pages were last released (see ``releaseResidentPages(after:)``).
    private let touchedSinceRelease = Atomic<Int>(0)
    /// Where this environment's map is, once found (see ``ownMapping()``); cleared whenever liblmdb maps the file
    /// anew (``remap(_:_:)``), under the exclusive map lock.
    private let knownMapping = Mutex<MapRange?>(nil)

    private init(handle: OpaquePointer, location: LMDBLocation, identity: FileIdentity, isReadOnly: Bool, isUnlocked: Bool, maxMapSize: Int) {
        var fd: Int32 = -1
        dataDescriptor = !isReadOnly && mdb_env_get_fd(handle, &fd) == 0 && fd >= 0 ? fd : nil
        self.handle = handle
        self.location = location
        self.identity = identity
        self.isReadOnly = isReadOnly
        self.isUnlocked = isUnlocked
        self.maxMapSize = maxMapSize
    }

    /// Opens the environment at `location`.
    static func open(
        _ location: LMDBLocation, identity: FileIdentity, readOnly: Bool, noLock: Bool, mapSize: Int?,
        maxDatabases: Int, maxMapSize: Int
    ) throws -> LMDBEnvironment {
        let env = try openHandle(location, readOnly: readOnly, noLock: noLock, mapSize: mapSize, maxDatabases: maxDatabases)
        if !noLock {
            // Clear reader slots left by processes that died inside a read transaction, so they do not pin old
            // pages (and the file does not grow without bound).
            var dead: Int32 = 0
            _ = mdb_reader_check(env, &dead)
            if dead > 0 {
                Logger.current.info("cleared reader slots left by processes that died", metadata: [
                    "store": .string(location.url.path), "slots": "\(dead)",
                ])
            }
        }
        return LMDBEnvironment(handle: env, location: location, identity: identity, isReadOnly: readOnly, isUnlocked: noLock, maxMapSize: maxMapSize)
    }

    /// Creates and opens a raw environment handle (also used for short private opens and new stores).
    static func openHandle(
        _ location: LMDBLocation, readOnly: Bool, noLock: Bool, noSync: Bool = false, mapSize: Int?, maxDatabases: Int
    ) throws -> OpaquePointer {
        // Read-only without a lock writes nothing at all, links or not (sniffing uses that).
        if !(readOnly && noLock) { try refuseSymbolicLinks(location) }
        var created: OpaquePointer?
        try check(mdb_env_create(&created), "creating an LMDB environment")
        guard let env = created else { throw LMDBFailure(code: ENOMEM, operation: "creating an LMDB environment") }
        do {
            try check(mdb_env_set_maxdbs(env, MDB_dbi(maxDatabases)), "setting the number of databases")
            try check(mdb_env_set_maxreaders(env, 254), "setting the number of readers")
            if let mapSize { try check(mdb_env_set_mapsize(env, mapSize), "setting the map size") }
            var flags = UInt32(MDB_NOTLS) | location.layoutFlags
            if readOnly { flags |= UInt32(MDB_RDONLY) }
            if noLock { flags |= UInt32(MDB_NOLOCK) }
            if noSync { flags |= UInt32(MDB_NOSYNC) }
            try check(mdb_env_open(env, location.environmentPath, flags, 0o644), "opening the LMDB environment")
        } catch {
            mdb_env_close(env)
            throw error
        }
        return env
    }

    /// liblmdb follows symbolic links: a `lock.mdb` (or data file) linked elsewhere would have its lock table
    /// written into whatever file the link names, the moment the store is sniffed or opened. A store's own files
    /// are never links, so such a store is refused before liblmdb touches anything.
    static func refuseSymbolicLinks(_ location: LMDBLocation) throws {
        for file in [location.dataFile, location.lockFile] where FileProbe.isSymbolicLink(file) {
            throw StoreError.refused(
                location.url, reason: "\(file.lastPathComponent) is a symbolic link; a store's files must be its own")
        }
    }

    /// Closes the handle. Only the registry calls this, once no store uses the environment.
    func close() {
        mdb_env_close(handle)
    }

    // MARK: Layout

    /// The layout of the store's current metadata, shared by every store open on the environment.
    var layout: LMDBLayout? { currentLayout.withLock { $0 } }

    func setLayout(_ layout: LMDBLayout) { currentLayout.withLock { $0 = layout } }

    // MARK: Databases

    /// The handle of an opened named database, or `nil` when it does not exist (or was never opened).
    func database(_ name: String) -> MDB_dbi? { databases.withLock { $0[name] } }

    /// The handle of a named database that must exist.
    func requireDatabase(_ name: String) throws -> MDB_dbi {
        guard let dbi = database(name) else {
            throw LMDBFailure(code: MDB_NOTFOUND, operation: "opening database '\(name)'")
        }
        return dbi
    }

    /// Opens the named databases not opened yet, creating missing ones when `create` (and writable) in a write
    /// transaction that waits at most `timeout` seconds for other writers. Run before the transactions that use
    /// them, never inside one.
    func openDatabases(_ names: [String], create: Bool, timeout: Double) throws {
        databaseOpenLock.lock()
        defer { databaseOpenLock.unlock() }
        let missing = databases.withLock { open in names.filter { open[$0] == nil } }
        if missing.isEmpty { return }
        let opened: [String: MDB_dbi]
        if create && !isReadOnly {
            opened = try write(timeout: timeout) { txn in
                var found: [String: MDB_dbi] = [:]
                for name in missing {
                    var dbi: MDB_dbi = 0
                    try check(mdb_dbi_open(txn.handle, name, UInt32(MDB_CREATE), &dbi), "creating database '\(name)'")
                    found[name] = dbi
                }
                return found
            }
        } else {
            opened = try readCommitting { txn in
                var found: [String: MDB_dbi] = [:]
                for name in missing {
                    var dbi: MDB_dbi = 0
                    let rc = mdb_dbi_open(txn, name, 0, &dbi)
                    if rc == MDB_NOTFOUND { continue }
                    try check(rc, "opening database '\(name)'")
                    found[name] = dbi
                }
                return found
            }
        }
        databases.withLock { open in open.merge(opened) { a, _ in a } }
    }

    // MARK: Transactions

    private enum Attempt<T> {
        case done(T)
        case mapFull
        case resized
    }

    /// Runs `body` in a read-only transaction (a consistent snapshot that never blocks the writer).
    func read<T>(_ body: (LMDBTransaction) throws -> T) throws -> T {
        for _ in 0..<16 {
            let attempt: Attempt<T> = try mapLock.withShared {
                guard let txn = try beginRead() else { return .resized }
                defer { mdb_txn_abort(txn) }
                return .done(try body(LMDBTransaction(handle: txn, isWrite: false)))
            }
            switch attempt {
            case .done(let value): return value
            case .resized, .mapFull: try adoptNewMapSize()
            }
        }
        throw LMDBFailure(code: MDB_MAP_RESIZED, operation: "starting a read transaction")
    }

    /// A read-only transaction that is committed, so database handles opened in it stay open.
    private func readCommitting<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        for _ in 0..<16 {
            let attempt: Attempt<T> = try mapLock.withShared {
                guard let txn = try beginRead() else { return .resized }
                let value: T
                do { value = try body(txn) } catch {
                    mdb_txn_abort(txn)
                    throw error
                }
                try check(mdb_txn_commit(txn), "finishing a read transaction")
                return .done(value)
            }
            if case .done(let value) = attempt { return value }
            try adoptNewMapSize()
        }
        throw LMDBFailure(code: MDB_MAP_RESIZED, operation: "starting a read transaction")
    }

    /// Begins a read transaction; `nil` when another process grew the map past ours.
    private func beginRead() throws -> OpaquePointer? {
        var txn: OpaquePointer?
        var rc = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn)
        if rc == MDB_READERS_FULL && !isUnlocked {
            var dead: Int32 = 0
            _ = mdb_reader_check(handle, &dead)
            Logger.current.info("the reader table was full; cleared slots left by processes that died", metadata: [
                "store": .string(location.url.path), "slots": "\(dead)",
            ])
            rc = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn)
        }
        if rc == MDB_MAP_RESIZED { return nil }
        try check(rc, "starting a read transaction")
        guard let txn else { throw LMDBFailure(code: EINVAL, operation: "starting a read transaction") }
        return txn
    }

    /// Runs `body` in one write transaction and commits it: all of it is stored or none of it.
    ///
    /// The transaction begins once the writers before it (in this process and, through ``WriterLock``, in other
    /// processes using this framework) are done; when that takes longer than `timeout` seconds, it fails with an
    /// `EBUSY` ``LMDBFailure`` (``StoreError/locked(_:reason:)`` for callers) and nothing is written.
    ///
    /// When the map is full (`MDB_MAP_FULL` from a put or the commit), the transaction is aborted, the map doubled
    /// and `body` run again from the start, so growth is invisible to callers. `body` must therefore be
    /// repeatable and must let `LMDBFailure`s from the transaction propagate unchanged.
    func write<T>(timeout: Double, _ body: (LMDBTransaction) throws -> T) throws -> T {
        guard !isReadOnly else { throw LMDBFailure(code: EACCES, operation: "starting a write transaction") }
        let deadline = WriteDeadline(seconds: timeout)
        guard writerLock.lock(before: deadline.date) else {
            throw LMDBFailure(code: EBUSY, operation: "another writer in this process has been saving to the store for longer than the \(WriterLock.formatted(deadline.seconds))-second timeout (StoreOptions.timeout)")
        }
        defer { writerLock.unlock() }
        let lockedFile = try dataDescriptor.flatMap { fd in try WriterLock.acquire(fd, before: deadline) ? fd : nil }
        defer { lockedFile.map(WriterLock.release) }
        while true {
            let attempt: Attempt<T> = try mapLock.withShared {
                var opened: OpaquePointer?
                let rc = mdb_txn_begin(handle, nil, 0, &opened)
                if rc == MDB_MAP_RESIZED { return .resized }
                try check(rc, "starting a write transaction")
                guard let txn = opened else { throw LMDBFailure(code: EINVAL, operation: "starting a write transaction") }
                let value: T
                do {
                    value = try body(LMDBTransaction(handle: txn, isWrite: true))
                } catch let failure as LMDBFailure where failure.isMapFull {
                    mdb_txn_abort(txn)
                    return .mapFull
                } catch {
                    mdb_txn_abort(txn)
                    throw error
                }
                // mdb_txn_commit frees the transaction whatever it returns.
                let commit = mdb_txn_commit(txn)
                if commit == MDB_MAP_FULL { return .mapFull }
                try check(commit, "committing a write transaction")
                return .done(value)
            }
            switch attempt {
            case .done(let value): return value
            case .mapFull: try growMap()
            case .resized: try adoptNewMapSize()
            }
        }
    }

    // MARK: Resident pages

    /// How many touched map bytes make the pages worth releasing.
    static let residentReleaseThreshold = 2 << 20

    /// The data file size up to which resident pages are never released (see ``releaseResidentPages(after:)``).
    static let smallDataFileSize = 4 * residentReleaseThreshold

    /// The data file's size now (`nil` when it cannot be read): one `fstat` of liblmdb's descriptor.
    private var dataFileSize: Int? {
        var fd: Int32 = -1
        var info = stat()
        guard mdb_env_get_fd(handle, &fd) == 0, fd >= 0, fstat(fd, &info) == 0 else { return nil }
        return Int(info.st_size)
    }

    /// Releases this process's resident copies of the map's pages once roughly `bytes` more of it have been
    /// touched since the last release (and ``residentReleaseThreshold`` is reached).
    ///
    /// Every page liblmdb reads through the map stays resident in this process — counted in its RSS — until the
    /// kernel needs the memory: a bulk read or write of a large store (a conversion, an import) would otherwise
    /// grow the RSS with the file, however large the store, though nothing of it is the
    /// process's own memory. The map is a shared, read-only file mapping, so dropping the pages
    /// (`MADV_DONTNEED`) loses nothing: the next access maps them again from the page cache. Pointers into the
    /// map stay valid.
    /// Whether commits flush to disk (`MDB_NOSYNC` off, liblmdb's default). A bulk load into a new, staged store
    /// turns it off and makes one ``syncToDisk()`` at the end: commits stay atomic and consistent (liblmdb without
    /// `MDB_WRITEMAP`), only their durability waits for that sync — and a staged store that a crash interrupts is
    /// discarded anyway.
    func setSyncsOnCommit(_ syncs: Bool) throws {
        try check(mdb_env_set_flags(handle, UInt32(MDB_NOSYNC), syncs ? 0 : 1), "setting MDB_NOSYNC")
    }

    /// Flushes every committed transaction to disk (`mdb_env_sync`, forced).
    func syncToDisk() throws {
        try check(mdb_env_sync(handle, 1), "syncing the environment to disk")
    }

    func releaseResidentPages(after bytes: Int) {
        #if os(Linux)
        let touched = touchedSinceRelease.add(bytes, ordering: .relaxed).newValue
        guard touched >= Self.residentReleaseThreshold else { return }
        touchedSinceRelease.store(0, ordering: .relaxed)
        // No more of the file than it holds can be resident: while it is small, the pages a release would free
        // are bounded by a constant, and the release itself (the map looked up, the advice, the faults that bring
        // the pages back) costs more than keeping them.
        guard dataFileSize.map({ $0 > Self.smallDataFileSize }) ?? true else { return }
        // Under the shared lock, so the map is not moved (resized) meanwhile — an address range unmapped and
        // reused for heap memory must never be advised. Callers inside a transaction already hold it shared;
        // glibc's rwlocks prefer readers, so taking it again cannot wait behind a queued resize.
        mapLock.withShared {
            guard let map = ownMapping() else { return }
            _ = madvise(map.start, map.length, MADV_DONTNEED)
        }
        #endif
    }

    /// This environment's map, found once per mapping of the file (reading `/proc/self/maps` costs about a
    /// millisecond of kernel time). It is only trusted when the data file is mapped exactly once in the process:
    /// a short private handle on the same file (a metadata read on another thread) has a map of its own that
    /// may be unmapped at any moment, and advising a range that was unmapped and reused would discard someone
    /// else's memory. Called under the shared map lock, so our own map cannot move meanwhile.
    private func ownMapping() -> MapRange? {
        knownMapping.withLock { known in
            if let known { return known }
            let found = Self.mappings(of: location.dataFile)
            guard found.count == 1 else { return nil }
            known = found[0]
            return known
        }
    }

    /// Where the data file is mapped in this process. liblmdb does not say (`me_mapaddr` is only set for
    /// `MDB_FIXEDMAP`), so it is looked up in `/proc/self/maps` — as bytes: splitting its lines into Strings on
    /// every release would cost more than the release. None where there is no such file.
    private static func mappings(of dataFile: URL) -> [MapRange] {
        var found: [MapRange] = []
        #if os(Linux)
        let suffix = Array((" " + dataFile.resolvingSymlinksInPath().path).utf8)
        guard let maps = readProcFile("/proc/self/maps") else { return [] }
        var lineStart = 0
        while lineStart < maps.count {
            let lineEnd = maps[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? maps.count
            defer { lineStart = lineEnd + 1 }
            guard lineEnd - lineStart > suffix.count, maps[(lineEnd - suffix.count)..<lineEnd].elementsEqual(suffix) else { continue }
            // "start-end perms offset dev inode path": two hexadecimal addresses first.
            var i = lineStart
            func hex() -> UInt? {
                var value: UInt = 0
                var digits = 0
                while i < lineEnd, let d = HexDigit.value(maps[i]) {
                    guard digits < 16 else { return nil }
                    value = value << 4 | UInt(d)
                    digits += 1
                    i += 1
                }
                return digits > 0 ? value : nil
            }
            guard let start = hex(), i < lineEnd, maps[i] == UInt8(ascii: "-") else { continue }
            i += 1
            guard let end = hex(), end > start, let pointer = UnsafeMutableRawPointer(bitPattern: start) else { continue }
            found.append(MapRange(start: pointer, length: Int(end - start)))
        }
        #endif
        return found
    }

    #if os(Linux)
    /// The whole of a `/proc` file (whose size `stat` does not report), read in chunks.
    private static func readProcFile(_ path: String) -> [UInt8]? {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                bytes.append(contentsOf: chunk[0..<n])
            } else if n == 0 {
                return bytes
            } else if errno != EINTR {
                return nil
            }
        }
    }
    #endif

    /// `mdb_env_set_mapsize`, which unmaps the file and maps it again (at an address that may differ): the
    /// caller holds the map lock exclusively.
    private func remap(_ size: Int, _ operation: String) throws {
        knownMapping.withLock { $0 = nil }
        try check(mdb_env_set_mapsize(handle, size), operation)
    }

    /// The current map size.
    var mapSize: Int { mapLock.withShared { currentMapSize } }

    /// The ID of the last committed write transaction, by any process: liblmdb reads it from the meta pages every
    /// process shares, without a transaction.
    var lastTransactionID: Int64 {
        mapLock.withShared {
            var info = MDB_envinfo()
            mdb_env_info(handle, &info)
            return Int64(truncatingIfNeeded: info.me_last_txnid)
        }
    }

    /// The map size, read without the lock (by its holder).
    private var currentMapSize: Int {
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        return info.me_mapsize
    }

    /// Doubles the map (no transaction of this process is active: the exclusive lock waits for them).
    private func growMap() throws {
        try mapLock.withExclusive {
            let current = currentMapSize
            guard current < maxMapSize else {
                throw LMDBFailure(code: MDB_MAP_FULL, operation: "growing the map beyond the \(maxMapSize)-byte limit (option lmdb.maxMapSize)")
            }
            let next = min(maxMapSize, max(current * 2, 1 << 20))
            try remap(next, "growing the map to \(next) bytes")
        }
    }

    /// Grows the map, before a write transaction, so that `bytes` more than the environment now holds fit (by
    /// doubling, up to ``maxMapSize``): a large save then does not fill the map and start over on the way.
    func reserveMapSpace(_ bytes: Int) throws {
        guard !isReadOnly, bytes > 0 else { return }
        try mapLock.withExclusive {
            var info = MDB_envinfo()
            var stat = MDB_stat()
            guard mdb_env_info(handle, &info) == 0, mdb_env_stat(handle, &stat) == 0 else { return }
            let used = (info.me_last_pgno + 1).multipliedReportingOverflow(by: Int(stat.ms_psize))
            let needed = used.partialValue.addingReportingOverflow(bytes)
            let wanted = used.overflow || needed.overflow ? maxMapSize : needed.partialValue
            var next = max(info.me_mapsize, 1 << 20)
            while next < wanted && next < maxMapSize { next = next > maxMapSize / 2 ? maxMapSize : next * 2 }
            guard next > info.me_mapsize else { return }
            try remap(next, "growing the map to \(next) bytes")
        }
    }

    /// Adopts the map size another process grew the environment to (`MDB_MAP_RESIZED`).
    private func adoptNewMapSize() throws {
        try mapLock.withExclusive {
            try remap(0, "adopting the map size another process set")
        }
    }

    /// Copies the environment into `fd` (a consistent snapshot; writers keep going).
    func copy(to fd: Int32, compact: Bool) throws {
        try mapLock.withShared {
            try check(mdb_env_copyfd2(handle, fd, compact ? UInt32(MDB_CP_COMPACT) : 0), "copying the environment")
        }
    }
}

/// An address range the data file is mapped at. (An address, not an owned pointer: it crosses threads only under
/// the environment's map lock.)
struct MapRange: @unchecked Sendable {
    let start: UnsafeMutableRawPointer
    let length: Int
}
