import Foundation
import Testing
@testable import StoreAPI

/// Every real model in the corpus loads, and what it holds matches the independent summary in FEATURES.json.
@Suite(.enabled(if: SchemaCorpus.isPresent, SchemaCorpus.absentMessage))
struct SchemaXcodeCorpusTests {
    @Test("the corpus lists models and FEATURES.json describes every version")
    func corpusIsComplete() throws {
        let table = try SchemaCorpus.featureTable()
        #expect(SchemaCorpus.topLevelModels.count >= 14)
        #expect(Set(SchemaCorpus.modelVersions) == Set(table.keys))
    }

    @Test("each model version loads and matches FEATURES.json", arguments: SchemaCorpus.modelVersions)
    func versionMatchesFeatures(_ path: String) throws {
        let schema = try SchemaCorpus.load(path)
        let f = try #require(try SchemaCorpus.featureTable()[path], "FEATURES.json has no entry for \(path)")
        let defs = schema.definitions
        let attributes = defs.flatMap(\.attributes)
        let relationships = defs.flatMap { d in d.relationships.map { (d, $0) } }

        #expect(defs.count == f["entities"] as? Int)
        #expect(defs.filter(\.isAbstract).count == f["abstractEntities"] as? Int)
        #expect(defs.filter { $0.parent != nil }.count == f["subentities(parentEntity)"] as? Int)
        #expect(attributes.filter(\.isTransient).count == f["transientAttrs"] as? Int)
        #expect(attributes.filter { $0.valueTransformerName != nil }.count == f["valueTransformerNames"] as? Int)
        #expect(defs.flatMap(\.uniquenessConstraints).count == f["uniquenessConstraints"] as? Int)
        #expect(schema.configurations.keys.sorted() == (f["configurations"] as? [String])?.sorted())

        // Attribute types. Derived attributes are not stored, so the loader keeps them apart (derivedAttributes): they
        // are the difference.
        var typeCounts: [String: Int] = [:]
        for a in attributes { typeCounts[a.type.xcodeName, default: 0] += 1 }
        let expectedTypes = try #require(f["attributeTypes"] as? [String: Int])
        let derived = try #require(f["derivedAttrs"] as? Int)
        let expectedDefaults = try #require(f["defaultValues"] as? Int)
        if derived == 0 {
            #expect(typeCounts == expectedTypes)
            #expect(attributes.filter { $0.defaultValue != nil }.count == expectedDefaults)
        } else {
            #expect(attributes.count == expectedTypes.values.reduce(0, +) - derived)
            for (type, n) in typeCounts { #expect(n <= expectedTypes[type] ?? 0, "\(type)") }
            #expect(attributes.filter { $0.defaultValue != nil }.count <= expectedDefaults)
        }

        // User info blocks on entities, attributes and relationships.
        let userInfoBlocks = defs.filter { !$0.userInfo.isEmpty }.count
            + attributes.filter { !$0.userInfo.isEmpty }.count
            + relationships.filter { !$0.1.userInfo.isEmpty }.count
        #expect(userInfoBlocks == f["userInfoBlocks"] as? Int)

        // Relationships.
        let r = try #require(f["relationships"] as? [String: Any])
        #expect(relationships.count == r["total"] as? Int)
        #expect(relationships.filter { $0.1.isToMany }.count == r["toMany"] as? Int)
        #expect(relationships.filter { !$0.1.isToMany }.count == r["toOne"] as? Int)
        #expect(relationships.filter { $0.1.isOrdered }.count == r["ordered"] as? Int)
        #expect(relationships.filter { $0.1.inverse == nil }.count == r["withoutInverse"] as? Int)
        let manyToMany = relationships.filter { $0.1.isManyToMany(inverse: schema.inverse(of: $0.1)) }.count
        #expect(manyToMany == r["manyToManySides"] as? Int)
        var rules: [String: Int] = [:]
        for (_, rel) in relationships { rules[rel.deleteRule.xcodeName, default: 0] += 1 }
        #expect(rules == r["deletionRules"] as? [String: Int])

        // Every declared inverse resolves and points back (the corpus has no one-sided inverses).
        for (d, rel) in relationships {
            guard let inverseName = rel.inverse else { continue }
            let inv = try #require(schema.inverse(of: rel), "\(d.name).\(rel.name) → \(rel.destination).\(inverseName)")
            #expect(inv.inverse == rel.name)
        }
    }

    @Test("loading twice gives equal schemas and equal version hashes", arguments: SchemaCorpus.modelVersions)
    func stableAcrossLoads(_ path: String) throws {
        let a = try SchemaCorpus.load(path)
        let b = try SchemaCorpus.load(path)
        #expect(a == b)
        #expect(a.versionHashes == b.versionHashes)
        #expect(a.versionHashes.count == a.entities.count)
    }

    @Test("a bundle loads the version .xccurrentversion names", arguments: SchemaCorpus.topLevelModels.filter { $0.hasSuffix(".xcdatamodeld") })
    func bundleLoadsCurrentVersion(_ bundle: String) throws {
        let plistURL = SchemaCorpus.url(bundle).appendingPathComponent(".xccurrentversion")
        let plist = try PropertyListSerialization.propertyList(from: Data(contentsOf: plistURL), format: nil)
        let declared = try #require((plist as? [String: Any])?["_XCCurrentVersionName"] as? String)

        let versions = try XcodeModelVersions(bundleAt: SchemaCorpus.url(bundle))
        #expect(versions.currentIsDeclared)
        #expect(versions.current.lastPathComponent == declared)
        let onDisk = SchemaCorpus.modelVersions.filter { $0.hasPrefix(bundle + "/") }.map { String($0.dropFirst(bundle.count + 1)) }
        #expect(Set(versions.versions.map(\.lastPathComponent)) == Set(onDisk))

        let viaBundle = try SchemaCorpus.load(bundle)
        let direct = try SchemaCorpus.load(bundle + "/" + declared)
        let viaContents = try SchemaCorpus.load(bundle + "/" + declared + "/contents")
        #expect(viaBundle == direct)
        #expect(viaContents == direct)
    }

    @Test("the pre-Xcode 4 binary model is refused with a clear error naming it")
    func legacyBinaryModelRefused() throws {
        let dir = SchemaCorpus.url("legacy-xcode3-binary/RestKit__RestKit__RKTwitterCoreData.xcdatamodel")
        for target in [dir, dir.appendingPathComponent("elements")] {
            let error = try #require(throws: SchemaError.self) { try Schema(xcodeModelAt: target) }
            guard case .unreadableModel(let file, let reason) = error else {
                Issue.record("expected unreadableModel, got \(error)")
                continue
            }
            #expect(file == target.path)
            #expect(reason.contains("pre-Xcode 4 binary"))
            #expect(reason.contains("save it again"))
            #expect(error.description.hasPrefix(target.path))
        }
    }
}

/// Hand-checked facts about particular corpus models, read off their XML.
@Suite(.enabled(if: SchemaCorpus.isPresent, SchemaCorpus.absentMessage))
struct SchemaXcodeCorpusDetailTests {
    @Test func coreStoreConfigurationsAndOrderedSelfRelationships() throws {
        let s = try SchemaCorpus.load("JohnEstropia__CoreStore__Model.xcdatamodel")
        #expect(s.configurations == ["Config1": ["TestEntity1AAA"], "Config2": ["TestEntity2"]])
        #expect(try s.entities(inConfiguration: "Config2").map(\.name) == ["TestEntity2"])
        let e1 = try #require(s.entity(named: "TestEntity1AAA"))
        #expect(e1.definition.representedClassName == ".TestEntity1")
        let unordered = try #require(e1.relationship("testToManyUnordered"))
        #expect(unordered.isToMany && !unordered.isOrdered && unordered.maxCount == 0)
        #expect(unordered.destination == "TestEntity1AAA" && unordered.inverse == "testToOne")
        let ordered = try #require(s.entity(named: "TestEntity2")?.relationship("testToManyOrdered"))
        #expect(ordered.isToMany && ordered.isOrdered)
        let toOne = try #require(e1.relationship("testToOne"))
        #expect(!toOne.isToMany && toOne.maxCount == 1 && toOne.minCount == 0 && toOne.isOptional)
        #expect(e1.attribute("testDecimal")?.type == .decimal)
        #expect(e1.attribute("testData")?.type == .binary)
    }

