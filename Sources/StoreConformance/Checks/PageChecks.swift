import Foundation
@_spi(BackendKit) import StoreAPI
import Testing

extension ConformanceSuite {
    /// A store that reads pages must read exactly what its scans read, and a store that inserts pages must store
    /// exactly what saving the same records stores — with the save's checks: a page that does not fit its entity
    /// is refused and nothing of it is written.
    func checkRecordPages(_ h: Harness) throws {
        let url = h.storeURL("pages-source")
        let (c, loaded) = try h.coordinator(url)
        try Self.fillForPages(c.newContext())
        let source = loaded.store
        let scanning = source as? any PageScanningStore
        guard scanning != nil || source is any PageInsertingStore else {
            Issue.record("\(h.backend.typeIdentifier) declares recordPages, but its stores read and write no pages")
            return
        }
        let entities = h.schema.entities.filter { !$0.isAbstract }

        if let scanning {
            for entity in entities {
                // Small pages, so paging by key is exercised too.
                var after: Int64?
                while true {
                    let records = try source.scan(entity: entity.name, after: after, limit: 3)
                    let page = try scanning.scanPage(entity: entity.name, after: after, limit: 3)
                    #expect(page.entity == entity.name)
                    #expect(try page.records(in: h.schema) == records, "\(entity.name) after \(after.map(String.init) ?? "nil")")
                    guard let last = records.last, records.count == 3 else { break }
                    after = last.primaryKey
                }
            }
        }

        if source is any PageInsertingStore {
            // The same records inserted as pages into a second store of the same kind.
            let copyURL = h.storeURL("pages-copy")
            let copy = try h.backend.open(at: copyURL, options: StoreOptions(), creating: source.metadata)
            defer { try? copy.close() }
            guard let sink = copy as? any PageInsertingStore else {
                Issue.record("a second store of \(h.backend.typeIdentifier) inserts no pages")
                return
            }
            // As a transfer inserts them: inside a bulk load when the store has one (some stores insert pages
            // differently then), a misfit page refused on the way.
            let bulk = copy as? any BulkLoadingStore
            let loading = try bulk?.beginBulkLoad() ?? false
            for entity in entities {
                var page = RecordPage(entity: entity.name)
                for r in try source.scan(entity: entity.name, after: nil, limit: .max) { page.append(r) }
                try sink.insert(page)
            }
            try checkMisfitPagesAreRefused(h, copy, sink)
            if loading { try bulk?.finishBulkLoad() }
            for entity in entities {
                let want = try source.scan(entity: entity.name, after: nil, limit: .max)
                let got = try copy.scan(entity: entity.name, after: nil, limit: .max)
                #expect(got.count == want.count, "\(entity.name)")
                for (g, w) in zip(got, want) { #expect(h.sameRecord(g, w, in: entity), "\(entity.name) \(w.primaryKey)") }
            }
            // Outside a bulk load too.
            try checkMisfitPagesAreRefused(h, copy, sink)
            try checkInsertPages(h, copy, sink)
            // And inside one again.
            if try bulk?.beginBulkLoad() ?? false {
                try checkInsertPages(h, copy, sink, firstKey: 40_000)
                try bulk?.finishBulkLoad()
            }
        }
        try h.close(c)
    }

    /// A page with a value of the wrong type, or a relationship value of the wrong kind, fails like the save of
    /// the same record would, and nothing of the page is written.
    private func checkMisfitPagesAreRefused(_ h: Harness, _ store: any PersistentStore, _ sink: any PageInsertingStore) throws {
        let sample = try h.schema.requireEntity("Sample")
        let before = try store.count(FetchRequest(entity: "Sample"))
        var good = sample.newRecord(primaryKey: 9_001)
        good.attributes[0] = .integer16(1)
        var wrongType = sample.newRecord(primaryKey: 9_002)
        wrongType.attributes[0] = .string("not an integer")
        var page = RecordPage(entity: "Sample")
        page.append(good)
        page.append(wrongType)
        #expect(throws: StoreError.self) { try sink.insert(page) }
        #expect(try store.count(FetchRequest(entity: "Sample")) == before, "a refused page wrote records")

        let tag = try h.schema.requireEntity("Tag")
        let tagsBefore = try store.count(FetchRequest(entity: "Tag"))
        var wrongKind = tag.newRecord(primaryKey: 9_003)
        wrongKind.relationships = tag.relationships.map { _ in .toOne(nil) }  // `works` is to-many
        var tags = RecordPage(entity: "Tag")
        tags.append(wrongKind)
        #expect(throws: StoreError.self) { try sink.insert(tags) }
        #expect(try store.count(FetchRequest(entity: "Tag")) == tagsBefore, "a refused page wrote its record")
    }

    /// ``PageInsertingStore/insertPages(count:page:)`` is one transaction: a page that does not fit, or an error
    /// from the closure making the pages, after pages that were fine leaves nothing written, and the closure's
    /// error comes out unchanged; otherwise every page's records are stored.
    private func checkInsertPages(_ h: Harness, _ store: any PersistentStore, _ sink: any PageInsertingStore, firstKey: Int64 = 30_000) throws {
        let sample = try h.schema.requireEntity("Sample")
        let before = try store.count(FetchRequest(entity: "Sample"))
        func page(_ p: Int, misfit: Bool = false) -> RecordPage {
            var page = RecordPage(entity: "Sample")
            for k in 0..<3 {
                var r = sample.newRecord(primaryKey: firstKey + Int64(p * 10 + k))
                r.attributes[1] = misfit && k == 2 ? .string("not an integer") : .integer32(Int32(p * 10 + k))
                page.append(r)
            }
            return page
        }
        #expect(throws: RowProducerFailure(row: 2)) {
            try sink.insertPages(count: 3) { p in
                if p == 2 { throw RowProducerFailure(row: p) }
                return page(p)
            }
        }
        #expect(throws: StoreError.self) { try sink.insertPages(count: 3) { page($0, misfit: $0 == 2) } }
        #expect(try store.count(FetchRequest(entity: "Sample")) == before, "a refused insertPages wrote records")

        var asked: [Int] = []
        try sink.insertPages(count: 3) { p in
            asked.append(p)
            return page(p)
        }
        #expect(Array(asked.suffix(3)) == [0, 1, 2], "pages are asked for in order")
        let stored = try store.scan(entity: "Sample", after: firstKey - 1, limit: 9)
        #expect(stored.map(\.primaryKey) == (0..<3).flatMap { p in (0..<3).map { firstKey + Int64(p * 10 + $0) } })
        #expect(stored.map { $0.attributes[1] } == (0..<3).flatMap { p in (0..<3).map { StoreValue.integer32(Int32(p * 10 + $0)) } })
        #expect(try store.count(FetchRequest(entity: "Sample")) == before + 9)
    }

