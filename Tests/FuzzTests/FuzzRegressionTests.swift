import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing
import XMLBackend

/// The inputs the fuzzer found crashes with, minimised by hand: each must now fail (or work) cleanly.
@Suite struct FuzzRegressionTests {
    /// NDJSONImporter: the third line with the same id read an index that was never appended (index out of range).
    @Test func sameIDThreeTimesIsReportedNotACrash() throws {
        let store = MemoryStore(url: nil, metadata: FuzzFixture.metadata(try FuzzFixture.schema(), type: "memory"))
        let line = #"{"entity":"Tag","id":"F0220000-0000-4000-8000-000000000001","attributes":{"label":"x"}}"#
        let text = Array(repeating: line, count: 3).joined(separator: "\n")
        #expect {
            try NDJSONImporter().importRecords(from: Data(text.utf8), named: "three.ndjson", into: store)
        } throws: { error in
            let e = error as? InterchangeError
            return e?.all.count == 2 && e?.all.allSatisfy { $0.message.contains("first on line 1") } == true
        }
        #expect(store.snapshot().recordCount == 0)
    }

    /// Xcode model loader: FoundationXML's parser traps on an element or attribute name that is not UTF-8.
    @Test func modelWithInvalidUTF8NameIsRefused() throws {
        let dir = try TemporaryDirectory("regression-model")
        let model = dir.path("Bad.xcdatamodel")
        try FileManager.default.createDirectory(at: model, withIntermediateDirectories: true)
        for bytes in [Array("<model><entity name=\"A\" x".utf8) + [0xFF] + Array("y=\"1\"/></model>".utf8),
                      Array("<model><ent".utf8) + [0xFF] + Array("ity name=\"A\"/></model>".utf8)] {
            try Data(bytes).write(to: model.appendingPathComponent("contents"))
            #expect {
                _ = try Schema(xcodeModelAt: model)
            } throws: { error in
                guard case SchemaError.unreadableModel(let file, let reason) = error else { return false }
                return file.hasSuffix("Bad.xcdatamodel/contents") && reason.contains("UTF-8")
            }
        }
    }

    /// Predicate parser: 100 to 200 nested `NOT`s or parentheses parsed, ran on the evaluating backends, and failed
    /// on SQLite with "parser stack overflow". The parser now refuses trees of `NOT`, `AND` and `OR` more than 24
    /// deep (redundant parentheses do not count); what it accepts runs everywhere.
    @Test func deepPredicatesRunOnEveryBackendOrNowhere() throws {
        for n in [25, 99, 150] {
            #expect(throws: StoreError.self) { try FetchPredicate(String(repeating: "NOT ", count: n) + "i16 == 5") }
            #expect(throws: StoreError.self) {
                try FetchPredicate(String(repeating: "(i16 == 1 OR (", count: n) + "i16 == 5" + String(repeating: "))", count: n))
            }
        }
        #expect(try FetchPredicate(String(repeating: "(", count: 150) + "i16 == 5" + String(repeating: ")", count: 150))
                == FetchPredicate("i16 == 5"))
        let stores = try PredicateFuzzTests.Stores()
        let cases = [
            ("Item", String(repeating: "NOT ", count: 23) + "i16 == 5"),
            ("Item", String(repeating: "(", count: 31) + "NOT i16 == 5" + String(repeating: ")", count: 31)),
            ("Item", String(repeating: "(i16 == 1 OR (", count: 23) + "i16 == 5" + String(repeating: "))", count: 23)),
            ("Book", String(repeating: "NOT (title == 'x' OR ", count: 11) + "ANY tags.label == 'x'" + String(repeating: ")", count: 11)),
        ]
        for (entity, text) in cases {
            #expect(try PredicateFuzzTests.backendsAgree(try FetchPredicate(text), entity: entity, stores: stores), "\(text)")
        }
    }
}
