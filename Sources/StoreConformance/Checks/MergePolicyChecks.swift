import Foundation
@_spi(BackendKit) import StoreAPI
import Testing

extension ConformanceSuite {
    func checkMergePolicies(_ h: Harness) throws {
        func one(_ ctx: StoreContext, _ entity: String, _ format: String, _ args: StoreValue...) throws -> ManagedObject {
            let found = try ctx.fetch(FetchRequest(entity: entity, predicate: try FetchPredicate(format, arguments: args)))
            guard found.count == 1, let o = found.first else {
                throw StoreError.invalidArgument("expected one \(entity) where \(format), found \(found.count)")
            }
            return o
        }
        func titles(_ objects: [ManagedObject]) throws -> Set<String> {
            Set(try objects.map { try $0.value(forKey: "name").stringValue ?? "?" })
        }

        for policy in MergePolicy.allCases {
            let (c, _) = try h.coordinator(h.storeURL("merge-\(policy)"))
            // Stored: a book with ISBN "x" by A, tagged t1.
            let setup = c.newContext()
            let a = try setup.insert("Author", ["name": "A"])
            _ = try setup.insert("Author", ["name": "B"])
            let t1 = try setup.insert("Tag", ["name": "t1"])
            _ = try setup.insert("Tag", ["name": "t2"])
            let stored = try setup.insert("Book", ["title": "Stored", "isbn": "x", "pages": 100])
            try stored.setObject(a, forKey: "author")
            try stored.setObjects([t1], forKey: "tags")
            try setup.save()
            let (storedID, storedGlobalID) = (stored.objectID, stored.globalID)

            // A new book with the same ISBN: another title, no pages, a rating, by B, tagged t2.
            let ctx = c.newContext()
            ctx.mergePolicy = policy
            let dup = try ctx.insert("Book", ["title": "New", "isbn": "x", "rating": 4.5])
            try dup.setObject(try one(ctx, "Author", "name == 'B'"), forKey: "author")
            try dup.setObjects([try one(ctx, "Tag", "name == 't2'")], forKey: "tags")
            if policy == .error {
                #expect(throws: StoreError.self, "the default policy refuses the duplicate") { try ctx.save() }
                ctx.rollback()
            } else {
                try ctx.save()
                #expect(dup.state != .clean, "\(policy): the colliding insert is discarded, not saved")
                withExtendedLifetime(ctx) {}
            }

            let check = c.newContext()
            let book = try one(check, "Work", "isbn == 'x'")
            #expect(book.objectID == storedID && book.globalID == storedGlobalID,
                    "\(policy): the stored record keeps its identity")
            let title = try book.value(forKey: "title")
            let pages = try book.value(forKey: "pages")
            let rating = try book.value(forKey: "rating")
            let author = try book.object(forKey: "author")?.value(forKey: "name")
            let tags = try titles(book.objects(forKey: "tags"))
            let t1Works = try one(check, "Tag", "name == 't1'").objects(forKey: "works").count
            let t2Works = try one(check, "Tag", "name == 't2'").objects(forKey: "works").count
            let aWorks = try one(check, "Author", "name == 'A'").objects(forKey: "works").count
            let bWorks = try one(check, "Author", "name == 'B'").objects(forKey: "works").count
            switch policy {
            case .error, .rollback:
                #expect(title == "Stored" && pages == .integer32(100) && rating == .null && author == "A" && tags == ["t1"],
                        "\(policy): the record is unchanged")
                #expect(t2Works == 0 && bWorks == 0 && aWorks == 1, "\(policy): the insert's links are gone")
            case .mergeByPropertyObjectTrump:
                #expect(title == "New" && pages == .integer32(100) && rating == .double(4.5), "\(policy): set values win, nil ones do not")
                #expect(author == "B" && aWorks == 0 && bWorks == 1, "\(policy): the insert's to-one wins, inverses follow")
                #expect(tags == ["t1", "t2"] && t1Works == 1 && t2Works == 1, "\(policy): to-many relationships are merged")
            case .mergeByPropertyStoreTrump:
                #expect(title == "Stored" && pages == .integer32(100) && rating == .double(4.5), "\(policy): the insert fills only nil values")
                #expect(author == "A" && aWorks == 1 && bWorks == 0)
                #expect(tags == ["t1", "t2"] && t1Works == 1 && t2Works == 1)
            case .overwrite:
                #expect(title == "New" && pages == .null && rating == .double(4.5), "\(policy): every value is the insert's")
                #expect(author == "B" && aWorks == 0 && bWorks == 1)
                #expect(tags == ["t2"] && t1Works == 0 && t2Works == 1, "\(policy): the record's former tags lose it")
            }
            #expect(try check.count(FetchRequest(entity: "Work")) == 1)

            // Two inserts of one save collide: the first one is kept, the later one merged into it.
            let pair = c.newContext()
            pair.mergePolicy = policy
            _ = try pair.insert("Book", ["title": "One", "isbn": "y", "pages": 1])
            _ = try pair.insert("Book", ["title": "Two", "isbn": "y"])
            if policy == .error {
                #expect(throws: StoreError.self) { try pair.save() }
            } else {
                try pair.save()
                let reader = c.newContext()
                let merged = try one(reader, "Work", "isbn == 'y'")
                let expected: (StoreValue, StoreValue) = switch policy {
                case .overwrite: ("Two", .null)
                case .mergeByPropertyObjectTrump: ("Two", .integer32(1))
                default: ("One", .integer32(1))
                }
                #expect(try merged.value(forKey: "title") == expected.0 && merged.value(forKey: "pages") == expected.1,
                        "\(policy): two inserts of one save")
                withExtendedLifetime(reader) {}
            }
            try h.close(c)
        }

        // A policy for one insert overrides the context's.
        let (c, _) = try h.coordinator(h.storeURL("merge-override"))
        let setup = c.newContext()
        _ = try setup.insert("Book", ["title": "Stored", "isbn": "z"])
        try setup.save()
        let ctx = c.newContext()
        let dup = try ctx.insert("Book", ["title": "New", "isbn": "z"])
        try ctx.setMergePolicy(.mergeByPropertyObjectTrump, for: dup)
        try ctx.save()
        let reader = c.newContext()
        #expect(try one(reader, "Work", "isbn == 'z'").value(forKey: "title") == "New")
        withExtendedLifetime(reader) {}
        try h.close(c)
    }
}
