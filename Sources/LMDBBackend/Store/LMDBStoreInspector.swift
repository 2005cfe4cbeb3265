import CLMDB
import Foundation
@_spi(BackendKit) import StoreAPI

/// What the metadata database of one of our stores holds, read in one short transaction.
struct LMDBStoreInfo: Sendable {
    var formatVersion: Int?
    var metadataJSON: [UInt8]?
    var entityIDsJSON: [UInt8]?
    var createdDirectory: Bool
}

/// What is at a path, as far as LMDB stores go.
enum Inspection {
    /// Nothing exists there.
    case missing
    /// A directory holding no `data.mdb`: the names of what it holds instead (empty when it is empty).
    case directoryWithoutStore(LMDBLocation, contents: [String])
    /// Something that is not an LMDB data file (the reason says what was seen).
    case notLMDB(LMDBLocation, String)
    /// An LMDB data file that is damaged or truncated.
    case damaged(LMDBLocation, String)
    /// A file that cannot be read.
    case unreadable(LMDBLocation, String)
    /// A valid LMDB environment without our metadata.
    case foreign(LMDBLocation)
    /// One of our stores.
    case store(LMDBLocation, LMDBHeader, LMDBStoreInfo)
}

/// Looks at paths without writing anything and without keeping anything open.
enum LMDBStoreInspector {
    /// The description of environments that are not ours, used by sniffing and errors.
    static let foreignDescription = "LMDB environment, but not a store"

    static func inspect(_ url: URL) -> Inspection {
        guard let location = LMDBLocation.existing(url) else { return .missing }
        if location.isDirectory, !FileProbe.exists(location.dataFile) {
            // Staging leftovers of an interrupted creation are not anyone's files.
            let contents = (FileProbe.contents(of: url) ?? []).filter { !$0.hasPrefix(AtomicFile.stagingPrefix) }.sorted()
            return .directoryWithoutStore(location, contents: contents)
        }
        switch LMDBHeader.probe(location.dataFile) {
        case .missing: return .missing
        case .empty: return .notLMDB(location, "an empty file")
        case .notLMDB(let why): return .notLMDB(location, why)
        case .damaged(let why): return .damaged(location, why)
        case .unreadable(let why): return .unreadable(location, why)
        case .valid(let header):
            do {
                let info = try withSnapshot(location, header: header) { txn, lookup in try readInfo(txn, lookup) }
                guard let info else { return .foreign(location) }
                return .store(location, header, info)
            } catch let failure as LMDBFailure {
                return .damaged(location, failure.description)
            } catch {
                return .damaged(location, "\(error)")
            }
        }
    }

    /// The identity the registry keys an environment by: the directory, or the data file in the file form.
    static func identity(of location: LMDBLocation) -> FileIdentity? {
        FileIdentity(path: location.isDirectory ? location.url.path : location.dataFile.path)
    }

