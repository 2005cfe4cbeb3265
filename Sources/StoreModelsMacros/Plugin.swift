import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plug-in that expands StoreModels' macros.
@main
struct StoreModelsPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [ModelMacro.self, PropertyMarkerMacro.self]
}
