@_spi(BackendKit) import CoreDataBackend
import Foundation
@_spi(BackendKit) import StoreAPI
import Testing

/// The compiled-model decoder on small hand-built archives: what it reads, and the typed errors for models of the
/// wrong shape.
@Suite struct ModelCacheTests {
    static func cls(_ names: String...) -> PropertyListValue {
        .dictionary([("$classname", .string(names[0])), ("$classes", .array(names.map { .string($0) }))])
    }

    /// A model with one entity `Thing` and one attribute `size`; the closures change one piece.
    static func model(
        rootClass: String = "NSManagedObjectModel", superentity: UInt64 = 0, propertyClass: UInt64 = 11,
        typeCode: Int64 = 200, flags: Int64 = 0, defaultValue: PropertyListValue = .uid(0)
    ) -> [UInt8] {
        let objects: [PropertyListValue] = [
            .string("$null"),
            .dictionary([("$class", .uid(2)), ("NSEntities", .uid(3))]),
            cls(rootClass, "NSObject"),
            .dictionary([("$class", .uid(4)), ("NS.keys", .array([.uid(5)])), ("NS.objects", .array([.uid(6)]))]),
            cls("NSMutableDictionary", "NSDictionary", "NSObject"),
            .string("Thing"),
            .dictionary([("$class", .uid(7)), ("NSEntityName", .uid(5)), ("NSProperties", .uid(8)),
                         ("NSSuperentity", .uid(superentity)), ("NSIsAbstract", .bool(false))]),
            cls("NSEntityDescription", "NSObject"),
            .dictionary([("$class", .uid(4)), ("NS.keys", .array([.uid(9)])), ("NS.objects", .array([.uid(10)]))]),
            .string("size"),
            .dictionary([("$class", .uid(propertyClass)), ("NSPropertyName", .uid(9)), ("NSAttributeType", .integer(typeCode)),
                         ("_P", .integer(flags)), ("NSDefaultValue", defaultValue), ("NSFlagsKey", .integer(0x14))]),
            cls("NSAttributeDescription", "NSPropertyDescription", "NSObject"),
            .integer(42),
        ]
        let archive = PropertyListValue.dictionary([
            ("$version", .integer(100_000)), ("$archiver", .string("NSKeyedArchiver")),
            ("$top", .dictionary([("root", .uid(1))])), ("$objects", .array(objects)),
        ])
        return BinaryPropertyListWriter.write(archive)
    }

    @Test func decodesEntitiesAttributesAndFlags() throws {
        let blob = try RawDeflate.deflate(Self.model(flags: 0x2, defaultValue: .uid(12)))
        let model = try CoreDataModelCache.decode(blob)
        let thing = try #require(model.entity(named: "Thing"))
        #expect(thing.parent == nil)
        #expect(thing.attributes.count == 1)
        let size = try #require(thing.attributes.first)
        #expect(size.type == .integer32)
        #expect(size.isOptional)
        #expect(!size.isTransient)
        #expect(size.defaultValue == .integer32(42))
        #expect(size.allowsExternalBinaryDataStorage)
        #expect(size.preservesValueInHistoryOnDeletion)
        #expect(model.entityNumbers() == ["Thing": 1])
        let schema = try model.schema()
        #expect(schema.entity(named: "Thing")?.attribute("size")?.defaultValue == .integer32(42))
    }

    static func rejects(_ bytes: [UInt8], _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do throws(CoreDataFormatError) {
            _ = try CoreDataModelCache.decode(archiveBytes: bytes)
            Issue.record("accepted", sourceLocation: sourceLocation)
        } catch {
            #expect(error.description.contains(fragment), "\(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func typedErrorsForModelsOfTheWrongShape() throws {
        Self.rejects(Self.model(rootClass: "NSDictionary"), "expected an NSManagedObjectModel")
        Self.rejects(Self.model(typeCode: 4242), "unknown attribute type code 4242")
        Self.rejects(Self.model(propertyClass: 7), "is an NSEntityDescription")
        Self.rejects(Self.model(defaultValue: .uid(9)), "does not fit")
        Self.rejects(Self.model(superentity: 12), "expected an NSEntityDescription")
        Self.rejects(Array("not a plist".utf8), "Z_MODELCACHE")
        #expect(throws: CoreDataFormatError.self) { try CoreDataModelCache.decode(Array("not deflate".utf8)) }
    }

    @Test func anEntityThatIsItsOwnParentIsASchemaError() throws {
        let model = try CoreDataModelCache.decode(archiveBytes: Self.model(superentity: 6))
        #expect(model.entity(named: "Thing")?.parent == "Thing")
        // Numbering and schema building end, with a typed error for the cycle.
        _ = model.entityNumbers()
        #expect(throws: SchemaError.self) { try model.schema() }
    }

    /// A compiled model's fetch indexes in the schema: the compiler's index for an indexed attribute folds back into
    /// the attribute's flag; partial ones, ones over unknown properties or of unknown types, and a second of one
    /// name are left out rather than making the model unreadable.
    @Test func fetchIndexesTheSchemaCannotHoldAreLeftOut() throws {
        var model = CoreDataModel(schema: try Schema(entities: [EntityDescription(name: "A", attributes: [
            AttributeDescription(name: "x", type: .integer64, isIndexed: true), AttributeDescription(name: "y", type: .string),
        ])]))
        typealias Index = CoreDataModel.FetchIndex
        typealias Element = CoreDataModel.FetchIndexElement
        #expect(model.entities[0].fetchIndexes == [Index(name: "x", elements: [Element(property: "x")])])
        model.entities[0].fetchIndexes += [
            Index(name: "byY", elements: [Element(property: "y", isAscending: false)]),
            Index(name: "byY", elements: [Element(property: "x")]),
            Index(name: "partial", elements: [Element(property: "y")], isPartial: true),
            Index(name: "unknown", elements: [Element(property: "z")]),
            Index(name: "odd", elements: [Element(property: "y", type: 7)]),
            Index(name: "empty", elements: []),
        ]
        let a = try #require(try model.schema().entity(named: "A")?.definition)
        #expect(a.attributes.map(\.isIndexed) == [true, false])
        #expect(a.fetchIndexes == [FetchIndex(name: "byY", elements: [FetchIndex.Element(property: "y", isAscending: false)])])
        #expect(a.allFetchIndexes.map(\.name) == ["x", "byY"])
    }
}