    @Test func magicalRecordInheritanceDefaultsAndUserInfo() throws {
        let s = try SchemaCorpus.load("magicalpanda__MagicalRecord__TestModel.xcdatamodel")
        let abstract = try #require(s.entity(named: "AbstractRelatedEntity"))
        #expect(abstract.isAbstract)
        #expect(abstract.hierarchyNames == ["AbstractRelatedEntity", "ConcreteRelatedEntity"])
        let concrete = try #require(s.entity(named: "ConcreteRelatedEntity"))
        #expect(concrete.rootName == "AbstractRelatedEntity")
        #expect(concrete.attributes.map(\.name) == ["sampleBaseAttribute", "sampleConcreteAttribute"])
        #expect(s.entity(named: "EntityWithDifferentClassName")?.attributes.isEmpty == true)
        #expect(s.entity(named: "EntityWithDifferentClassName")?.definition.representedClassName == "DifferentClassNameMapping")

        let plain = try #require(s.entity(named: "SingleEntityWithNoRelationships"))
        #expect(plain.attribute("notInJsonAttribute")?.defaultValue == .string("Set From Core Data Model Editor"))
        #expect(plain.attribute("nullTestAttribute")?.defaultValue == .integer64(100))
        #expect(plain.attribute("int16TestAttribute")?.defaultValue == .integer16(0))
        #expect(plain.attribute("int32TestAttribute")?.defaultValue == .integer32(0))
        #expect(plain.attribute("floatTestAttribute")?.defaultValue == .float(0))
        #expect(plain.attribute("doubleTestAttribute")?.defaultValue == .double(0))
        #expect(plain.attribute("decimalTestAttribute")?.defaultValue == .decimal(0))
        #expect(plain.attribute("colorTestAttribute")?.type == .transformable)
        #expect(plain.attribute("dateWithCustomFormat")?.userInfo == ["dateFormat": "M/d/yyyy H-mm-ss"])
        let secondary = try #require(s.entity(named: "SingleEntityRelatedToMappedEntityWithSecondaryMappings"))
        let flag = try #require(secondary.attribute("notImportedAttribute"))
        #expect(flag.defaultValue == .boolean(true) && !flag.isOptional && flag.type == .boolean)
        #expect(secondary.attribute("secondaryMappedAttribute")?.userInfo["mappedKeyName.2"] == "actualMappedKey")
        let rel = try #require(secondary.relationship("mappedRelationship"))
        #expect(rel.inverse == nil && rel.deleteRule == .cascade && !rel.isToMany)
        #expect(s.entity(named: "MappedEntity")?.definition.userInfo == ["relatedByAttribute": "mapped"])
        // A new record starts from the defaults.
        let record = plain.newRecord(primaryKey: 1)
        #expect(record.attributes[try #require(plain.attributeIndex("nullTestAttribute"))] == .integer64(100))
        #expect(record.attributes[try #require(plain.attributeIndex("stringTestAttribute"))] == .null)
    }

