import Foundation
import StoreTestSupport
import Testing
@testable import StoreAPI

/// The Xcode loader on hand-written models: every mapping rule and every way a model can be wrong.
struct SchemaXcodeLoaderTests {
    /// Loads `body` as a model and returns the error it must throw.
    private func loadError(_ body: String) throws -> (SchemaError, URL) {
        let tmp = try TemporaryDirectory("schema-tests")
        let dir = try tmp.model("Bad.xcdatamodel", body: body)
        let error = try #require(throws: SchemaError.self) { try Schema(xcodeModelAt: dir) }
        return (error, dir.appendingPathComponent("contents"))
    }

    private func load(_ body: String) throws -> Schema {
        let tmp = try TemporaryDirectory("schema-tests")
        return try Schema(xcodeModelAt: try tmp.model("M.xcdatamodel", body: body))
    }

    @Test func everyAttributeTypeAndItsDefault() throws {
        let uuid = "6F9619FF-8B86-D011-B42D-00C04FC964FF"
        let s = try load("""
            <entity name="All">
              <attribute name="i16" attributeType="Integer 16" defaultValueString="-32768"/>
              <attribute name="i32" optional="YES" attributeType="Integer 32" defaultValueString="2147483647"/>
              <attribute name="i64" attributeType="Integer 64" defaultValueString="-9223372036854775808"/>
              <attribute name="dec" attributeType="Decimal" defaultValueString="12.50"/>
              <attribute name="dbl" attributeType="Double" defaultValueString="2.5"/>
              <attribute name="flt" attributeType="Float" defaultValueString="0.1"/>
              <attribute name="str" attributeType="String" defaultValueString=" spaced "/>
              <attribute name="yes" attributeType="Boolean" defaultValueString="YES"/>
              <attribute name="no" attributeType="Boolean" defaultValueString="NO"/>
              <attribute name="date" attributeType="Date" defaultDateTimeInterval="-0.5"/>
              <attribute name="bin" attributeType="Binary"/>
              <attribute name="tr" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromData"/>
              <attribute name="id" attributeType="UUID" defaultValueString="\(uuid)"/>
              <attribute name="link" attributeType="URI" defaultValueString="https://example.com/a?b=c"/>
              <attribute name="scratch" optional="YES" transient="YES" attributeType="Undefined"/>
              <attribute name="cleared" attributeType="Integer 32" defaultValueString=""/>
            </entity>
            """)
        let e = try #require(s.entity(named: "All"))
        let byName = Dictionary(uniqueKeysWithValues: e.definition.attributes.map { ($0.name, $0) })
        let expected: [(String, AttributeType, StoreValue?)] = [
            ("i16", .integer16, .integer16(.min)), ("i32", .integer32, .integer32(.max)),
            ("i64", .integer64, .integer64(.min)), ("dec", .decimal, .decimal(Decimal(string: "12.5")!)),
            ("dbl", .double, .double(2.5)), ("flt", .float, .float(0.1)), ("str", .string, .string(" spaced ")),
            ("yes", .boolean, .boolean(true)), ("no", .boolean, .boolean(false)),
            ("date", .date, .date(Date(timeIntervalSinceReferenceDate: -0.5))), ("bin", .binary, nil),
            ("tr", .transformable, nil), ("id", .uuid, .uuid(UUID(uuidString: uuid)!)),
            ("link", .uri, .uri(URL(string: "https://example.com/a?b=c")!)), ("cleared", .integer32, nil),
        ]
        for (name, type, value) in expected {
            let a = try #require(byName[name], "\(name)")
            #expect(a.type == type, "\(name)")
            #expect(a.defaultValue == value, "\(name)")
        }
        #expect(byName["i16"]?.isOptional == false)
        #expect(byName["i32"]?.isOptional == true)
        #expect(byName["tr"]?.valueTransformerName == "NSSecureUnarchiveFromData")
        let scratch = try #require(byName["scratch"])
        #expect(scratch.isTransient && scratch.type == .transformable)
        #expect(e.attribute("scratch") == nil)
        #expect(e.attributes.count == 15)
    }

