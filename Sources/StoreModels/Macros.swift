import StoreAPI

/// Makes a struct a persistent model: its stored properties become the attributes and relationships of an entity
/// named after the type (or `entityName`).
///
/// ```swift
/// @Model struct Book {
///     var title: String
///     var pages: Int
///     var published: Date?
///     var genre: Genre                                  // enum Genre: String, ModelValue
///     @Relationship(inverse: \Author.books) var author: ModelRef<Author>?
///     @Relationship(inverse: \Tag.books) var tags: [ModelRef<Tag>]
/// }
/// ```
///
/// The macro adds `persistentID` (set by the store on insert and fetch) and a ``PersistentModel`` conformance with
/// the entity's description, a table of key paths to property names (for ``ModelPredicate`` and ``ModelSort``),
/// and code that reads and writes the properties without reflection. Attribute types are ``ModelValue`` types;
/// relationships are ``ModelRef`` (to-one, optional or required) and `[ModelRef]` (to-many). Properties marked
/// ``Transient()``, computed properties and constants with a value in their declaration are not stored.
@attached(member, names: named(persistentID))
@attached(
    extension, conformances: PersistentModel,
    names: named(entityName), named(modelProperties), named(propertyName(for:)), named(init(from:)), named(encode(to:))
)
public macro Model(_ entityName: String? = nil) = #externalMacro(module: "StoreModelsMacros", type: "ModelMacro")

/// Describes a relationship of a ``Model(_:)`` type: its inverse on the destination, what deleting the source does
/// to the related records, whether a to-many keeps its order, and its stored name when it differs.
@attached(peer)
public macro Relationship(
    name: String? = nil, inverse: AnyKeyPath? = nil, deleteRule: DeleteRule = .nullify, ordered: Bool = false
) = #externalMacro(module: "StoreModelsMacros", type: "PropertyMarkerMacro")

/// Describes an attribute of a ``Model(_:)`` type: its stored name when it differs, whether the store indexes it,
/// and whether its value must be unique among the entity's records.
@attached(peer)
public macro Attribute(name: String? = nil, indexed: Bool = false, unique: Bool = false) =
    #externalMacro(module: "StoreModelsMacros", type: "PropertyMarkerMacro")

/// Keeps a stored property of a ``Model(_:)`` type out of the store (it needs an initial value).
@attached(peer)
public macro Transient() = #externalMacro(module: "StoreModelsMacros", type: "PropertyMarkerMacro")
