import Foundation
@_spi(BackendKit) import StoreAPI

extension StoreMetadata {
    /// Metadata as the framework wrote it before version hashes became Core Data's: layout
    /// ``StoreMetadata/legacyVersionHashFormatVersion`` with the legacy hashes. Every backend persists metadata as
    /// its JSON encoding, so a store created with this holds exactly what such a store held.
    public static func writtenWithLegacyVersionHashes(storeType: String, schema: Schema) -> StoreMetadata {
        var metadata = StoreMetadata(storeType: storeType, schema: schema)
        metadata.formatVersion = StoreMetadata.legacyVersionHashFormatVersion
        metadata.versionHashes = schema.legacyVersionHashes
        return metadata
    }
}