    @Test func relationshipsCountsRulesAndLegacyToMany() throws {
        let s = try load("""
            <entity name="A">
              <relationship name="many" optional="YES" toMany="YES" minCount="1" maxCount="5" deletionRule="Deny" destinationEntity="B" inverseName="one"/>
              <relationship name="legacyMany" optional="YES" maxCount="-1" deletionRule="No Action" destinationEntity="B"/>
              <relationship name="unbounded" optional="YES" toMany="YES" maxCount="-1" ordered="YES" destinationEntity="B"/>
              <relationship name="required" minCount="1" maxCount="1" deletionRule="Cascade" destinationEntity="B"/>
            </entity>
            <entity name="B">
              <relationship name="one" optional="YES" maxCount="1" destinationEntity="A" inverseName="many">
                <userInfo><entry key="k" value="v"/></userInfo>
              </relationship>
            </entity>
            """)
        let a = try #require(s.entity(named: "A"))
        let many = try #require(a.relationship("many"))
        #expect(many.isToMany && many.minCount == 1 && many.maxCount == 5 && many.deleteRule == .deny && !many.isOrdered)
        let legacy = try #require(a.relationship("legacyMany"))
        #expect(legacy.isToMany && legacy.maxCount == 0 && legacy.deleteRule == .noAction)
        let unbounded = try #require(a.relationship("unbounded"))
        #expect(unbounded.isToMany && unbounded.isOrdered && unbounded.maxCount == 0 && unbounded.deleteRule == .nullify)
        let required = try #require(a.relationship("required"))
        #expect(!required.isToMany && !required.isOptional && required.maxCount == 1 && required.deleteRule == .cascade)
        #expect(s.entity(named: "B")?.relationship("one")?.userInfo == ["k": "v"])
    }

    @Test func entityFlagsConstraintsAndConfigurations() throws {
        let s = try load("""
            <entity name="Base" representedClassName="BaseMO" isAbstract="YES" versionHashModifier="v2">
              <attribute name="key" attributeType="String"/>
              <attribute name="scope" attributeType="String"/>
              <uniquenessConstraints>
                <uniquenessConstraint><constraint value="key"/><constraint value="scope"/></uniquenessConstraint>
              </uniquenessConstraints>
              <userInfo><entry key="a" value="1"/><entry key="b" value=""/></userInfo>
            </entity>
            <entity name="Leaf" parentEntity="Base">
              <attribute name="extra" optional="YES" attributeType="Integer 64"/>
              <uniquenessConstraints><uniquenessConstraint><constraint value="extra"/></uniquenessConstraint></uniquenessConstraints>
              <fetchIndex name="byKey"><fetchIndexElement property="key" type="Binary" order="ascending"/></fetchIndex>
              <compoundIndexes><compoundIndex><index value="key"/></compoundIndex></compoundIndexes>
              <fetchedProperty name="siblings" optional="YES"><fetchRequest name="f" entity="Leaf" predicateString="key == $FETCH_SOURCE.key"/></fetchedProperty>
            </entity>
            <fetchRequest name="all" entity="Leaf"/>
            <configuration name="Cloud" usedWithCloudKit="YES"><memberEntity name="Base"/></configuration>
            <configuration name="Empty"/>
            <elements><element name="Base" positionX="0" positionY="0" width="128" height="60"/></elements>
            """)
        let base = try #require(s.entity(named: "Base"))
        #expect(base.isAbstract)
        #expect(base.definition.representedClassName == "BaseMO")
        #expect(base.definition.versionHashModifier == "v2")
        #expect(base.definition.userInfo == ["a": "1", "b": ""])
        let leaf = try #require(s.entity(named: "Leaf"))
        #expect(leaf.uniquenessConstraints == [["key", "scope"], ["extra"]])
        #expect(leaf.definition.attributes.map(\.name) == ["extra"])
        #expect(s.configurations == ["Cloud": ["Base"], "Empty": []])
        #expect(try s.entities(inConfiguration: "Cloud").map(\.name) == ["Base", "Leaf"])
    }

