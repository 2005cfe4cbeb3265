import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Model`: makes a struct a persistent model. It adds the `persistentID` the store fills in, and a
/// `PersistentModel` conformance whose entity description, key-path table, decoder and encoder are written out
/// from the stored properties, so that nothing is looked up by reflection at run time.
public struct ModelMacro: MemberMacro, ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard declaration.is(StructDeclSyntax.self) else { return [] }
        let access = accessPrefix(declaration)
        return ["\(raw: access)var persistentID: StoreModels.PersistentID? = nil"]
    }

    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard let structDecl = declaration.as(StructDeclSyntax.self) else {
            context.diagnose(Diagnostic(node: node, message: ModelDiagnostic(
                "@Model applies to a struct: models are values that cross actors (Sendable snapshots)")))
            return []
        }
        let typeName = structDecl.name.text
        let entityName = entityNameArgument(node) ?? typeName
        let access = accessPrefix(declaration)
        var properties: [ModelPropertySyntax] = []
        for member in structDecl.memberBlock.members {
            guard let variable = member.decl.as(VariableDeclSyntax.self) else { continue }
            properties += storedProperties(variable, in: context)
        }

        var describe: [String] = []
        var keyPaths: [String] = []
        var decode: [String] = []
        var encode: [String] = []
        for (i, p) in properties.enumerated() {
            let name = literal(p.storedName)
            keyPaths.append("if keyPath == \\\(typeName).\(p.name) { return \(name) }")
            switch p.kind {
            case .attribute:
                // `as` gives the constant the property's type, as the declaration's initializer did.
                let defaultArgument = p.constantDefault.map { ", default: (\($0) as \(p.type))" } ?? ""
                describe.append(".attribute(\(name), (\(p.type)).self, indexed: \(p.indexed), unique: \(p.unique)\(defaultArgument))")
                decode.append("self.\(p.name) = try row.attribute(\(i))")
                encode.append("row.attribute(self.\(p.name))")
            case .toOne(let destination, let optional):
                describe.append(".toOne(\(name), \(destination).self, optional: \(optional), inverse: \(p.inverse.map(literal) ?? "nil"), deleteRule: \(p.deleteRule ?? ".nullify"))")
                decode.append(optional ? "self.\(p.name) = try row.toOne(\(i))" : "self.\(p.name) = try row.requiredToOne(\(i))")
                encode.append("row.toOne(self.\(p.name))")
            case .toMany(let destination):
                describe.append(".toMany(\(name), \(destination).self, ordered: \(p.ordered), inverse: \(p.inverse.map(literal) ?? "nil"), deleteRule: \(p.deleteRule ?? ".nullify"))")
                decode.append("self.\(p.name) = try row.toMany(\(i))")
                encode.append("row.toMany(self.\(p.name))")
            }
        }
        decode.append("self.persistentID = row.persistentID")
        let source: DeclSyntax = """
            extension \(type.trimmed): StoreModels.PersistentModel {
                \(raw: access)static var entityName: String { \(raw: literal(entityName)) }
                \(raw: access)static var modelProperties: [StoreModels.ModelProperty] {
                    [\(raw: describe.joined(separator: ",\n"))]
                }
                \(raw: access)static func propertyName(for keyPath: PartialKeyPath<\(raw: typeName)>) -> String? {
                    \(raw: keyPaths.joined(separator: "\n"))
                    return nil
                }
                \(raw: access)init(from row: StoreModels.ModelRow) throws {
                    \(raw: decode.joined(separator: "\n"))
                }
                \(raw: access)func encode(to row: inout StoreModels.ModelRowWriter) {
                    \(raw: encode.joined(separator: "\n"))
                }
            }
            """
        guard let ext = source.as(ExtensionDeclSyntax.self) else { return [] }
        return [ext]
    }

    /// `public ` when the type is public (its conformance's members must be too), else nothing.
    private static func accessPrefix(_ declaration: some DeclGroupSyntax) -> String {
        let isPublic = declaration.modifiers.contains { $0.name.tokenKind == .keyword(.public) || $0.name.tokenKind == .keyword(.open) }
        return isPublic ? "public " : ""
    }

    private static func entityNameArgument(_ node: AttributeSyntax) -> String? {
        guard let arguments = node.arguments?.as(LabeledExprListSyntax.self), let first = arguments.first,
              let string = first.expression.as(StringLiteralExprSyntax.self)
        else { return nil }
        return string.representedLiteralValue
    }

    private static func literal(_ s: String) -> String {
        var out = "\""
        for c in s {
            if c == "\\" || c == "\"" { out.append("\\") }
            out.append(c)
        }
        return out + "\""
    }

    /// The persisted properties a `var`/`let` declaration introduces: stored (no getter), not static, not
    /// `@Transient`, and with a type written out (the macro cannot infer one from an initial value).
    private static func storedProperties(
        _ variable: VariableDeclSyntax, in context: some MacroExpansionContext
    ) -> [ModelPropertySyntax] {
        if variable.modifiers.contains(where: { $0.name.tokenKind == .keyword(.static) || $0.name.tokenKind == .keyword(.class) }) {
            return []
        }
        let attributes = variable.attributes.compactMap { $0.as(AttributeSyntax.self) }
        func attribute(_ name: String) -> AttributeSyntax? {
            attributes.first { $0.attributeName.trimmedDescription == name }
        }
        if attribute("Transient") != nil { return [] }
        let isLet = variable.bindingSpecifier.tokenKind == .keyword(.let)
        var out: [ModelPropertySyntax] = []
        for binding in variable.bindings {
            guard let identifier = binding.pattern.as(IdentifierPatternSyntax.self) else { continue }
            if let accessors = binding.accessorBlock {
                // A computed property; `willSet`/`didSet` observers alone keep it stored.
                if case .accessors(let list) = accessors.accessors {
                    let observersOnly = list.allSatisfy {
                        $0.accessorSpecifier.tokenKind == .keyword(.willSet) || $0.accessorSpecifier.tokenKind == .keyword(.didSet)
                    }
                    if !observersOnly { continue }
                } else {
                    continue
                }
            }
            // A constant with its value written in the declaration cannot be read back from a store.
            if isLet && binding.initializer != nil { continue }
            let name = identifier.identifier.text
            if name == "persistentID" { continue }
            guard let type = binding.typeAnnotation?.type else {
                context.diagnose(Diagnostic(node: binding, message: ModelDiagnostic(
                    "'\(name)' needs a type annotation to be stored (or mark it @Transient)")))
                continue
            }
            let relationship = attribute("Relationship")
            let attr = attribute("Attribute")
            let options = relationship ?? attr
            out.append(ModelPropertySyntax(
                name: name, type: type.trimmedDescription, kind: ModelPropertySyntax.kind(of: type),
                storedName: stringArgument(options, "name") ?? name,
                inverse: inverseArgument(relationship), deleteRule: argument(relationship, "deleteRule"),
                ordered: argument(relationship, "ordered") == "true",
                indexed: argument(attr, "indexed") == "true", unique: argument(attr, "unique") == "true",
                constantDefault: type.is(ImplicitlyUnwrappedOptionalTypeSyntax.self)
                    ? nil : binding.initializer.flatMap { constantExpression($0.value) }))
        }
        return out
    }

    /// The initial value as written when it is a constant the schema can hold as a default: a number, string
    /// (without interpolation) or Boolean literal, a negated number, or an enum case (`.draft`). Anything else
    /// (`Date()`, `UUID()`, a function call) is evaluated per instance and is not a schema default.
    private static func constantExpression(_ expression: ExprSyntax) -> String? {
        if expression.is(IntegerLiteralExprSyntax.self) || expression.is(FloatLiteralExprSyntax.self)
            || expression.is(BooleanLiteralExprSyntax.self) {
            return expression.trimmedDescription
        }
        if let string = expression.as(StringLiteralExprSyntax.self) {
            let plain = string.segments.allSatisfy { $0.is(StringSegmentSyntax.self) }
            return plain ? string.trimmedDescription : nil
        }
        if let prefix = expression.as(PrefixOperatorExprSyntax.self), prefix.operator.text == "-",
           prefix.expression.is(IntegerLiteralExprSyntax.self) || prefix.expression.is(FloatLiteralExprSyntax.self) {
            return expression.trimmedDescription
        }
        if let member = expression.as(MemberAccessExprSyntax.self), member.base == nil {
            return expression.trimmedDescription
        }
        return nil
    }

    private static func argument(_ attribute: AttributeSyntax?, _ label: String) -> String? {
        guard let list = attribute?.arguments?.as(LabeledExprListSyntax.self) else { return nil }
        return list.first { $0.label?.text == label }?.expression.trimmedDescription
    }

    private static func stringArgument(_ attribute: AttributeSyntax?, _ label: String) -> String? {
        guard let list = attribute?.arguments?.as(LabeledExprListSyntax.self),
              let expression = list.first(where: { $0.label?.text == label })?.expression
        else { return nil }
        return expression.as(StringLiteralExprSyntax.self)?.representedLiteralValue
    }

    /// The inverse's name from `inverse: \Author.books` (its last component) or `inverse: "books"`.
    private static func inverseArgument(_ attribute: AttributeSyntax?) -> String? {
        guard let list = attribute?.arguments?.as(LabeledExprListSyntax.self),
              let expression = list.first(where: { $0.label?.text == "inverse" })?.expression
        else { return nil }
        if let string = expression.as(StringLiteralExprSyntax.self) { return string.representedLiteralValue }
        if let keyPath = expression.as(KeyPathExprSyntax.self),
           let last = keyPath.components.last?.component.as(KeyPathPropertyComponentSyntax.self) {
            return last.declName.baseName.text
        }
        return nil
    }
}

/// An error the macro reports at the declaration it cannot expand.
struct ModelDiagnostic: DiagnosticMessage {
    let message: String
    init(_ message: String) { self.message = message }
    var diagnosticID: MessageID { MessageID(domain: "StoreModels", id: "model") }
    var severity: DiagnosticSeverity { .error }
}
