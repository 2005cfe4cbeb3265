import Foundation
import StoreAPI
import Testing

extension ConformanceSuite {
    func checkUniqueness(_ h: Harness) throws {
        let url = h.storeURL()
        let (c, _) = try h.coordinator(url)
        let ctx = c.newContext()
        try ctx.insert("Tag", ["name": "x"])
        try ctx.insert("Tag", ["name": "y"])
        try ctx.insert("Tag")  // nil values never conflict
        try ctx.insert("Tag")
        try ctx.insert("Author", ["name": "A", "country": "NZ"])
        try ctx.insert("Author", ["name": "A", "country": "US"])
        try ctx.insert("Book", ["title": "One", "isbn": "111"])
        try ctx.save()

        func expectViolation(_ what: String, _ body: () throws -> Void) throws {
            try body()
            do {
                try ctx.save()
                Issue.record("\(what): save should have failed with a uniqueness violation")
            } catch let error as StoreError {
                guard case .uniquenessViolation = error else {
                    Issue.record("\(what): expected a uniqueness violation, got \(error)")
                    ctx.rollback()
                    return
                }
            }
            ctx.rollback()
        }
        try expectViolation("stored single value") { try ctx.insert("Tag", ["name": "x"]) }
        try expectViolation("two pending values") {
            try ctx.insert("Tag", ["name": "z"])
            try ctx.insert("Tag", ["name": "z"])
        }
        try expectViolation("compound constraint") { try ctx.insert("Author", ["name": "A", "country": "NZ"]) }
        try expectViolation("across sub-entities of the declaring entity") { try ctx.insert("Article", ["title": "Two", "isbn": "111"]) }
        try expectViolation("update into a used value") {
            let y = try #require(try ctx.fetch(FetchRequest(entity: "Tag", predicate: .comparison(.keyPath(["name"]), .equal, .constant("y"), []))).first)
            try y.setValue("x", forKey: "name")
        }
        #expect(try ctx.count(FetchRequest(entity: "Tag")) == 4, "failed saves wrote nothing")

        // Freeing a value and reusing it in the same save is fine,.
        let x = try #require(try ctx.fetch(FetchRequest(entity: "Tag", predicate: .comparison(.keyPath(["name"]), .equal, .constant("x"), []))).first)
        try ctx.delete(x)
        try ctx.insert("Tag", ["name": "x"])
        try ctx.save()
        try ctx.insert("Author", ["name": "B", "country": "NZ"])
        try ctx.save()
        #expect(try ctx.count(FetchRequest(entity: "Tag")) == 4)
        try h.close(c)
    }
}
