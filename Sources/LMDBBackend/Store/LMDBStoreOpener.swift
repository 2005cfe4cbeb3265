import CLMDB
import Foundation
import StoreAPI

/// Resolves a URL to a registered environment: creates the store when asked, refuses everything that is not one
/// of our stores with a typed error, and opens (or shares) the environment.
enum LMDBStoreOpener {
    struct Opened {
        /// The environment, with one reference taken for the caller.
        let environment: LMDBEnvironment
        let layout: LMDBLayout
    }

    static func acquire(_ url: URL, options: StoreOptions, creating: StoreMetadata?) throws -> Opened {
        let config = try LMDBOptions(options.backend)
        var inspection = LMDBStoreInspector.inspect(url)
        switch inspection {
        case .missing:
            guard let creating, options.createIfMissing else { throw StoreError.storeNotFound(url) }
            guard !options.isReadOnly else {
                throw StoreError.readOnly(url, reason: "no store exists there and the description is read-only")
            }
            try LMDBStoreCreator.create(.forNewStore(at: url, fileForm: config.fileForm), metadata: creating, options: config)
            inspection = LMDBStoreInspector.inspect(url)
        case .directoryWithoutStore(let location, let contents):
            guard contents.isEmpty else {
                if creating != nil && options.createIfMissing {
                    let shown = contents.prefix(5).joined(separator: ", ") + (contents.count > 5 ? ", …" : "")
                    throw StoreError.directoryUnusable(url, reason: "holds other files (\(shown)) but no LMDB store; an LMDB store needs a directory of its own")
                }
                throw LMDBStoreInspector.refusal(inspection, url: url) ?? StoreError.storeNotFound(url)
            }
            guard let creating, options.createIfMissing else { throw StoreError.storeNotFound(url) }
            guard !options.isReadOnly else {
                throw StoreError.readOnly(url, reason: "no store exists there and the description is read-only")
            }
            try LMDBStoreCreator.create(location, metadata: creating, options: config)
            inspection = LMDBStoreInspector.inspect(url)
        default:
            break
        }
        guard case .store(let location, let header, let info) = inspection else {
            throw LMDBStoreInspector.refusal(inspection, url: url) ?? StoreError.storeNotFound(url)
        }
        if !location.isDirectory, location.url.lastPathComponent == "data.mdb",
            FileProbe.exists(location.url.deletingLastPathComponent().appendingPathComponent("lock.mdb"))
        {
            // Opening it as a file would add a second lock file (data.mdb-lock) beside lock.mdb, and two
            // processes could then write at once.
            throw StoreError.refused(url, reason: "this is the data file of the LMDB store directory \(location.url.deletingLastPathComponent().path); open the directory")
        }
        let metadata = try LMDBStoreInspector.metadata(of: info, location: location)
        guard let idsJSON = info.entityIDsJSON else {
            throw StoreError.corruptStore(location.dataFile, reason: "the store has no entity ID table")
        }
        let ids = try idsJSON.withUnsafeBytes { try LMDBLayout.decodeEntityIDs($0, url: location.dataFile) }
        let layout = try LMDBLayout(metadata: metadata, storedJSON: info.metadataJSON, existingIDs: ids)
        guard let identity = LMDBStoreInspector.identity(of: location) else { throw StoreError.storeNotFound(url) }
        let env = try EnvironmentRegistry.acquire(identity) {
            try open(location, identity: identity, header: header, layout: layout, options: config, timeout: options.timeout)
        }
        return Opened(environment: env, layout: env.layout ?? layout)
    }

    /// Opens the environment: read-write when the files allow it, otherwise read-only (and without the lock file
    /// when it cannot be used, as on read-only media).
    private static func open(
        _ location: LMDBLocation, identity: FileIdentity, header: LMDBHeader, layout: LMDBLayout, options: LMDBOptions,
        timeout: Double
    ) throws -> LMDBEnvironment {
        let lockUsable = FileProbe.exists(location.lockFile)
            ? FileProbe.isWritable(location.lockFile)
            : FileProbe.isWritable(location.lockFile.deletingLastPathComponent())
        let readOnly = !(FileProbe.isWritable(location.dataFile) && lockUsable)
        let committed = Int(clamping: (header.lastPage + 1).multipliedReportingOverflow(by: UInt64(header.pageSize)).partialValue)
        let recorded = Int(clamping: header.mapSize)
        let mapSize = readOnly ? nil : max(options.initialMapSize, recorded, committed)
        let env: LMDBEnvironment
        do {
            env = try LMDBEnvironment.open(
                location, identity: identity, readOnly: readOnly, noLock: !lockUsable, mapSize: mapSize,
                maxDatabases: layout.suggestedMaxDatabases, maxMapSize: max(options.maxMapSize, mapSize ?? 0))
        } catch let f as LMDBFailure {
            throw f.storeError(location.url)
        }
        env.setLayout(layout)
        do {
            try env.openDatabases(layout.databaseNames, create: !readOnly, timeout: timeout)
        } catch let f as LMDBFailure {
            env.close()
            throw f.storeError(location.url)
        } catch {
            env.close()
            throw error
        }
        return env
    }
}
