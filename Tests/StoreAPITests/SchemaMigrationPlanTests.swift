import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// The planner: each inference rule, each refusal, and the plan's printed and JSON forms.
@Suite struct SchemaMigrationPlanTests {
    private func entity(_ plan: SchemaMigrationPlan, _ name: String) throws -> EntityMigration {
        try #require(plan.entities.first { $0.name == name })
    }

    private func attribute(_ e: EntityMigration, _ name: String) throws -> PropertyMigration {
        try #require(e.attributes.first { $0.name == name })
    }

    /// The problems a refused plan lists.
    private func problems(_ from: Schema, _ to: Schema) -> [SchemaMigrationProblem] {
        do {
            _ = try SchemaMigrationPlan(from: from, to: to)
            Issue.record("expected the plan to be refused")
            return []
        } catch {
            guard case .migrationRefused(let url, let problems) = error else {
                Issue.record("expected migrationRefused, got \(error)")
                return []
            }
            #expect(url == nil)
            return problems
        }
    }

    @Test func sameSchemaIsEmpty() throws {
        let plan = try SchemaMigrationPlan(from: EvolutionSchemas.v1(), to: EvolutionSchemas.v1())
        #expect(plan.isEmpty)
        #expect(plan.changedEntities.isEmpty)
        #expect(plan.entities.allSatisfy { $0.change == .unchanged })
        #expect(plan.description.hasPrefix("no changes"))
    }

    @Test func everyInferredChangeOfV2() throws {
        let plan = try SchemaMigrationPlan(from: EvolutionSchemas.v1(), to: EvolutionSchemas.v2())
        #expect(!plan.isEmpty)
        let author = try entity(plan, "Author")
        #expect(author.change == .modified)
        let fullName = try attribute(author, "fullName")
        #expect(fullName.source == "name")
        #expect(fullName.change == .renamed)
        #expect(try attribute(author, "age").change == .widened)
        #expect(try attribute(author, "rating").change == .widened)
        #expect(try attribute(author, "code").change == .convertedToString)
        let country = try attribute(author, "country")
        #expect(country.change == .added && country.source == nil && !country.requiresValue)

        let title = try entity(plan, "Title")
        #expect(title.change == .renamed)
        #expect(title.source == "Book")
        #expect(try attribute(title, "pages").change == .widened)
        let required = try attribute(title, "title")
        #expect(required.change == .madeRequired)
        #expect(!required.requiresValue, "a default fills the records without a title")
        let authors = try #require(title.relationships.first { $0.name == "authors" })
        #expect(authors.source == "author")
        #expect(authors.change == .madeToMany)

        #expect(try entity(plan, "Publisher").change == .added)
        #expect(plan.removedEntities == ["Note"])
        #expect(Set(plan.changedEntities) == ["Author", "Title", "Publisher", "Note"])
    }

    @Test func removedPropertiesAreListed() throws {
        let to = try EvolutionSchemas.v1(changing: "Book") { b in
            b.attributes.removeAll { $0.name == "isbn" }
        }
        let plan = try SchemaMigrationPlan(from: EvolutionSchemas.v1(), to: to)
        let book = try entity(plan, "Book")
        #expect(book.removedAttributes == ["isbn"])
        #expect(book.change == .modified)
        #expect(plan.description.contains("isbn: removed"))
    }

    @Test func removedRelationshipOnBothSides() throws {
        let base = try EvolutionSchemas.v1()
        let to = try Schema(entities: base.definitions.map { d in
            var d = d
            d.relationships = []
            return d
        })
        let plan = try SchemaMigrationPlan(from: base, to: to)
        #expect(try entity(plan, "Author").removedRelationships == ["books"])
        #expect(try entity(plan, "Book").removedRelationships == ["author"])
    }

