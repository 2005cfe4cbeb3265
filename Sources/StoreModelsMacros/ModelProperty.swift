import SwiftSyntax

/// One stored property of a `@Model` type, as the macro read it from the source.
struct ModelPropertySyntax {
    enum Kind {
        case attribute
        /// A to-one relationship (`ModelRef<X>` or `ModelRef<X>?`).
        case toOne(destination: String, optional: Bool)
        /// A to-many relationship (`[ModelRef<X>]`).
        case toMany(destination: String)
    }

    let name: String
    let type: String
    let kind: Kind
    /// The stored name when `@Attribute(name:)` or `@Relationship(name:)` gives one.
    let storedName: String
    /// Arguments of `@Relationship` (inverse, delete rule, ordered) or `@Attribute` (indexed, …), as written.
    let inverse: String?
    let deleteRule: String?
    let ordered: Bool
    let indexed: Bool
    let unique: Bool
    /// The initial value, as written, when it is a constant the schema can hold as the attribute's default.
    let constantDefault: String?

    /// Reads the property's kind from its type's spelling: relationships are the ones holding `ModelRef`s.
    static func kind(of type: TypeSyntax) -> Kind {
        if let optional = type.as(OptionalTypeSyntax.self), let d = refDestination(optional.wrappedType) {
            return .toOne(destination: d, optional: true)
        }
        if let d = refDestination(type) { return .toOne(destination: d, optional: false) }
        if let array = type.as(ArrayTypeSyntax.self), let d = refDestination(array.element) {
            return .toMany(destination: d)
        }
        return .attribute
    }

    private static func refDestination(_ type: TypeSyntax) -> String? {
        guard let ident = type.as(IdentifierTypeSyntax.self), ident.name.text == "ModelRef",
              let argument = ident.genericArgumentClause?.arguments.first
        else {
            if let member = type.as(MemberTypeSyntax.self), member.name.text == "ModelRef",
               let argument = member.genericArgumentClause?.arguments.first {
                return argument.argument.trimmedDescription
            }
            return nil
        }
        return argument.argument.trimmedDescription
    }
}
