/// The bits of an archived property's flags (`_P`) and an attribute's flags (`NSFlagsKey`) that the model cache's
/// decoder reads and its encoder writes, per the format reference and the corpus caches: one table for both.
enum CoreDataModelFlags {
    // `_P`
    static let optional: Int64 = 0x2
    static let readOnly: Int64 = 0x4
    static let transient: Int64 = 0x8
    static let ordered: Int64 = 0x400
    // `NSFlagsKey`
    static let externalStorage: Int64 = 0x4
    static let preserveAfterDeletion: Int64 = 0x10
}
