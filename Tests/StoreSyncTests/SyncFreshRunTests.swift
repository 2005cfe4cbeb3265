import Foundation
import Logging
import StoreAPI
@testable import StoreSync
import StoreTestSupport
import Testing

/// A pull's records that cannot conflict with anything are merged by a fast path (``SyncSession/FreshRun``); every
/// other change goes the general way. The same pull applied to a store whose notes take the fast path and to one
/// whose notes cannot (another entity links to them) must leave the same records and the same sync state, whatever
/// mix of fresh records and changes that make the fast path step aside it holds.
@Suite("Sync of fresh records")
struct SyncFreshRunTests {
    /// The unlinked-records schema plus `Pin`, whose to-one links to `Note`: notes then cannot be inserted without
    /// objects, and every note goes the general way.
    static let linkedNotes: Schema = {
        do {
            return try Schema(entities: SyncUnlinkedRecordsTests.schema.entities.map(\.definition) + [
                EntityDescription(name: "Pin", attributes: [AttributeDescription(name: "label", type: .string)],
                                  relationships: [RelationshipDescription(name: "note", destination: "Note")]),
            ])
        } catch {
            preconditionFailure("the linked-notes schema is invalid: \(error)")
        }
    }()

    private struct Outcome: Equatable {
        var clocks: [UUID: [String: HybridLogicalClock]]
        var clock: HybridLogicalClock
        var tombstones: [UUID: HybridLogicalClock]
        var touched: Set<UUID>
        var touchedEveryRecord: Bool
        var inserted: Int
        var updated: Int
        var ignored: Int
        var notes: [UUID: [StoreValue]]
    }

    private static func stamp(_ wall: Int64, _ peer: UUID) -> HybridLogicalClock {
        HybridLogicalClock(wall: wall, counter: 0, peer: peer)
    }

    private static func note(_ id: UUID, _ values: [String: (String, HybridLogicalClock)]) -> RecordChange {
        RecordChange(entity: "Note", id: id, values: values.mapValues { StampedValue(clock: $0.1, text: $0.0) })
    }

    /// Applies `batches`, written in format 2, to a new store of `schema` holding the note `known` (its text stamped
    /// `old` in the state) and knowing `buried` deleted, or to an empty store whose state knows no record when `old`
    /// is `nil`; what it leaves.
    private func apply(_ batches: [ChangeBatch], schema: Schema, peer: UUID, known: UUID, buried: UUID,
                       old: HybridLogicalClock?, in dir: TemporaryDirectory, name: String) throws -> Outcome {
        try apply(files: batches.map { $0.encoded() }, schema: schema, peer: peer, known: known, buried: buried, old: old,
                  in: dir, name: name)
    }

