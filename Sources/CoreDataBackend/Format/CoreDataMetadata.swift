import Foundation
@_spi(BackendKit) import StoreAPI

/// The metadata of a Core Data SQLite store: the binary property list in `Z_METADATA.Z_PLIST`, typed.
///
/// The keys Core Data writes have fields; every other key (an app's own store metadata) is kept in ``custom`` with
/// its value as read, so ``propertyList`` writes back what was read.
@_spi(BackendKit) public struct CoreDataMetadata: Sendable, Equatable {
    /// `NSStoreType`: `"SQLite"` for every store this backend reads.
    public var storeType: String
    /// `NSStoreModelVersionHashes`: entity name → its 32-byte version hash.
    public var versionHashes: [String: Data]
    /// `NSStoreModelVersionHashesVersion` (3 in every known store).
    public var versionHashesVersion: Int64?
    /// `NSStoreModelVersionIdentifiers`: the model's version identifiers (`[""]` for Xcode's empty one).
    public var versionIdentifiers: [String]
    /// `NSPersistenceFrameworkVersion`: the Core Data build that last wrote the store.
    public var frameworkVersion: Int64?
    /// `NSStoreModelVersionHashesDigest` (base64 SHA-512; framework 1044 and later).
    public var versionHashesDigest: String?
    /// `NSStoreModelVersionChecksumKey` (base64 SHA-256; framework 1333 and later).
    public var versionChecksum: String?
    /// `_NSAutoVacuumLevel`: a string (`"2"`), as Core Data writes it.
    public var autoVacuumLevel: String?
    /// Every other key, with its value as stored (custom store metadata).
    public var custom: [String: PropertyListValue]

    static let storeTypeKey = "NSStoreType"
    static let hashesKey = "NSStoreModelVersionHashes"
    static let hashesVersionKey = "NSStoreModelVersionHashesVersion"
    static let identifiersKey = "NSStoreModelVersionIdentifiers"
    static let frameworkKey = "NSPersistenceFrameworkVersion"
    static let digestKey = "NSStoreModelVersionHashesDigest"
    static let checksumKey = "NSStoreModelVersionChecksumKey"
    static let autoVacuumKey = "_NSAutoVacuumLevel"

    /// Creates metadata from its parts.
    public init(
        storeType: String = "SQLite", versionHashes: [String: Data], versionHashesVersion: Int64? = 3,
        versionIdentifiers: [String] = [""], frameworkVersion: Int64? = nil, versionHashesDigest: String? = nil,
        versionChecksum: String? = nil, autoVacuumLevel: String? = "2", custom: [String: PropertyListValue] = [:]
    ) {
        self.storeType = storeType
        self.versionHashes = versionHashes
        self.versionHashesVersion = versionHashesVersion
        self.versionIdentifiers = versionIdentifiers
        self.frameworkVersion = frameworkVersion
        self.versionHashesDigest = versionHashesDigest
        self.versionChecksum = versionChecksum
        self.autoVacuumLevel = autoVacuumLevel
        self.custom = custom
    }

    /// Reads `Z_PLIST`'s bytes.
    public init(bytes: [UInt8]) throws(CoreDataFormatError) {
        let plist: PropertyListValue
        do throws(PropertyListError) {
            plist = try BinaryPropertyListReader.read(bytes)
        } catch {
            throw CoreDataFormatError("Z_METADATA", error.description)
        }
        try self.init(propertyList: plist)
    }

    /// Reads the decoded property list.
    public init(propertyList: PropertyListValue) throws(CoreDataFormatError) {
        func fail(_ message: String) -> CoreDataFormatError { CoreDataFormatError("Z_METADATA", message) }
        guard case .dictionary(let members) = propertyList else {
            throw fail("the plist is \(propertyList.summary), not a dictionary")
        }
        var storeType: String?
        var hashes: [String: Data] = [:]
        var sawHashes = false
        var custom: [String: PropertyListValue] = [:]
        var hashesVersion: Int64?
        var framework: Int64?
        var identifiers: [String] = []
        var digest: String?
        var checksum: String?
        var autoVacuum: String?
        for (key, value) in members {
            switch key {
            case Self.storeTypeKey:
                guard case .string(let s) = value else { throw fail("\(key) is \(value.summary), not a string") }
                storeType = s
            case Self.hashesKey:
                guard case .dictionary(let entries) = value else { throw fail("\(key) is \(value.summary), not a dictionary") }
                sawHashes = true
                for (entity, hash) in entries {
                    guard case .data(let d) = hash, d.count == 32 else {
                        throw fail("the version hash of \(entity) is \(hash.summary), not 32 bytes")
                    }
                    hashes[entity] = d
                }
            case Self.hashesVersionKey:
                guard case .integer(let i) = value else { throw fail("\(key) is \(value.summary), not an integer") }
                hashesVersion = i
            case Self.frameworkKey:
                guard case .integer(let i) = value else { throw fail("\(key) is \(value.summary), not an integer") }
                framework = i
            case Self.identifiersKey:
                let items: [PropertyListValue]
                switch value {
                case .array(let a), .set(let a): items = a
                default: throw fail("\(key) is \(value.summary), not an array")
                }
                var ids: [String] = []
                for item in items {
                    guard case .string(let s) = item else { throw fail("\(key) holds \(item.summary), not a string") }
                    ids.append(s)
                }
                identifiers = ids
            case Self.digestKey, Self.checksumKey, Self.autoVacuumKey:
                let text: String
                switch value {
                case .string(let s): text = s
                // Read an integer level too: the string form is Core Data's, a hand-written store may differ.
                case .integer(let i) where key == Self.autoVacuumKey: text = String(i)
                default: throw fail("\(key) is \(value.summary), not a string")
                }
                if key == Self.digestKey { digest = text } else if key == Self.checksumKey { checksum = text } else {
                    autoVacuum = text
                }
            default:
                custom[key] = value
            }
        }
        guard let storeType else { throw fail("no \(Self.storeTypeKey)") }
        guard sawHashes else { throw fail("no \(Self.hashesKey)") }
        self.init(
            storeType: storeType, versionHashes: hashes, versionHashesVersion: hashesVersion,
            versionIdentifiers: identifiers, frameworkVersion: framework, versionHashesDigest: digest,
            versionChecksum: checksum, autoVacuumLevel: autoVacuum, custom: custom)
    }

    /// The property list Core Data would store: its own keys, then the custom ones (sorted, for stable bytes).
    public var propertyList: PropertyListValue {
        var members: [(key: String, value: PropertyListValue)] = [
            (Self.storeTypeKey, .string(storeType)),
            (Self.hashesKey, .dictionary(versionHashes.sorted { $0.key < $1.key }.map { ($0.key, .data($0.value)) })),
            (Self.identifiersKey, .array(versionIdentifiers.map { .string($0) })),
        ]
        if let versionHashesVersion { members.append((Self.hashesVersionKey, .integer(versionHashesVersion))) }
        if let frameworkVersion { members.append((Self.frameworkKey, .integer(frameworkVersion))) }
        if let versionHashesDigest { members.append((Self.digestKey, .string(versionHashesDigest))) }
        if let versionChecksum { members.append((Self.checksumKey, .string(versionChecksum))) }
        if let autoVacuumLevel { members.append((Self.autoVacuumKey, .string(autoVacuumLevel))) }
        for (key, value) in custom.sorted(by: { $0.key < $1.key }) { members.append((key, value)) }
        return .dictionary(members)
    }

    /// The version hashes as Core Data's metadata shows them: base64.
    public var base64VersionHashes: [String: String] { versionHashes.mapValues { $0.base64EncodedString() } }
}
