import Foundation
@_spi(BackendKit) import StoreAPI

/// Where the model a Core Data store is read with comes from.
public enum CoreDataModelSource: Sendable, Hashable {
    /// The compiled model the store keeps in `Z_MODELCACHE` (stores written since 2012).
    case modelCache
    /// The app's model given as an option (`coredata.model`, `storectl --model`), checked against the store's
    /// version hashes.
    case appModel(URL)
    /// Inferred from `Z_PRIMARYKEY` and the tables, for a store without a cache: names and exact types are guesses.
    /// `versionHashMismatches` names the entities whose stored version hash the inferred schema does not reproduce
    /// (usually all of them, since inferred names and types cannot); it is a warning, never an error.
    case inferred(versionHashMismatches: [String])
    /// The framework's schema, which a store this backend created keeps in its metadata
    /// (``CoreDataStoreBackend/schemaMetadataKey``) beside its model cache, exact where the cache is not.
    case embeddedSchema
}

/// The app's model, read from a file and checked against a store before the store is read with it.
enum CoreDataAppModel {
    /// The option key naming the model: a path to an Xcode model (`.xcdatamodel`, or `.xcdatamodeld` for its
    /// current version) or a compiled `.mom`.
    static let optionKey = "coredata.model"

    /// Loads the model at `url`. A compiled `.mom` is Core Data's keyed archive (the same vocabulary as the cache);
    /// anything else goes to the framework's Xcode model loader.
    ///
    /// - Throws: `StoreError.invalidSchema` naming the model file when it cannot be read or is inconsistent.
    static func load(_ url: URL) throws(StoreError) -> CoreDataModel {
        if url.pathExtension == "momd" {
            throw .invalidSchema(.unreadableModel(
                file: url.path, reason: "a .momd holds one .mom per model version: pass the version's .mom"))
        }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue,
            let head = try? FileHandle(forReadingFrom: url).read(upToCount: 6), head == Data("bplist".utf8),
            url.pathExtension == "mom"
        {
            let bytes: Data
            do { bytes = try Data(contentsOf: url) } catch {
                throw .invalidSchema(.unreadableModel(file: url.path, reason: "cannot read: \(error.localizedDescription)"))
            }
            do throws(CoreDataFormatError) {
                return try CoreDataModelCache.decode(archiveBytes: Array(bytes))
            } catch {
                throw .invalidSchema(.unreadableModel(file: url.path, reason: error.description))
            }
        }
        do {
            return CoreDataModel(schema: try Schema(xcodeModelAt: url))
        } catch let error as SchemaError {
            throw .invalidSchema(error)
        } catch {
            throw .invalidSchema(.unreadableModel(file: url.path, reason: "\(error)"))
        }
    }

    /// The entities whose version hash computed from `schema` differs from the one the store recorded, and those on
    /// one side only (marked so), sorted by name. Empty when the model is the one the store was written with.
    static func mismatches(_ schema: Schema, storeHashes: [String: Data]) -> [String] {
        let computed = schema.coreDataVersionHashes.entityHashes
        var out: [String] = []
        for name in Set(computed.keys).union(storeHashes.keys).sorted() {
            switch (computed[name], storeHashes[name]) {
            case let (c?, s?) where c != s: out.append(name)
            case (_?, nil): out.append("\(name) (not in the store)")
            case (nil, _?): out.append("\(name) (not in the model)")
            default: break
            }
        }
        return out
    }

    /// The app's model at `modelURL` for the store `file`, with its schema, once its version hashes are the store's.
    ///
    /// - Throws: `StoreError.incompatibleSchema` naming the store and each entity whose hash differs (or that one
    ///   side lacks); the errors of ``load(_:)``.
    static func checked(_ modelURL: URL, for file: CoreDataStoreFile) throws(StoreError) -> (CoreDataModel, Schema) {
        let model = try load(modelURL)
        let schema: Schema
        do throws(SchemaError) {
            schema = try model.schema()
        } catch {
            throw .invalidSchema(error)
        }
        let differing = mismatches(schema, storeHashes: file.metadata.versionHashes)
        guard differing.isEmpty else { throw .incompatibleSchema(file.url, entities: differing) }
        return (model, schema)
    }
}
