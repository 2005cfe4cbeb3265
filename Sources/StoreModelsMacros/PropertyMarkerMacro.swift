import SwiftSyntax
import SwiftSyntaxMacros

/// `@Relationship`, `@Attribute` and `@Transient` add nothing themselves: `@Model` reads them off the properties.
public struct PropertyMarkerMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}