    @Test func mogeneratorTransientsInheritanceAndOddUserInfo() throws {
        let s = try SchemaCorpus.load("rentzsch__mogenerator__test.xcdatamodel")
        let parent = try #require(s.entity(named: "Parent"))
        #expect(parent.definition.attributes.contains { $0.name == "myInt16Transient" && $0.isTransient })
        #expect(parent.attribute("myInt16Transient") == nil)
        #expect(parent.ancestorNames == ["Human"])
        #expect(parent.attributes.prefix(3).map(\.name) == ["age", "gender", "humanName"])
        #expect(parent.relationships.first?.name == "meaninglessRelationship")
        #expect(s.entity(named: "Human")?.hierarchyNames == ["Child", "Human", "Parent", "Uncle"])
        #expect(s.entity(named: "Human")?.definition.userInfo["key with.dots..."] == "value with \"quotes\"")
        let orderedChildren = try #require(parent.relationship("orderedChildren"))
        #expect(orderedChildren.isOrdered && orderedChildren.inverse == "parent" && orderedChildren.deleteRule == .cascade)
        #expect(parent.relationship("children")?.inverse == nil)
        let age = try #require(s.entity(named: "Human")?.attribute("age"))
        #expect(!age.isOptional && age.defaultValue == .integer16(0))
        #expect(s.rootEntities.map(\.name) == ["EntitySansCustomClass", "EntitySansCustomClass2", "EntityWithBaseClass", "Human"])
    }

    @Test func ensemblesCountsAndManyToMany() throws {
        let s = try SchemaCorpus.load("drewmccormack__ensembles__CDEStoreModificationEventTestsModel.xcdatamodel")
        let parent = try #require(s.entity(named: "Parent"))
        let maxed = try #require(parent.relationship("maxedChildren"))
        #expect(maxed.isToMany && maxed.maxCount == 2 && maxed.minCount == 0)
        let friends = try #require(parent.relationship("friends"))
        #expect(friends.isManyToMany(inverse: s.inverse(of: friends)))
        #expect(parent.relationship("orderedChildren")?.isOrdered == true)
        #expect(parent.attribute("invalidatingAttribute")?.isOptional == false)
        let related = try #require(parent.relationship("relatedParent"))
        #expect(related.destination == "Parent" && s.inverse(of: related)?.name == "inverseRelatedParent")
    }

