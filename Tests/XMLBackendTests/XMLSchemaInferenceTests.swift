import Foundation
import StoreAPI
import StoreTestSupport
import Testing
import XMLBackend

/// Schema inference for files Core Data wrote: inheritance, inverses, identities and conflicts.
@Suite struct XMLSchemaInferenceTests {
    private func load(_ text: String, _ dir: TemporaryDirectory, name: String = "cd.xml") throws -> (StoreMetadata, [Record]) {
        let url = try dir.write(text, to: name)
        return try XMLCoreDataCorpusTests.load(url)
    }

    @Test func subEntitiesAndAbstractParentsAreInferred() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let (metadata, records) = try load(coreDataDocument("""
            <object type="PERSON" id="z1">
                <attribute name="name" type="string">Ann</attribute>
                <relationship name="pets" type="0/0" destination="ANIMAL" idrefs="z2 z3"></relationship>
            </object>
            <object type="DOG" id="z2">
                <attribute name="name" type="string">Rex</attribute>
                <attribute name="barks" type="bool">1</attribute>
                <relationship name="owner" type="0/1" destination="PERSON" idrefs="z1"></relationship>
            </object>
            <object type="CAT" id="z3">
                <attribute name="name" type="string">Tom</attribute>
                <attribute name="lives" type="int16">9</attribute>
                <relationship name="owner" type="0/1" destination="PERSON" idrefs="z1"></relationship>
            </object>
            """), dir)
        let schema = metadata.schema
        let animal = try schema.requireEntity("ANIMAL")
        #expect(try schema.requireEntity("DOG").definition.parent == "ANIMAL")
        #expect(try schema.requireEntity("CAT").definition.parent == "ANIMAL")
        // What both sub-entities have alike belongs to the parent; the rest stays.
        #expect(animal.attributes.map(\.name) == ["name"])
        #expect(try schema.requireEntity("DOG").definition.attributes.map(\.name) == ["barks"])
        #expect(animal.relationship("owner")?.inverse == "pets")
        #expect(try schema.requireEntity("PERSON").relationship("pets")?.inverse == "owner")
        #expect(records.count == 3)
        let cat = records.first { $0.entity == "CAT" }
        let catEntity = try schema.requireEntity("CAT")
        if let cat, let i = catEntity.attributeIndex("lives"), let o = catEntity.relationshipIndex("owner") {
            #expect(cat.attributes[i] == .integer16(9))
            #expect(cat.relationships[o] == .toOne(1))
        } else {
            Issue.record("CAT not loaded as expected")
        }
    }

    @Test func inversesArePairedOnlyWhenTheDataAgrees() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        // parent/children on one entity: structurally ambiguous, the data decides.
        let (m1, _) = try load(coreDataDocument("""
            <object type="NODE" id="z1">
                <relationship name="children" type="0/0" destination="NODE" idrefs="z2 z3"></relationship>
            </object>
            <object type="NODE" id="z2">
                <relationship name="parent" type="0/1" destination="NODE" idrefs="z1"></relationship>
            </object>
            <object type="NODE" id="z3">
                <relationship name="parent" type="0/1" destination="NODE" idrefs="z1"></relationship>
            </object>
            """), dir, name: "tree.xml")
        let node = try m1.schema.requireEntity("NODE")
        #expect(node.relationship("children")?.inverse == "parent")
        #expect(node.relationship("parent")?.inverse == "children")

        // Links one way without the other: no inverse is claimed.
        let (m2, _) = try load(coreDataDocument("""
            <object type="A" id="z1">
                <relationship name="b" type="0/1" destination="B" idrefs="z2"></relationship>
            </object>
            <object type="B" id="z2">
                <relationship name="a" type="0/1" destination="A" idrefs=""></relationship>
            </object>
            """), dir, name: "oneway.xml")
        #expect(try m2.schema.requireEntity("A").relationship("b")?.inverse == nil)
        #expect(try m2.schema.requireEntity("B").relationship("a")?.inverse == nil)
    }

    @Test func cardinalityComesFromMinMax() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let (metadata, _) = try load(coreDataDocument("""
            <object type="A" id="z1">
                <relationship name="required" type="1/1" destination="B" idrefs="z2"></relationship>
                <relationship name="some" type="1/5" destination="B" idrefs="z2"></relationship>
                <relationship name="many" type="0/0" destination="B" idrefs="z2"></relationship>
            </object>
            <object type="B" id="z2"></object>
            """), dir)
        let a = try metadata.schema.requireEntity("A")
        #expect(a.relationship("required")?.isToMany == false)
        #expect(a.relationship("required")?.isOptional == false)
        #expect(a.relationship("some")?.isToMany == true)
        #expect(a.relationship("some")?.minCount == 1)
        #expect(a.relationship("some")?.maxCount == 5)
        #expect(a.relationship("many")?.maxCount == 0)
    }

    @Test func identitiesAreStableWithoutAStoreUUID() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let text = coreDataDocument("""
            <object type="A" id="custom"><attribute name="x" type="int64">1</attribute></object>
            <object type="A" id="z7"></object>
            """).replacingOccurrences(of: "<UUID>D1E2667A-3268-45DB-8AA0-DF69A046A0F1</UUID>", with: "")
        let (m1, r1) = try load(text, dir, name: "a.xml")
        let (m2, r2) = try load(text, dir, name: "b.xml")
        #expect(m1.storeUUID == m2.storeUUID)
        #expect(r1.map(\.globalID) == r2.map(\.globalID))
        // `custom` gets a fresh key above z7 and nextObjectID (10).
        #expect(r1.map(\.primaryKey) == [10, 7])
    }

    @Test func anEmptyCoreDataStoreLoads() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let (metadata, records) = try load(coreDataDocument(""), dir)
        #expect(metadata.schema.entities.isEmpty)
        #expect(records.isEmpty)
        #expect(metadata.storeUUID == UUID(uuidString: "D1E2667A-3268-45DB-8AA0-DF69A046A0F1"))
    }

    @Test func contradictionsAreReported() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let conflictingTypes = try dir.write(coreDataDocument("""
            <object type="A" id="z1"><attribute name="x" type="int16">1</attribute></object>
            <object type="A" id="z2"><attribute name="x" type="string">1</attribute></object>
            """), to: "types.xml")
        expectCorrupt(conflictingTypes, ["attribute 'x' of A", "line 11"])
        let duplicateIDs = try dir.write(coreDataDocument("""
            <object type="A" id="z1"></object>
            <object type="B" id="z1"></object>
            """), to: "ids.xml")
        expectCorrupt(duplicateIDs, ["'z1' is also used at line 10"])
        let kinds = try dir.write(coreDataDocument("""
            <object type="A" id="z1"><attribute name="x" type="int16">1</attribute></object>
            <object type="A" id="z2"><relationship name="x" type="0/1" destination="A" idrefs="z1"></relationship></object>
            """), to: "kinds.xml")
        expectCorrupt(kinds, ["'x' of A"])
        let badSpec = try dir.write(coreDataDocument("""
            <object type="A" id="z1"><relationship name="r" type="many" destination="A"></relationship></object>
            """), to: "spec.xml")
        expectCorrupt(badSpec, ["'min/max'"])
        let cycle = try dir.write(coreDataDocument("""
            <object type="A" id="z1"></object>
            <object type="B" id="z2"></object>
            <object type="C" id="z3">
                <relationship name="toB" type="0/1" destination="B" idrefs="z1"></relationship>
                <relationship name="toA" type="0/1" destination="A" idrefs="z2"></relationship>
            </object>
            """), to: "cycle.xml")
        // An A reached through a relationship to B makes A a kind of B, and a B reached through one to A the reverse.
        expectCorrupt(cycle, ["a kind of the other"])
    }
}
