import Foundation

/// A backup: a complete store at a point in time, stamped with when, why and where from.
public struct BackupInfo: Sendable, Hashable {
    /// Where the backup is.
    public var url: URL
    /// Its store type.
    public var type: String
    /// When it was taken.
    public var date: Date
    /// The label given when it was taken.
    public var label: String?
    /// The UUID of the store it was taken from (a backup keeps that UUID: it is the same logical store).
    public var sourceStoreUUID: UUID

    /// The metadata keys a backup's stamp is kept under.
    public enum Key {
        /// When the backup was taken (ISO 8601).
        public static let date = "storeapi.backup.date"
        /// The label the caller gave, if any.
        public static let label = "storeapi.backup.label"
        /// The UUID of the store the backup was taken from.
        public static let source = "storeapi.backup.sourceUUID"
        static let all = [date, label, source]
    }

    /// Reads the stamp from a store's metadata; `nil` when the store is not a backup.
    public init?(url: URL, metadata: StoreMetadata) {
        guard case .string(let when)? = metadata.custom[Key.date], let date = ExactISO8601.date(from: when),
              case .string(let source)? = metadata.custom[Key.source], let uuid = UUID(uuidString: source)
        else { return nil }
        self.url = url
        self.type = metadata.storeType
        self.date = date
        if case .string(let label)? = metadata.custom[Key.label] { self.label = label } else { self.label = nil }
        self.sourceStoreUUID = uuid
    }
}

extension StoreCoordinator {
    /// Takes a consistent snapshot of a loaded store while other contexts keep saving, and writes it to `url`
    /// (same type unless `type` names another), stamped with the date, `label` and the source's UUID.
    ///
    /// Backends with online backup (SQLite's backup API, LMDB's `mdb_env_copy2`) copy at the engine level;
    /// in-memory and atomic stores copy a snapshot of their state. The coordinator is unchanged.
    @discardableResult
    public func backupStore(_ store: LoadedStore, to url: URL, type: String? = nil, label: String? = nil) throws -> BackupInfo {
        return try loggedOperation("back up store", ["store": store.url?.logValue ?? "in memory", "backup": url.logValue], logger: logger) {
            guard stores.contains(where: { $0 === store }) else {
                throw StoreError.refused(store.url ?? URL(fileURLWithPath: "/"), reason: "store is not loaded in this coordinator")
            }
            let now = Date()
            let sourceUUID = store.identifier
            let options = StoreOperations.CopyOptions(editMetadata: { m in
                m.custom[BackupInfo.Key.date] = .string(ExactISO8601.string(from: now))
                m.custom[BackupInfo.Key.source] = .string(sourceUUID.uuidString)
                if let label { m.custom[BackupInfo.Key.label] = .string(label) } else { m.custom[BackupInfo.Key.label] = nil }
            })
            let metadata = try StoreOperations(registry: registry)
                .copyOpenStore(store.store, sourceBackend: store.backend, to: url, type: type ?? store.type, options: options)
            guard let info = BackupInfo(url: url, metadata: metadata) else {
                throw StoreError.io(url, operation: "backup", reason: "the backup's stamp could not be read back")
            }
            return info
        }
    }

    /// The backups in `directory` (any registered type), newest first.
    public func backups(in directory: URL) -> [BackupInfo] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        var found: [BackupInfo] = []
        for name in names where !name.hasPrefix(AtomicFile.stagingPrefix) {
            let url = directory.appendingPathComponent(name)
            guard let backend = try? registry.detectBackend(at: url),
                  let metadata = try? backend.readMetadata(at: url),
                  let info = BackupInfo(url: url, metadata: metadata) else { continue }
            found.append(info)
        }
        return found.sorted { $0.date > $1.date }
    }

    /// Restores a backup into a loaded store, with replace semantics: the store's files become an exact copy of
    /// the backup (whose files are not touched), the stamp is dropped, and the store is reloaded. Objects fetched
    /// before the restore fail with ``StoreError/objectInvalidated(_:reason:)``, never with a crash or stale data.
    @discardableResult
    public func restoreStore(_ store: LoadedStore, fromBackupAt backup: URL) throws -> LoadedStore {
        return try loggedOperation("restore store", ["store": store.url?.logValue ?? "in memory", "backup": backup.logValue], logger: logger) {
            guard let url = store.url else {
                throw StoreError.unsupported("restoring into an anonymous in-memory store")
            }
            let operations = StoreOperations(registry: registry)
            let backupBackend = try operations.backend(ofStoreAt: backup)
            let destinationBackend = store.backend
            let staged = try StorePlacement.stagingLocation(for: url, backend: destinationBackend)
            let strip = StoreOperations.CopyOptions(editMetadata: { m in for k in BackupInfo.Key.all { m.custom[k] = nil } })
            do {
                _ = try operations.copyStore(from: backup, sourceType: backupBackend.typeIdentifier, to: staged,
                                             type: destinationBackend.typeIdentifier, options: strip)
            } catch {
                StorePlacement.discard(staged: staged, backend: destinationBackend)
                throw error
            }
            let description = store.storeDescription
            swap(store, for: nil, reason: "the store was restored from a backup")
            do {
                let existing = try operations.existingStore(at: url, replacing: true)
                try StorePlacement.place(staged: staged, at: url, backend: destinationBackend, replacing: existing)
            } catch {
                StorePlacement.discard(staged: staged, backend: destinationBackend)
                _ = try? addStore(description)
                throw error
            }
            return try addStore(description)
        }
    }
}