    /// Applies the change files `files`, read as a pull reads them, as ``apply(_:schema:peer:known:buried:old:in:name:)``
    /// does.
    private func apply(files: [Data], schema: Schema, peer: UUID, known: UUID, buried: UUID,
                       old: HybridLogicalClock?, in dir: TemporaryDirectory, name: String) throws -> Outcome {
        var pulled: [PulledChangeFile] = []
        for data in files { pulled.append(try #require(PulledChangeFile.read(data), "a change file")) }
        let r = try Replica(dir.url.appendingPathComponent("\(name).sqlite"), type: "sqlite", remote: InMemoryRemote(),
                            schema: schema)
        var state = SyncState(peer: peer, location: "test", storeUUID: r.loaded.store.metadata.storeUUID)
        if let old {
            let c = r.context()
            _ = try c.insert("Note", ["text": .string("known")], globalID: known)
            try c.save()
            state.clocks[known] = ["text": old]
            state.tombstones[buried] = old
        }
        let session = SyncSession(loaded: r.loaded, coordinator: r.coordinator, remote: r.remote,
                                  calls: RemoteTimeout(seconds: 10, remoteName: "test"), logger: Logger(label: "test"),
                                  state: state, report: SyncReport(peer: peer, remote: "test"), index: RecordIndex())
        try session.apply(pulled)
        var notes: [UUID: [StoreValue]] = [:]
        let reading = r.context()
        for o in try reading.fetch(FetchRequest(entity: "Note")) {
            notes[o.globalID] = [try o.value(forKey: "text"), try o.value(forKey: "rank"), try o.value(forKey: "weight")]
        }
        return Outcome(clocks: session.state.clocks, clock: session.state.clock, tombstones: session.state.tombstones,
                       touched: session.touchedIDs, touchedEveryRecord: session.touchedEveryRecord,
                       inserted: session.report.insertedRecords, updated: session.report.updatedRecords,
                       ignored: session.report.ignoredChanges, notes: notes)
    }

    @Test func freshRecordsMergeAsTheGeneralPathMergesThem() throws {
        let dir = try TemporaryDirectory("sync-fresh-run")
        let fast = SyncedSchema(schema: SyncUnlinkedRecordsTests.schema, entityNames: ["Note"])
        let general = SyncedSchema(schema: Self.linkedNotes, entityNames: ["Note", "Pin"])
        try #require(fast.shapes["Note"]?.insertsWithoutObject == true, "notes take the fast path here")
        try #require(general.shapes["Note"]?.insertsWithoutObject == false, "and the general way there")

        let peer = UUID(), other = UUID()
        let (s1, s2, s3, s4) = (Self.stamp(1_000, other), Self.stamp(2_000, other), Self.stamp(3_000, other),
                                Self.stamp(4_000, other))
        let known = UUID(), buried = UUID()
        let ids = (0..<8).map { _ in UUID() }
        let full = { (i: Int, s: HybridLogicalClock) in
            Self.note(ids[i], ["text": ("[\"note \(i)\"]", s), "rank": ("[\(i)]", s), "weight": ("[\(i).5]", s)])
        }
        let first = ChangeBatch(peer: other, sequence: 1, changes: [
            full(0, s2),
            full(1, s2),
            // The same keys with another stamp, then another set of keys: the clock map of the records before is
            // not theirs.
            full(3, s3),
            Self.note(ids[2], ["text": ("[\"only text\"]", s3)]),
            // A record the store knows: merged the general way; the records after it are fresh again.
            Self.note(known, ["text": ("[\"known, changed\"]", s2)]),
            full(4, s2),
            // An unstamped value: the general way.
            Self.note(ids[5], ["text": ("[\"unstamped\"]", .zero), "rank": ("[5]", s2)]),
            // Deleted before: never comes back.
            Self.note(buried, ["text": ("[\"buried\"]", s2)]),
            // No values at all: the general way.
            RecordChange(entity: "Note", id: ids[6]),
            // An escaped text and a null, read through the general parser.
            Self.note(ids[7], ["text": ("[\"tab\\there\"]", s2), "rank": ("[null]", s2)]),
        ])
        let second = ChangeBatch(peer: other, sequence: 2, changes: [
            // New in the first file, changed by this one: one record, with the later text.
            Self.note(ids[0], ["text": ("[\"note 0, later\"]", s3)]),
            // An earlier stamp than the one it has: changes nothing.
            Self.note(ids[1], ["rank": ("[-1]", s1)]),
            RecordChange(entity: "Note", id: ids[3], deleted: s4),
        ])
        let third = ChangeBatch(peer: other, sequence: 3, changes: [
            // Added to the fresh records after a known record made the pull list them: still found.
            Self.note(ids[4], ["rank": ("[44]", s4)]),
        ])
        let batches = [first, second, third]
        let a = try apply(batches, schema: SyncUnlinkedRecordsTests.schema, peer: peer, known: known, buried: buried,
                          old: s1, in: dir, name: "fast")
        let b = try apply(batches, schema: Self.linkedNotes, peer: peer, known: known, buried: buried, old: s1,
                          in: dir, name: "general")
        #expect(a == b)
        #expect(a.notes[ids[0]]?[0] == .string("note 0, later"))
        #expect(a.notes[ids[1]]?[1] == .integer64(1))
        #expect(a.notes[ids[2]] == [.string("only text"), .null, .null])
        #expect(a.notes[ids[3]] == nil && a.tombstones[ids[3]] == s4)
        #expect(a.notes[ids[4]]?[1] == .integer64(44))
        #expect(a.notes[known]?[0] == .string("known, changed"))
        #expect(a.notes[buried] == nil)
        #expect(a.notes[ids[7]]?[0] == .string("tab\there"))
        #expect(a.notes.count == 8, "known, and every new note but the deleted one")
        #expect(a.clocks[ids[0]] == ["text": s3, "rank": s2, "weight": s2])
        #expect(a.clocks[ids[1]] == ["text": s2, "rank": s2, "weight": s2])
        #expect(a.clock.wall >= s4.wall && a.clock.peer == peer)

        // The same files as peers of earlier versions write them (format 1, JSON): read another way, merged the same.
        let json = try apply(files: batches.map { var b = $0; b.format = 1; return b.jsonEncoded() },
                             schema: SyncUnlinkedRecordsTests.schema, peer: peer, known: known, buried: buried, old: s1,
                             in: dir, name: "fast-json")
        #expect(json == a)
    }

    /// A file as another writer may lay it out, read as format 2 reads it: keys in another order per record, a name
    /// the table lists twice, a key a record names twice (its last value counts), escapes. Fresh records read by slot
    /// must hold what the general way reads by name.
    @Test func filesOfAnyKeyOrderMergeAsTheGeneralPathMergesThem() throws {
        let dir = try TemporaryDirectory("sync-fresh-layout")
        let peer = UUID(), other = UUID()
        let (s1, s2) = (Self.stamp(1_000, other), Self.stamp(2_000, other))
        let ids = (0..<6).map { _ in UUID() }
        let lines = [
            "storesync-changes\t2\t\(other.uuidString)\t1\t6",
            // `text` is listed twice: numbers 2 and 4 name one key.
            "S\tNote", "S\tweight", "S\ttext", "S\trank", "S\ttext",
            "C\t1000\t0\t\(other.uuidString)", "C\t2000\t0\t\(other.uuidString)",
            "R\t\(ids[0].uuidString)\t0", "V\t1\t0\t[0.5]", "V\t2\t0\t[\"a\"]", "V\t3\t0\t[1]",
            "R\t\(ids[1].uuidString)\t0", "V\t3\t0\t[2]", "V\t4\t0\t[\"b\"]", "V\t1\t0\t[1.5]",
            // One key by both its numbers: the later value, with its stamp.
            "R\t\(ids[2].uuidString)\t0", "V\t2\t0\t[\"first\"]", "V\t4\t1\t[\"second\"]",
            // An escaped backslash: the text is a JSON string with an escaped tab.
            "R\t\(ids[3].uuidString)\t0", "V\t2\t1\t[\"tab\\\\there\"]",
            // One key twice by one number, the later value with the earlier stamp.
            "R\t\(ids[4].uuidString)\t0", "V\t3\t1\t[4]", "V\t3\t0\t[5]", "V\t2\t0\t[\"e\"]",
            // A text of the wrong type, and a value of a key that is no attribute.
            "R\t\(ids[5].uuidString)\t0", "V\t1\t1\t[\"heavy\"]", "V\t0\t1\t[\"odd\"]",
            "E",
        ]
        let file = Data((lines.joined(separator: "\n") + "\n").utf8)
        let batch = try #require(ChangeBatch.decode(file))
        #expect(batch.changes[2].values["text"] == StampedValue(clock: s2, text: "[\"second\"]"))
        #expect(batch.changes[3].values["text"]?.text == "[\"tab\\there\"]")
        #expect(batch.changes[4].values["rank"] == StampedValue(clock: s1, text: "[5]"))
        let a = try apply(files: [file], schema: SyncUnlinkedRecordsTests.schema, peer: peer, known: UUID(),
                          buried: UUID(), old: nil, in: dir, name: "fast")
        let b = try apply(files: [file], schema: Self.linkedNotes, peer: peer, known: UUID(), buried: UUID(), old: nil,
                          in: dir, name: "general")
        #expect(a == b)
        #expect(a.notes[ids[0]] == [.string("a"), .integer64(1), .double(0.5)])
        #expect(a.notes[ids[1]] == [.string("b"), .integer64(2), .double(1.5)])
        #expect(a.notes[ids[2]] == [.string("second"), .null, .null])
        #expect(a.notes[ids[3]] == [.string("tab\there"), .null, .null])
        #expect(a.notes[ids[4]] == [.string("e"), .integer64(5), .null])
        #expect(a.notes[ids[5]] == [.null, .null, .null] && a.ignored == 1)
        #expect(a.clocks[ids[2]] == ["text": s2])
        #expect(a.clocks[ids[4]] == ["text": s1, "rank": s1])
        #expect(a.clocks[ids[5]] == ["weight": s2, "Note": s2])
        #expect(a.inserted == 6)
    }

    /// A pull into a state that knows no record (a peer's first): the next write holds every record, so neither path
    /// lists the records it changes one by one, and both leave the same records and stamps, fresh records, records
    /// that step aside and a deletion alike.
    @Test func aFirstPullMergesAsTheGeneralPathMergesIt() throws {
        let dir = try TemporaryDirectory("sync-fresh-first")
        let peer = UUID(), other = UUID()
        let (s1, s2, s3) = (Self.stamp(1_000, other), Self.stamp(2_000, other), Self.stamp(3_000, other))
        let ids = (0..<7).map { _ in UUID() }
        let full = { (i: Int, s: HybridLogicalClock) in
            Self.note(ids[i], ["text": ("[\"note \(i)\"]", s), "rank": ("[\(i)]", s), "weight": ("[\(i).5]", s)])
        }
        let batches = [
            ChangeBatch(peer: other, sequence: 1, changes: [
                full(0, s1),
                full(1, s1),
                // An unstamped value: the general way, between fresh records.
                Self.note(ids[2], ["text": ("[\"unstamped\"]", .zero), "rank": ("[2]", s1)]),
                full(3, s2),
                // The same record twice in one file: the second change merges with the first.
                Self.note(ids[3], ["rank": ("[33]", s3)]),
                full(4, s2),
                // A key that is no attribute, and a text that is not a value of its attribute's type.
                Self.note(ids[6], ["text": ("[\"odd\"]", s1), "rank": ("[\"not a number\"]", s1), "mood": ("[\"glad\"]", s1)]),
            ]),
            ChangeBatch(peer: other, sequence: 2, changes: [
                Self.note(ids[0], ["text": ("[\"note 0, later\"]", s3)]),
                RecordChange(entity: "Note", id: ids[4], deleted: s3),
                full(5, s3),
            ]),
        ]
        let a = try apply(batches, schema: SyncUnlinkedRecordsTests.schema, peer: peer, known: UUID(), buried: UUID(),
                          old: nil, in: dir, name: "fast")
        let b = try apply(batches, schema: Self.linkedNotes, peer: peer, known: UUID(), buried: UUID(), old: nil,
                          in: dir, name: "general")
        #expect(a == b)
        #expect(a.touchedEveryRecord && a.touched.isEmpty)
        #expect(a.notes.count == 6 && a.notes[ids[4]] == nil && a.tombstones[ids[4]] == s3)
        #expect(a.notes[ids[6]] == [.string("odd"), .null, .null] && a.ignored == 1)
        #expect(a.notes[ids[0]]?[0] == .string("note 0, later"))
        #expect(a.notes[ids[3]]?[1] == .integer64(33))
        #expect(a.clocks[ids[0]] == ["text": s3, "rank": s1, "weight": s1])
        #expect(a.clocks[ids[1]] == ["text": s1, "rank": s1, "weight": s1])
        #expect(a.clocks[ids[3]] == ["text": s2, "rank": s3, "weight": s2])
        #expect(a.clocks[ids[5]] == ["text": s3, "rank": s3, "weight": s3])
    }
}
