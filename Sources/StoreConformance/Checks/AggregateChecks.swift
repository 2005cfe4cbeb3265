import Foundation
@_spi(BackendKit) import StoreAPI
import Testing

extension ConformanceSuite {
    func checkAggregates(_ h: Harness) throws {
        let url = h.storeURL()
        let (c, store) = try h.coordinator(url)
        let ctx = c.newContext()
        try Self.populateCatalog(ctx)
        try ctx.save()
        let fresh = c.newContext()

        // Hand-checked from how the catalog is made: pages are nil for every fifth work, else 100 + (37i mod 400).
        let pages = (0..<21).filter { $0 % 5 != 0 }.map { 100 + ($0 * 37) % 400 }
        // Ratings as the store keeps them (a store may not keep NaN: Core Data's reads it back as nil).
        let ratings = try store.store.fetch(FetchRequest(entity: "Work")).compactMap { r -> Double? in
            guard let e = h.schema.entity(named: r.entity), let i = e.attributeIndex("rating") else { return nil }
            return r.attributes[i].doubleValue
        }
        let ratingSum = ratings.contains { $0.isNaN } ? Double.nan : ratings.reduce(0, +)
        let whole = try fresh.aggregate(AggregateRequest(
            entity: "Work", aggregates: [.count, .sum("pages"), .min("pages"), .max("pages"), .average("pages"), .sum("rating")]))
        #expect(whole == [AggregateRow(group: [], values: [
            .integer64(21), .integer64(Int64(pages.reduce(0, +))), .integer32(Int32(pages.min() ?? 0)),
            .integer32(Int32(pages.max() ?? 0)), .double(Double(pages.reduce(0, +)) / Double(pages.count)), .double(ratingSum),
        ])], "a NaN rating makes the sum NaN")
        let none = try fresh.aggregate(AggregateRequest(
            entity: "Work", predicate: .false, aggregates: [.count, .sum("pages"), .sum("rating"), .min("title"), .average("pages")]))
        #expect(none == [AggregateRow(group: [], values: [.integer64(0), .integer64(0), .double(0), .null, .null])],
                "no records: one row, zero sums, nil minimums and averages")
        #expect(try fresh.aggregate(AggregateRequest(entity: "Work", predicate: .false, groupBy: ["title"], aggregates: [.count])).isEmpty)
        let names = try fresh.distinctValues("Work", of: "author.name")
        #expect(names == [.null, "Banks", "Le Guin", "Ōe"], "distinct values, nil first, in scalar order")
        let perKind = try fresh.aggregate(AggregateRequest(entity: "Novel", groupBy: ["genre"], aggregates: [.count]))
        #expect(perKind == [AggregateRow(group: ["literary"], values: [.integer64(4)]),
                            AggregateRow(group: ["space opera"], values: [.integer64(3)])])
        #expect(throws: StoreError.self, "a sum of strings is refused") {
            try fresh.aggregate(AggregateRequest(entity: "Work", aggregates: [.sum("title")]))
        }
        #expect(throws: StoreError.self, "an unknown group key is refused") {
            try fresh.aggregate(AggregateRequest(entity: "Work", groupBy: ["nope"], aggregates: [.count]))
        }

        // Every request matches the reference evaluator over the fetched records.
        let reference = AggregateEvaluator(PredicateEvaluator(schema: h.schema) { root, keys in
            try store.store.records(withKeys: keys, root: root)
        })
        let functions: [[AggregateFunction]] = [
            [.count, .sum("pages"), .average("pages")], [.min("rating"), .max("rating"), .sum("rating"), .average("rating")],
            [.min("title"), .max("title"), .min("published"), .max("published")], [],
        ]
        let groups: [[String]] = [[], ["author.name"], ["author"], ["rating"], ["published", "author.name"], ["tags.@count"]]
        let predicates: [FetchPredicate?] = [nil] + Self.catalogPredicates().enumerated().filter { $0.offset % 3 == 0 }.map(\.element)
        for (i, predicate) in predicates.enumerated() {
            for (j, group) in groups.enumerated() {
                for entity in ["Work", "Book"] {
                    let request = AggregateRequest(entity: entity, predicate: predicate, groupBy: group,
                                                   aggregates: functions[(i + j) % functions.count])
                    let want = try reference.aggregate(request, records: try store.store.fetch(request.fetchRequest))
                    #expect(try fresh.aggregate(request) == want, "\(request): differs from the reference")
                }
            }
        }

        // A context's unsaved changes take part.
        _ = try fresh.insert("Article", ["title": "Unsaved", "pages": 1000])
        let withUnsaved = try fresh.aggregate(AggregateRequest(entity: "Work", aggregates: [.count, .max("pages")]))
        #expect(withUnsaved.first?.values == [.integer64(22), .integer32(1000)])
        fresh.rollback()
        try h.close(c)
    }
}