    @Test func renameBySharedIdentifier() throws {
        // Both versions carry the same element ID (Xcode keeps it): the match is by identifier, not by name.
        let from = try EvolutionSchemas.v1(changing: "Note") { n in n.attributes[0].renamingIdentifier = "E1" }
        let to = try EvolutionSchemas.v1(changing: "Note") { n in
            n.attributes[0].name = "body"
            n.attributes[0].renamingIdentifier = "E1"
        }
        let note = try entity(try SchemaMigrationPlan(from: from, to: to), "Note")
        #expect(try attribute(note, "body").source == "text")
    }

    @Test func optionalToRequiredWithoutDefaultNeedsValues() throws {
        let to = try EvolutionSchemas.v1(changing: "Book") { b in b.attributes[2].isOptional = false }
        let isbn = try attribute(try entity(try SchemaMigrationPlan(from: EvolutionSchemas.v1(), to: to), "Book"), "isbn")
        #expect(isbn.change == .madeRequired)
        #expect(isbn.requiresValue)
    }

    @Test func requiredToOptional() throws {
        let to = try EvolutionSchemas.v1(changing: "Author") { a in a.attributes[0].isOptional = true }
        let name = try attribute(try entity(try SchemaMigrationPlan(from: EvolutionSchemas.v1(), to: to), "Author"), "name")
        #expect(name.change == .madeOptional)
    }

    @Test func addedRequiredAttributeWithoutDefaultNeedsAnEmptyEntity() throws {
        let to = try EvolutionSchemas.v1(changing: "Note") { n in
            n.attributes.append(AttributeDescription(name: "priority", type: .integer16, isOptional: false))
        }
        let priority = try attribute(try entity(try SchemaMigrationPlan(from: EvolutionSchemas.v1(), to: to), "Note"), "priority")
        #expect(priority.change == .added && priority.requiresValue)
    }