    /// Every attribute type's edge values, and a small graph with every relationship kind (ordered, many-to-many,
    /// inherited entities, self-references, a to-many without inverse).
    static func fillForPages(_ context: StoreContext) throws {
        for values in edgeSamples() { _ = try context.insert("Sample", values) }
        let ada = try context.insert("Author", ["name": "Ada", "country": "UK", "born": .integer16(1815)])
        let bea = try context.insert("Author", ["name": "Bea", "country": nil])
        let agent = try context.insert("Agent", ["name": "Agnes"])
        let tags = try (0..<4).map { try context.insert("Tag", ["name": .string("tag \($0)")]) }
        var works: [ManagedObject] = []
        for i in 0..<7 {
            let entity = ["Book", "Novel", "Article"][i % 3]
            works.append(try context.insert(entity, ["title": .string("Work \(i)"), "isbn": .string("isbn-\(i)"), "pages": .integer32(Int32(100 + i))]))
        }
        try ada.setObjects([works[3], works[0], works[5], works[1]], forKey: "works")  // ordered, not by key
        try bea.setObjects([works[6], works[2]], forKey: "works")
        try ada.setObject(agent, forKey: "agent")
        try bea.setObject(ada, forKey: "mentor")
        try ada.setObjects([tags[2], tags[0]], forKey: "favorites")
        try works[0].setObjects([tags[1], tags[3]], forKey: "tags")
        try works[4].setObjects([tags[1]], forKey: "tags")
        try works[0].setObject(works[4], forKey: "sequel")
        try context.save()
    }
}