    @Test func inverseThatDoesNotPointBackStillLoads() throws {
        // Core Data keeps each side's inverse as written; a one-sided declaration is accepted (with a warning in
        // Xcode), so the loader must accept it too.
        let s = try load("""
            <entity name="A"><relationship name="b" optional="YES" maxCount="1" destinationEntity="B" inverseName="a"/></entity>
            <entity name="B"><relationship name="a" optional="YES" toMany="YES" destinationEntity="A"/></entity>
            """)
        #expect(s.entity(named: "A")?.relationship("b")?.inverse == "a")
        #expect(s.entity(named: "B")?.relationship("a")?.inverse == nil)
    }

    @Test func inverseNamingAnotherRelationshipIsRefusedNamingTheFile() throws {
        let (error, file) = try loadError("""
            <entity name="A">
              <relationship name="b" optional="YES" maxCount="1" destinationEntity="B" inverseName="a"/>
              <relationship name="c" optional="YES" maxCount="1" destinationEntity="B"/>
            </entity>
            <entity name="B"><relationship name="a" optional="YES" toMany="YES" destinationEntity="A" inverseName="c"/></entity>
            """)
        guard case .invalidModel(let f, .inverseMismatch) = error else { Issue.record("\(error)"); return }
        #expect(f == file.path)
        #expect(error.description.hasPrefix(file.path + ": "))
    }