    /// Runs `body` in a read transaction on the environment: the registered one when the store is open in this
    /// process, otherwise a private read-only handle (without a lock file when there is none, so nothing is
    /// created next to the files) that is closed before returning. `body` gets a database lookup by name.
    static func withSnapshot<T>(
        _ location: LMDBLocation, header: LMDBHeader,
        _ body: (LMDBTransaction, _ database: (String) throws -> MDB_dbi?) throws -> T
    ) throws -> T {
        guard let identity = identity(of: location) else {
            throw LMDBFailure(code: ENOENT, operation: "opening \(location.url.path)")
        }
        return try EnvironmentRegistry.withEnvironment(identity) { env in
            if let env {
                return try env.read { txn in try body(txn) { env.database($0) } }
            }
            // A lock file linked elsewhere is not used: liblmdb would write its reader table into the link's target.
            let lockUsable = FileProbe.exists(location.lockFile) && FileProbe.isWritable(location.lockFile)
                && !FileProbe.isSymbolicLink(location.lockFile) && !FileProbe.isSymbolicLink(location.dataFile)
            let maxDatabases = Int(min(header.mainEntries, 100_000)) + 16
            let handle = try LMDBEnvironment.openHandle(
                location, readOnly: true, noLock: !lockUsable, mapSize: nil, maxDatabases: maxDatabases)
            defer { mdb_env_close(handle) }
            var opened: OpaquePointer?
            try check(mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &opened), "starting a read transaction")
            guard let txn = opened else { throw LMDBFailure(code: EINVAL, operation: "starting a read transaction") }
            defer { mdb_txn_abort(txn) }
            var handles: [String: MDB_dbi] = [:]
            return try body(LMDBTransaction(handle: txn, isWrite: false)) { name in
                if let dbi = handles[name] { return dbi }
                var dbi: MDB_dbi = 0
                let rc = mdb_dbi_open(txn, name, 0, &dbi)
                // Not there, or a plain key of that name rather than a database: not ours.
                if rc == MDB_NOTFOUND || rc == MDB_INCOMPATIBLE { return nil }
                try check(rc, "opening database '\(name)'")
                handles[name] = dbi
                return dbi
            }
        }
    }

    /// Reads our metadata keys; `nil` when the environment is not one of our stores.
    static func readInfo(_ txn: LMDBTransaction, _ database: (String) throws -> MDB_dbi?) throws -> LMDBStoreInfo? {
        guard let meta = try database(DatabaseName.meta),
            let magic = try txn.get(meta, key: MetaKey.magic),
            magic == Array(StoreFormat.magic.utf8)
        else { return nil }
        let version = try txn.get(meta, key: MetaKey.formatVersion).flatMap { Int(String(decoding: $0, as: UTF8.self)) }
        return LMDBStoreInfo(
            formatVersion: version,
            metadataJSON: try txn.get(meta, key: MetaKey.metadata),
            entityIDsJSON: try txn.get(meta, key: MetaKey.entityIDs),
            createdDirectory: try txn.get(meta, key: MetaKey.createdDirectory) == Array("1".utf8))
    }

    /// Decodes the metadata of a store, checking the format version first.
    static func metadata(of info: LMDBStoreInfo, location: LMDBLocation) throws -> StoreMetadata {
        try checkFormat(info, location: location)
        guard let json = info.metadataJSON else {
            throw StoreError.corruptStore(location.dataFile, reason: "the store has no metadata record")
        }
        return try StoreMetadata.decode(Data(json), url: location.url)
    }

    /// Throws unless the store was written in the format this build reads.
    static func checkFormat(_ info: LMDBStoreInfo, location: LMDBLocation) throws {
        guard let v = info.formatVersion else {
            throw StoreError.corruptStore(location.dataFile, reason: "the store's format version is missing or unreadable")
        }
        guard v == StoreFormat.version else {
            throw StoreError.unsupported("\(location.url.path): LMDB store format version \(v); this build reads version \(StoreFormat.version)")
        }
    }

    /// The typed error for a path that holds no store of ours, or `nil` when it holds one.
    static func refusal(_ inspection: Inspection, url: URL) -> StoreError? {
        switch inspection {
        case .missing: return .storeNotFound(url)
        case .directoryWithoutStore(_, let contents):
            return contents.isEmpty ? .storeNotFound(url)
                : .unrecognizedStore(url, reason: "a directory without an LMDB data file (data.mdb)")
        case .notLMDB(let loc, let why):
            return loc.isDirectory
                ? .corruptStore(loc.dataFile, reason: "not an LMDB data file (\(why))")
                : .wrongStoreType(url, expected: "lmdb", found: "a file that is not an LMDB environment (\(why))")
        case .damaged(let loc, let why): return .corruptStore(loc.dataFile, reason: why)
        case .unreadable(let loc, let why): return .io(loc.dataFile, operation: "reading", reason: why)
        case .foreign: return .unrecognizedStore(url, reason: foreignDescription + " written by this framework (no storeapi metadata)")
        case .store: return nil
        }
    }
}
