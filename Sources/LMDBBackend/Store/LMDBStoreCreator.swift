import CLMDB
import Foundation
@_spi(BackendKit) import StoreAPI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Creates new stores atomically: the environment is built and committed under a staging name (with `MDB_NOLOCK`,
/// so no lock file is made, and `MDB_NOSYNC`, as nothing reads it before it is named), fsynced once, and only then
/// given its real name — a directory by `rename`, a data file by
/// `link` (which never replaces an existing file). A crash or failure leaves no store and nothing under the real
/// name; a concurrent creator simply wins and its store is opened.
enum LMDBStoreCreator {
    static func create(_ location: LMDBLocation, metadata: StoreMetadata, options: LMDBOptions) throws {
        try AtomicFile.checkDirectory(of: location.url)
        let fm = FileManager.default
        if location.isDirectory && !FileProbe.exists(location.url) {
            let staging = AtomicFile.stagingURL(for: location.url)
            do {
                try FileProbe.makeStagingDirectory(staging, for: location.url)
                let stagedData = staging.appendingPathComponent("data.mdb")
                try initialize(LMDBLocation(url: staging, isDirectory: true), metadata: metadata, createdDirectory: true, options: options)
                try AtomicFile.fsync(path: stagedData)
                try AtomicFile.fsync(path: staging)
                if rename(staging.path, location.url.path) != 0 {
                    let code = errno
                    guard code == EEXIST || code == ENOTEMPTY else {
                        throw StoreError.io(location.url, operation: "moving the new store into place", reason: String(cString: strerror(code)))
                    }
                    // Someone else created the store meanwhile: theirs is opened.
                    try? fm.removeItem(at: staging)
                    return
                }
                try AtomicFile.fsyncDirectory(of: location.url)
            } catch {
                try? fm.removeItem(at: staging)
                throw error
            }
        } else {
            // The file form, or an existing empty directory: stage the data file next to its final name.
            let target = location.dataFile
            let staging = AtomicFile.stagingURL(for: target)
            do {
                try initialize(LMDBLocation(url: staging, isDirectory: false), metadata: metadata, createdDirectory: false, options: options)
                try AtomicFile.fsync(path: staging)
                if link(staging.path, target.path) != 0 {
                    let code = errno
                    guard code == EEXIST else {
                        throw StoreError.io(target, operation: "moving the new store into place", reason: String(cString: strerror(code)))
                    }
                }
                try? fm.removeItem(at: staging)
                try AtomicFile.fsyncDirectory(of: target)
            } catch {
                try? fm.removeItem(at: staging)
                throw error
            }
        }
    }

    /// Builds a complete new environment at `location`: every database the schema needs and the metadata.
    private static func initialize(_ location: LMDBLocation, metadata: StoreMetadata, createdDirectory: Bool, options: LMDBOptions) throws {
        let layout = try LMDBLayout(metadata: metadata, existingIDs: [:])
        let ids = try layout.entityIDsJSON()
        let handle: OpaquePointer
        do {
            // Without a sync per commit: the caller fsyncs the data file once, before the store gets its name.
            handle = try LMDBEnvironment.openHandle(
                location, readOnly: false, noLock: true, noSync: true, mapSize: options.initialMapSize,
                maxDatabases: layout.suggestedMaxDatabases)
        } catch let f as LMDBFailure {
            throw f.storeError(location.url)
        }
        defer { mdb_env_close(handle) }
        var mapSize = options.initialMapSize
        while true {
            var opened: OpaquePointer?
            try check(mdb_txn_begin(handle, nil, 0, &opened), "starting a write transaction")
            guard let txn = opened else { throw StoreError.io(location.url, operation: "creating the store", reason: "no transaction") }
            let rc: Int32
            do {
                let t = LMDBTransaction(handle: txn, isWrite: true)
                var dbis: [String: MDB_dbi] = [:]
                for name in layout.databaseNames {
                    var dbi: MDB_dbi = 0
                    try check(mdb_dbi_open(txn, name, UInt32(MDB_CREATE), &dbi), "creating database '\(name)'")
                    dbis[name] = dbi
                }
                guard let meta = dbis[DatabaseName.meta] else { throw LMDBFailure(code: MDB_NOTFOUND, operation: "creating the metadata database") }
                try t.put(meta, key: MetaKey.magic, value: Array(StoreFormat.magic.utf8))
                try t.put(meta, key: MetaKey.formatVersion, value: Array(String(StoreFormat.version).utf8))
                try t.put(meta, key: MetaKey.metadata, value: layout.metadataJSON)
                try t.put(meta, key: MetaKey.entityIDs, value: ids)
                try t.put(meta, key: MetaKey.createdDirectory, value: Array((createdDirectory ? "1" : "0").utf8))
                rc = mdb_txn_commit(txn)
            } catch let f as LMDBFailure {
                mdb_txn_abort(txn)
                guard f.isMapFull else { throw f.storeError(location.url) }
                rc = MDB_MAP_FULL
            }
            if rc == MDB_MAP_FULL, mapSize < options.maxMapSize {
                mapSize = min(options.maxMapSize, mapSize * 2)
                try check(mdb_env_set_mapsize(handle, mapSize), "growing the map")
                continue
            }
            if rc != 0 { throw LMDBFailure(code: rc, operation: "committing the new store").storeError(location.url) }
            return
        }
    }
}
