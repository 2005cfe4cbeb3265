import Foundation
@_spi(BackendKit) import StoreAPI

extension NameBasedUUID {
    /// The namespace for store UUIDs derived from the contents of Core Data XML files that name none (a fixed
    /// random UUID).
    static let storeNamespace = UUID(uuid: (0x5B, 0x0F, 0x8E, 0x52, 0x33, 0x1D, 0x4C, 0x6A,
                                            0x9E, 0x47, 0x0D, 0x2B, 0x61, 0xC8, 0x7A, 0x13))
}