    @Test func validationErrorsNameTheFile() throws {
        let cases: [(String, (SchemaError) -> Bool)] = [
            (#"<entity name="A" parentEntity="Nope"/>"#, { if case .unknownParent(entity: "A", parent: "Nope") = $0 { true } else { false } }),
            (#"<entity name="A"/><entity name="A"/>"#, { if case .duplicateEntity("A") = $0 { true } else { false } }),
            (#"<entity name="A"><relationship name="r" optional="YES" maxCount="1" destinationEntity="Z"/></entity>"#,
             { if case .unknownDestination(entity: "A", relationship: "r", destination: "Z") = $0 { true } else { false } }),
            (#"<entity name="A"><attribute name="x" attributeType="Money"/></entity>"#,
             { if case .unknownAttributeType(entity: "A", attribute: "x", type: "Money") = $0 { true } else { false } }),
            (#"<entity name="A"><attribute name="x" attributeType="Integer 16" defaultValueString="40000"/></entity>"#,
             { if case .defaultValueMismatch(entity: "A", attribute: "x", type: .integer16) = $0 { true } else { false } }),
            (#"<entity name="A"><attribute name="x" attributeType="Boolean" defaultValueString="maybe"/></entity>"#,
             { if case .defaultValueMismatch(entity: "A", attribute: "x", type: .boolean) = $0 { true } else { false } }),
            (#"<entity name="A"><attribute name="x" attributeType="Decimal" defaultValueString="12abc"/></entity>"#,
             { if case .defaultValueMismatch(entity: "A", attribute: "x", type: .decimal) = $0 { true } else { false } }),
            (#"<entity name="A"><attribute name="x" attributeType="UUID" defaultValueString="not-a-uuid"/></entity>"#,
             { if case .defaultValueMismatch(entity: "A", attribute: "x", type: .uuid) = $0 { true } else { false } }),
            (#"<entity name="A"><attribute name="x" attributeType="String"/><uniquenessConstraints><uniquenessConstraint><constraint value="y"/></uniquenessConstraint></uniquenessConstraints></entity>"#,
             { if case .invalidUniquenessConstraint(entity: "A", attribute: "y") = $0 { true } else { false } }),
            (#"<entity name="A"/><configuration name="C"><memberEntity name="B"/></configuration>"#,
             { if case .unknownConfigurationMember(configuration: "C", entity: "B") = $0 { true } else { false } }),
            (#"<entity name="A"><attribute name="x" attributeType="String"/><relationship name="x" optional="YES" maxCount="1" destinationEntity="A"/></entity>"#,
             { if case .duplicateProperty(entity: "A", property: "x") = $0 { true } else { false } }),
        ]
        for (body, matches) in cases {
            let (error, file) = try loadError(body)
            guard case .invalidModel(let f, let inner) = error else { Issue.record("not wrapped: \(error)"); continue }
            #expect(f == file.path)
            #expect(matches(inner), "\(body) gave \(inner)")
            #expect(matches(error.rootCause))
            #expect(error.description.contains(file.path))
        }
    }

    @Test func unreadableModelsAreRefusedWithTheFileAndReason() throws {
        let cases: [(String, String)] = [
            (#"<entity name="A"><attribute name="x" attributeType="Undefined"/></entity>"#, "only on transient"),
            (#"<entity name="A"><attribute name="x" optional="YES" attributeType="Composite" composite="Point"/></entity>"#, "composite"),
            (#"<composite name="Point"><attribute name="x" attributeType="Double"/></composite>"#, "composite"),
            (#"<entity><attribute name="x" attributeType="String"/></entity>"#, "no name"),
            (#"<entity name="A"><relationship name="r" optional="YES" maxCount="1"/></entity>"#, "no destination"),
            (#"<entity name="A"><relationship name="r" maxCount="many" destinationEntity="A"/></entity>"#, "non-numeric maxCount"),
            (#"<entity name="A"><relationship name="r" deletionRule="Explode" destinationEntity="A"/></entity>"#, "deletion rule"),
            (#"<entity name="A"><attribute name="x" attributeType="String">"#, "not well-formed"),
            (#"<configuration name="C"/><configuration name="C"/>"#, "defined twice"),
        ]
        for (body, needle) in cases {
            let (error, file) = try loadError(body)
            guard case .unreadableModel(let f, let reason) = error else { Issue.record("\(body): \(error)"); continue }
            #expect(f == file.path)
            #expect(reason.localizedCaseInsensitiveContains(needle), "\(body): \(reason)")
        }
    }

    @Test func hostileAndForeignXMLIsRefused() throws {
        let tmp = try TemporaryDirectory("schema-tests")
        let secret = try tmp.file("secret.txt", "top secret")
        let documents = [
            // External entity (XXE).
            """
            <?xml version="1.0"?><!DOCTYPE model [<!ENTITY x SYSTEM "\(secret.absoluteString)">]>
            <model><entity name="&x;"/></model>
            """,
            // Entity expansion (billion laughs).
            """
            <?xml version="1.0"?><!DOCTYPE model [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
            <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]>
            <model><entity name="&d;"/></model>
            """,
            "<plist version=\"1.0\"><dict/></plist>",
            "",
            "not xml at all",
            "<?xml version=\"1.0\"?>",
        ]
        for (i, text) in documents.enumerated() {
            let file = try tmp.file("doc\(i)/contents", text)
            let error = try #require(throws: SchemaError.self) { try Schema(xcodeModelAt: file) }
            guard case .unreadableModel(let f, let reason) = error else { Issue.record("\(i): \(error)"); continue }
            #expect(f == file.path)
            #expect(!reason.contains("top secret"))
        }
    }

    @Test func pathsThatAreNotModels() throws {
        let tmp = try TemporaryDirectory("schema-tests")
        let missing = tmp.url.appendingPathComponent("Missing.xcdatamodel")
        let e1 = try #require(throws: SchemaError.self) { try Schema(xcodeModelAt: missing) }
        #expect(e1 == .unreadableModel(file: missing.path, reason: "no such file or directory"))

        let emptyDir = tmp.url.appendingPathComponent("Empty.xcdatamodel")
        try FileManager.default.createDirectory(at: emptyDir, withIntermediateDirectories: true)
        let e2 = try #require(throws: SchemaError.self) { try Schema(xcodeModelAt: emptyDir) }
        guard case .unreadableModel(emptyDir.path, let reason) = e2 else { Issue.record("\(e2)"); return }
        #expect(reason.contains("no 'contents' file"))

        let emptyBundle = tmp.url.appendingPathComponent("Empty.xcdatamodeld")
        try FileManager.default.createDirectory(at: emptyBundle, withIntermediateDirectories: true)
        let e3 = try #require(throws: SchemaError.self) { try Schema(xcodeModelAt: emptyBundle) }
        guard case .unreadableModel(emptyBundle.path, _) = e3 else { Issue.record("\(e3)"); return }
    }

    @Test func bundleWithoutCurrentVersionTakesTheLastByName() throws {
        let tmp = try TemporaryDirectory("schema-tests")
        let bundle = tmp.url.appendingPathComponent("M.xcdatamodeld")
        for (name, entity) in [("M", "One"), ("M 2", "Two"), ("M 10", "Ten"), ("M 9", "Nine")] {
            try tmp.model("\(name).xcdatamodel", in: bundle, body: "<entity name=\"\(entity)\"/>")
        }
        let versions = try XcodeModelVersions(bundleAt: bundle)
        #expect(!versions.currentIsDeclared)
        #expect(versions.versions.map(\.lastPathComponent) == ["M.xcdatamodel", "M 2.xcdatamodel", "M 9.xcdatamodel", "M 10.xcdatamodel"])
        #expect(try Schema(xcodeModelAt: bundle).entities.map(\.name) == ["Ten"])

        // A plist without the key also falls back; one that names a missing version is an error naming the plist.
        let plist = bundle.appendingPathComponent(".xccurrentversion")
        try PropertyListSerialization.data(fromPropertyList: ["other": "x"], format: .xml, options: 0).write(to: plist)
        #expect(try Schema(xcodeModelAt: bundle).entities.map(\.name) == ["Ten"])
        try PropertyListSerialization.data(fromPropertyList: ["_XCCurrentVersionName": "M 2.xcdatamodel"], format: .xml, options: 0)
            .write(to: plist)
        #expect(try Schema(xcodeModelAt: bundle).entities.map(\.name) == ["Two"])
        #expect(try XcodeModelVersions(bundleAt: bundle).currentIsDeclared)
        try PropertyListSerialization.data(fromPropertyList: ["_XCCurrentVersionName": "M 3.xcdatamodel"], format: .xml, options: 0)
            .write(to: plist)
        let e = try #require(throws: SchemaError.self) { try Schema(xcodeModelAt: bundle) }
        guard case .unreadableModel(plist.path, let reason) = e else { Issue.record("\(e)"); return }
        #expect(reason.contains("M 3.xcdatamodel"))
        try Data("garbage".utf8).write(to: plist)
        let e2 = try #require(throws: SchemaError.self) { try Schema(xcodeModelAt: bundle) }
        guard case .unreadableModel(plist.path, _) = e2 else { Issue.record("\(e2)"); return }
    }

    @Test func legacyBinaryVersionInsideABundleIsRefused() throws {
        let tmp = try TemporaryDirectory("schema-tests")
        let version = tmp.url.appendingPathComponent("Old.xcdatamodeld/Old.xcdatamodel")
        try FileManager.default.createDirectory(at: version, withIntermediateDirectories: true)
        try Data("bplist00\u{0}\u{1}".utf8).write(to: version.appendingPathComponent("elements"))
        let e = try #require(throws: SchemaError.self) { try Schema(xcodeModelAt: version.deletingLastPathComponent()) }
        guard case .unreadableModel(version.path, let reason) = e else { Issue.record("\(e)"); return }
        #expect(reason.contains("pre-Xcode 4 binary"))
    }
}
