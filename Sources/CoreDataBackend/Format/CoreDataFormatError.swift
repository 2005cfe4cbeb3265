/// Why one of Core Data's bookkeeping structures (`Z_METADATA`'s plist, `Z_MODELCACHE`) is not what the format
/// says, naming the part and what is wrong. A store reader reports it as `StoreError.corruptStore`
/// with the file.
@_spi(BackendKit) public struct CoreDataFormatError: Error, Sendable, CustomStringConvertible {
    /// The structure at fault: `Z_METADATA`, `Z_MODELCACHE`, `Z_PRIMARYKEY`, or a model element such as
    /// `entity Car`.
    public let part: String
    /// What is wrong.
    public let message: String

    /// Creates an error.
    public init(_ part: String, _ message: String) {
        self.part = part
        self.message = message
    }

    public var description: String { "\(part): \(message)" }
}
