import Foundation

/// An index the schema author asks stores to keep for fetches on an entity (Core Data's `NSFetchIndexDescription`,
/// Xcode's `<fetchIndex>`): one or more properties, each ascending or descending.
///
/// An index changes how fast fetches are, never what a store holds or answers, and it is not part of any version
/// hash (Core Data's included). Backends that keep indexes create one per fetch index (the `sqlite` backend as
/// `Z_<Entity>_<name>` over the properties' columns, the `coredata` backend as Core Data does); every backend keeps
/// fetch indexes in its stored schema, so a store converted to another type and back still has them.
public struct FetchIndex: Sendable, Hashable {
    /// The index's name, unique among the fetch indexes of its entity.
    public var name: String
    /// The indexed properties, most significant first.
    public var elements: [Element]

    /// Creates a fetch index.
    public init(name: String, elements: [Element]) {
        self.name = name
        self.elements = elements
    }

    /// One indexed property of a fetch index (Core Data's `NSFetchIndexElementDescription`).
    public struct Element: Sendable, Hashable {
        /// The name of an attribute or to-one relationship of the entity (inherited ones included).
        public var property: String
        /// The kind of index structure.
        public var kind: Kind
        /// Whether the property's values are kept in ascending order (Xcode's `order="ascending"`).
        public var isAscending: Bool

        /// Creates an element.
        public init(property: String, kind: Kind = .binary, isAscending: Bool = true) {
            self.property = property
            self.kind = kind
            self.isAscending = isAscending
        }
    }

    /// The structure of a fetch index element.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A B-tree (Xcode's `Binary`): the ordinary index.
        case binary
        /// An R-tree (Xcode's `RTree`), for range queries over bounding values. Stores without R-tree support make
        /// no index for it.
        case rTree
    }
}