    @Test func coreDataBooksEmptyStringAndDateDefaults() throws {
        let s = try SchemaCorpus.load("malhal__CoreDataBooks-SwiftUI__CoreDataBooks.xcdatamodel")
        let book = try #require(s.entity(named: "Book"))
        #expect(book.attribute("author")?.defaultValue == .string(""))
        #expect(book.attribute("author")?.isOptional == false)
        #expect(book.attribute("title")?.defaultValue == .string(""))
        #expect(book.attribute("copyright")?.defaultValue == .date(Date(timeIntervalSinceReferenceDate: 697_386_720)))
    }

    @Test func cloudKitShareDropsDerivedAttributeKeepsUUID() throws {
        let s = try SchemaCorpus.load("delawaremathguy__CoreDataCloudKitShare__CoreDataCloudKitShare.xcdatamodel")
        let tag = try #require(s.entity(named: "Tag"))
        #expect(tag.definition.attributes.map(\.name) == ["name", "uuid"])
        #expect(tag.attribute("uuid")?.type == .uuid)
        #expect(s.entity(named: "Rating")?.attribute("value")?.defaultValue == .integer16(0))
        #expect(s.entity(named: "Photo")?.relationship("photoData")?.deleteRule == .cascade)
    }

    @Test func coreDataPlusConstraintsTransformerAndThreeLevels() throws {
        let s = try SchemaCorpus.load("alemar11__CoreDataPlus__SampleModel.xcdatamodeld/SampleModel.xcdatamodel")
        let car = try #require(s.entity(named: "Car"))
        #expect(car.uniquenessConstraints == [["numberPlate"]])
        #expect(car.attribute("color")?.valueTransformerName == "ColorTransformer")
        #expect(car.attribute("color")?.type == .transformable)
        #expect(car.attribute("currentDrivingSpeed") == nil)  // transient
        let expensive = try #require(s.entity(named: "ExpensiveSportCar"))
        #expect(expensive.ancestorNames == ["SportCar", "Car"])
        #expect(expensive.rootName == "Car")
        #expect(expensive.uniquenessConstraints == [["numberPlate"]])
        #expect(expensive.attribute("isLimitedEdition")?.defaultValue == .boolean(false))
        let person = try #require(s.entity(named: "Person"))
        #expect(person.uniquenessConstraints == [["firstName", "lastName"]])
        #expect(person.attribute("id")?.type == .uuid)
        #expect(person.definition.attributes.first { $0.name == "isDriving" }?.defaultValue == .boolean(false))
        let v3 = try SchemaCorpus.load("alemar11__CoreDataPlus__SampleModel.xcdatamodeld/SampleModel3.xcdatamodel")
        #expect(v3.entity(named: "LuxuryCar")?.ancestorNames == ["SportCar", "Car"])
        let previous = try #require(v3.entity(named: "Car")?.relationship("previousOwners"))
        #expect(previous.isManyToMany(inverse: v3.inverse(of: previous)))
    }

    @Test func bookmarksOrderedManyToManyAndVersionChoice() throws {
        let bundle = "duckduckgo__BrowserServicesKit__BookmarksModel.xcdatamodeld"
        let versions = try XcodeModelVersions(bundleAt: SchemaCorpus.url(bundle))
        #expect(versions.versions.map(\.lastPathComponent) == [
            "BookmarksModel.xcdatamodel", "BookmarksModel 2.xcdatamodel", "BookmarksModel 3.xcdatamodel",
            "BookmarksModel 4.xcdatamodel", "BookmarksModel 5.xcdatamodel", "BookmarksModel 6.xcdatamodel",
        ])
        let s = try SchemaCorpus.load(bundle + "/BookmarksModel 6.xcdatamodel")
        let e = try #require(s.entity(named: "BookmarkEntity"))
        let favorites = try #require(e.relationship("favorites"))
        #expect(favorites.isOrdered && favorites.isManyToMany(inverse: s.inverse(of: favorites)))
        #expect(e.relationship("children")?.isOrdered == true)
        #expect(e.attribute("uuid")?.isOptional == false)
    }

    @Test func restKitCurrentVersionIsFour() throws {
        let versions = try XcodeModelVersions(bundleAt: SchemaCorpus.url("RestKit__RestKit__VersionedModel.xcdatamodeld"))
        #expect(versions.current.lastPathComponent == "VersionedModel 4.xcdatamodel")
    }
}