    @Test func orderingChange() throws {
        let to = try EvolutionSchemas.v1(changing: "Author") { a in a.relationships[0].isOrdered = true }
        let books = try #require(try entity(try SchemaMigrationPlan(from: EvolutionSchemas.v1(), to: to), "Author")
            .relationships.first)
        #expect(books.change == .orderingChanged)
    }

    @Test func addedUniquenessConstraint() throws {
        let to = try EvolutionSchemas.v1(changing: "Author") { a in a.uniquenessConstraints = [["name"]] }
        let author = try entity(try SchemaMigrationPlan(from: EvolutionSchemas.v1(), to: to), "Author")
        #expect(author.addedUniquenessConstraints == [["name"]])
    }

    @Test func everyWideningAndStringConversion() throws {
        let types: [(AttributeType, AttributeType, PropertyMigration.Change)] = [
            (.integer16, .integer32, .widened), (.integer16, .integer64, .widened), (.integer32, .integer64, .widened),
            (.float, .double, .widened), (.integer64, .string, .convertedToString), (.decimal, .string, .convertedToString),
            (.double, .string, .convertedToString), (.uuid, .string, .convertedToString), (.uri, .string, .convertedToString),
            (.binary, .transformable, .modified),
        ]
        for (from, to, change) in types {
            let a = try Schema(entities: [EntityDescription(name: "E", attributes: [AttributeDescription(name: "v", type: from)])])
            let b = try Schema(entities: [EntityDescription(name: "E", attributes: [AttributeDescription(name: "v", type: to)])])
            let v = try attribute(try entity(try SchemaMigrationPlan(from: a, to: b), "E"), "v")
            #expect(v.change == change, "\(from) → \(to)")
        }
    }

    @Test func everyChangeThatCannotBeInferredIsListedAtOnce() throws {
        let base = try EvolutionSchemas.v1()
        let to = try Schema(entities: base.definitions.map { d in
            var d = d
            switch d.name {
            case "Author":
                d.attributes[1].type = .integer16
                d.attributes[0].type = .integer64          // string → integer: lossy
                d.relationships[0].isToMany = false         // to-many → to-one
            case "Book":
                d.attributes[1].type = .date                // integer16 → date
            case "Note":
                d.isAbstract = true                         // its records would belong to no entity
            default: break
            }
            return d
        })
        let found = problems(base, to)
        let text = found.map(\.description)
        #expect(found.count >= 4, "\(text)")
        #expect(text.contains { $0.hasPrefix("Author.name:") && $0.contains("string to integer64") })
        #expect(text.contains { $0.hasPrefix("Author.books:") && $0.contains("to-many becomes to-one") })
        #expect(text.contains { $0.hasPrefix("Book.pages:") && $0.contains("integer16 to date") })
        #expect(text.contains { $0.hasPrefix("Note:") && $0.contains("abstract") })
    }

    @Test func lossyConversionsAreRefused() throws {
        let pairs: [(AttributeType, AttributeType)] = [
            (.integer64, .integer32), (.double, .float), (.string, .integer64), (.date, .string), (.boolean, .string),
            (.binary, .string),
        ]
        for (from, to) in pairs {
            let a = try Schema(entities: [EntityDescription(name: "E", attributes: [AttributeDescription(name: "v", type: from)])])
            let b = try Schema(entities: [EntityDescription(name: "E", attributes: [AttributeDescription(name: "v", type: to)])])
            #expect(problems(a, b).count == 1, "\(from) → \(to)")
        }
    }

    @Test func changedDestinationAndNewInverseAreRefused() throws {
        let base = try Schema(entities: [
            EntityDescription(name: "A", relationships: [RelationshipDescription(name: "b", destination: "B")]),
            EntityDescription(name: "B"),
            EntityDescription(name: "C"),
        ])
        let retargeted = try Schema(entities: [
            EntityDescription(name: "A", relationships: [RelationshipDescription(name: "b", destination: "C")]),
            EntityDescription(name: "B"),
            EntityDescription(name: "C"),
        ])
        #expect(problems(base, retargeted).map(\.description).contains { $0.contains("destination changes from B to C") })
        let inverted = try Schema(entities: [
            EntityDescription(name: "A", relationships: [RelationshipDescription(name: "b", destination: "B", inverse: "a")]),
            EntityDescription(name: "B", relationships: [RelationshipDescription(name: "a", destination: "A", inverse: "b")]),
            EntityDescription(name: "C"),
        ])
        #expect(problems(base, inverted).map(\.description).contains { $0.contains("B.a") && $0.contains("inverse") })
    }

    @Test func becomingAbstractIsRefused() throws {
        let to = try EvolutionSchemas.v1(changing: "Note") { n in n.isAbstract = true }
        #expect(problems(try EvolutionSchemas.v1(), to).map(\.description).contains { $0.contains("becomes abstract") })
    }

    @Test func planIsCodableAndPrintable() throws {
        let plan = try SchemaMigrationPlan(from: EvolutionSchemas.v1(), to: EvolutionSchemas.v2())
        let decoded = try JSONDecoder().decode(SchemaMigrationPlan.self, from: plan.jsonData())
        #expect(decoded == plan)
        let text = plan.description
        #expect(text.contains("Title: renamed from Book"))
        #expect(text.contains("fullName: renamed from name"))
        #expect(text.contains("integer16 → integer64, widened"))
        #expect(text.contains("Note: removed"))
        #expect(text.contains("Publisher: added"))
        #expect(plan.destinationVersionHashes == (try EvolutionSchemas.v2()).versionHashes)
    }

    @Test func swiftAndJSONFormsCarryRenamingIdentifiers() throws {
        let v2 = try EvolutionSchemas.v2()
        let data = try JSONEncoder().encode(v2)
        let back = try Schema(jsonData: data, file: "v2.json")
        #expect(back.entity(named: "Title")?.definition.renamingIdentifier == "Book")
        #expect(back.entity(named: "Author")?.attribute("fullName")?.renamingIdentifier == "name")
        #expect(try SchemaMigrationPlan(from: EvolutionSchemas.v1(), to: back) == SchemaMigrationPlan(from: EvolutionSchemas.v1(), to: v2))
    }
}
