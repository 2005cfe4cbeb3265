import Foundation
@_spi(BackendKit) import StoreAPI

extension CoreDataStoreBackend {
    /// Copies the store at `source` to the new path `destination`: the database with SQLite's backup API (what the
    /// source's `-wal` holds included, without checkpointing it or changing any of its files), then its
    /// `.Name_SUPPORT` folder with the external binary data and, for a store with CloudKit tables, its CloudKit
    /// asset folders (`ckAssetFiles`, `Name_ckAssets`). Everything Core Data keeps in the file travels unchanged: the
    /// model cache, persistent history, CloudKit's tables, fetch indexes.
    ///
    /// The support folder is copied after the database. When a save replaced a value in between (so a file the
    /// copied database refers to was already deleted from the source, which no longer refers to it), the copy is
    /// made again; a file the source refers to and lacks is a damage the copy carries, as `verify` reports it.
    ///
    /// - Throws: ``StoreError/storeExists(_:)`` when something is at `destination`,
    ///   ``StoreError/refused(_:reason:)`` when a sidecar or folder of the copy's name is already beside it; the
    ///   errors of reading the
    ///   source; ``StoreError/io(_:operation:reason:)`` when the copy cannot be written (nothing of it is left).
    public func copyStore(from source: URL, to destination: URL) throws {
        try requireStore(source)
        guard !FileManager.default.fileExists(atPath: destination.path) else { throw StoreError.storeExists(destination) }
        // Leftovers beside the new path would become part of the copy (a stale -wal would even be replayed into it).
        for leftover in Self.sidecarSuffixes.map({ Self.sidecar(destination, $0) }) + [Self.supportFolder(of: destination)]
        where FileManager.default.fileExists(atPath: leftover.path) {
            throw StoreError.refused(leftover, reason: "exists where the copy of \(source.path) would put its own; remove it first")
        }
        let sourceSupport = Self.supportFolder(of: source)
        let attempts = 3
        for attempt in 1...attempts {
            do {
                try ReadOnlyDatabase.open(source).backup(to: destination)
                try AtomicFile.fsync(path: destination)
                try Self.copyCloudKitAssets(from: source, to: destination)
                guard FileManager.default.fileExists(atPath: sourceSupport.path) else { return }
                try CoreDataExternalData.copyTree(sourceSupport, to: Self.supportFolder(of: destination))
                // A file the copy refers to but lacks was deleted from the source after the database was copied
                // (a save replaced its value) unless the source still refers to it: then the source lacks it too.
                // When the model cannot be read to find the references, the copy stands as made.
                let folder = CoreDataExternalData.folder(ofStoreAt: destination)
                guard let referenced = try? externalReferences(ofStoreAt: destination) else { return }
                let missing = referenced.filter { !FileManager.default.fileExists(atPath: folder.appendingPathComponent($0).path) }
                guard !missing.isEmpty, let current = try? externalReferences(ofStoreAt: source),
                    !missing.isSubset(of: current)
                else { return }
                guard attempt < attempts else {
                    throw StoreError.io(destination, operation: "copying \(source.path)",
                                        reason: "its external data files kept changing while they were copied")
                }
            } catch {
                Self.removeCopy(at: destination)
                throw error
            }
            Self.removeCopy(at: destination)
        }
    }

    /// The CloudKit asset folders of a store with CloudKit tables, copied beside the copy (see
    /// ``cloudKitAssetFolders(of:)``). A folder already at the copy's side is refused, never merged into.
    static func copyCloudKitAssets(from source: URL, to destination: URL) throws {
        var isDirectory: ObjCBool = false
        let pairs = zip(cloudKitAssetFolders(of: source), cloudKitAssetFolders(of: destination)).filter {
            FileManager.default.fileExists(atPath: $0.0.path, isDirectory: &isDirectory) && isDirectory.boolValue
        }
        guard !pairs.isEmpty, hasCloudKitTables(destination) else { return }
        if let taken = pairs.first(where: { FileManager.default.fileExists(atPath: $0.1.path) }) {
            throw StoreError.refused(taken.1, reason: "exists beside the copy of \(source.path); not merging CloudKit assets into it")
        }
        for (from, to) in pairs { try CoreDataExternalData.copyTree(from, to: to) }
    }

    /// Deletes what a copy wrote at `destination` (a copy made under a staging name owns every sidecar name;
    /// beside a plain path, only the files the copy itself made).
    static func removeCopy(at destination: URL) {
        for suffix in sidecarSuffixes { try? FileManager.default.removeItem(at: sidecar(destination, suffix)) }
        try? FileManager.default.removeItem(at: supportFolder(of: destination))
        if isStaging(destination) {
            for folder in cloudKitAssetFolders(of: destination) { try? FileManager.default.removeItem(at: folder) }
        }
        try? FileManager.default.removeItem(at: destination)
    }

    /// The names of the external data files the store at `url` refers to (read with the model its records are
    /// read with).
    func externalReferences(ofStoreAt url: URL) throws -> Set<String> {
        var names: Set<String> = []
        for r in try Self.externalReferences(ofStoreAt: url, appModel: modelURL) {
            if case .file(let name) = r.content { names.insert(name) }
        }
        return names
    }

    /// Every non-inline value of an attribute that allows external storage in the store at `url`.
    static func externalReferences(ofStoreAt url: URL, appModel: URL?) throws -> [CoreDataExternalData.Reference] {
        let file = try CoreDataStoreFile.read(at: url)
        let (metadata, model, _) = try metadata(of: file, appModel: appModel)
        let layout: CoreDataLayout
        do throws(CoreDataFormatError) {
            layout = try CoreDataLayout(model: model)
        } catch {
            throw StoreError.corruptStore(url, reason: "the store's model cannot be laid out: \(error.description)")
        }
        let db = try ReadOnlyDatabase.open(url)
        let columns = try CoreDataExternalData.columns(layout, schema: metadata.schema).filter { c throws(StoreError) in
            try CoreDataStoreVerifier.columns(of: c.table, in: db).contains(c.column)
        }
        return try CoreDataExternalData.references(in: columns, rows: { sql throws(StoreError) in try db.rows(sql) })
    }
}
