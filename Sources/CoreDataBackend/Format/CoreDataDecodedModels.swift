import Foundation
@_spi(BackendKit) import StoreAPI

/// What this process last decoded from a store's model bytes (the `Z_MODELCACHE` blob, the schema JSON a store this
/// backend created keeps in its metadata), by those bytes.
///
/// A command reads a store's metadata and then opens it, and each decodes the same model: decoding it twice cost
/// more than the records of a small conversion. The values are pure functions of the bytes, compared whole, so a
/// store whose model changed decodes again; failures are not kept, so each read reports its own.
final class CoreDataDecodedModels<Value: Sendable>: @unchecked Sendable {
    // @unchecked: every access to `entries` holds `lock`.
    private let lock = NSLock()
    private var entries: [(bytes: [UInt8], value: Value)] = []
    /// Stores a process works with at once are few: the oldest entry goes first.
    private static var capacity: Int { 4 }

    /// The value kept for `bytes`, if any, without decoding anything.
    func kept(for bytes: [UInt8]) -> Value? {
        lock.lock()
        defer { lock.unlock() }
        return entries.first { $0.bytes == bytes }?.value
    }

    /// The value kept for `bytes`, else what `decode` makes of them (kept when it succeeds).
    func value(for bytes: [UInt8], decode: () throws(StoreError) -> Value) throws(StoreError) -> Value {
        lock.lock()
        let kept = entries.first { $0.bytes == bytes }?.value
        lock.unlock()
        if let kept { return kept }
        let value = try decode()
        keep(value, for: bytes)
        return value
    }

    /// Keeps `value` for `bytes`, known without decoding them (the oldest entry goes when full).
    func keep(_ value: Value, for bytes: [UInt8]) {
        lock.lock()
        defer { lock.unlock() }
        if let at = entries.firstIndex(where: { $0.bytes == bytes }) { entries.remove(at: at) }
        if entries.count >= Self.capacity { entries.removeFirst() }
        entries.append((bytes, value))
    }
}

/// The process's ``CoreDataDecodedModels``.
enum CoreDataModelMemos {
    /// The model caches decoded, with the schema each gives.
    static let modelCaches = CoreDataDecodedModels<(model: CoreDataModel, schema: Schema)>()
    /// The model caches decoded, without a schema derived from them (a store that keeps its own schema needs none).
    static let models = CoreDataDecodedModels<CoreDataModel>()
    /// The schemas read from stores' metadata, with their entities' Core Data version hashes.
    static let embeddedSchemas = CoreDataDecodedModels<(schema: Schema, hashes: [String: Data])>()
    /// The model caches this process encoded for the stores it created, each with the schema JSON it wrote beside
    /// it (see ``CoreDataStoreBackend/create(at:metadata:persistentHistory:)``).
    static let writtenCaches = CoreDataDecodedModels<[UInt8]>()
}
