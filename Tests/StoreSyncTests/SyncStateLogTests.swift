import Foundation
import StoreAPI
@testable import StoreSync
import StoreTestSupport
import Testing

/// The per-record sync state of a file store lives in a log beside it, written a frame of changes at a time, and
/// the store's metadata names the revision it goes with.
@Suite("Sync state log")
struct SyncStateLogTests {
    private func stateText(_ r: Replica) throws -> String {
        guard case .string(let text)? = r.loaded.store.metadata.custom[SyncState.key] else {
            Issue.record("no sync state in the metadata")
            return ""
        }
        return text
    }

    @Test func theMetadataKeepsASmallStateWhateverTheNumberOfRecords() async throws {
        let dir = try TemporaryDirectory("sync-log-size")
        let remote = InMemoryRemote()
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote)
        let c = a.context()
        for i in 0..<300 { try c.insert("Book", ["title": .string("book \(i)"), "pages": .integer64(Int64(i))]) }
        try c.save()
        try await a.sync()
        let small = try stateText(a).utf8.count
        let log = RecordStateLog.url(beside: dir.path("a.sqlite"))
        #expect(FileManager.default.fileExists(atPath: log.path))
        let logSize = try #require(try FileManager.default.attributesOfItem(atPath: log.path)[.size] as? Int)
        let c2 = a.context()
        for i in 0..<300 { try c2.insert("Book", ["title": .string("more \(i)")]) }
        try c2.save()
        try await a.sync()
        // The metadata does not grow with the records; the log grows by a frame of the new ones.
        #expect(try stateText(a).utf8.count < small + 100 && small < 2_000, "\(small) bytes")
        let grown = try #require(try FileManager.default.attributesOfItem(atPath: log.path)[.size] as? Int)
        #expect(grown > logSize)
        let state = try #require(try await a.engine.currentState())
        #expect(state.clocks.count == 600 && state.recordLog != nil)
        // A new engine (another process) reads the same state back from the log.
        let b = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote)
        let reread = try #require(try await b.engine.currentState())
        #expect(reread.clocks == state.clocks && reread.revision == state.revision)
    }

    /// A store whose log knows no record pulls every record of another peer: the log written after the pull holds
    /// them all (it is not a frame of listed records), and a frame of a later change follows it.
    @Test func aFirstPullIntoAnAttachedEmptyStoreIsLoggedWhole() async throws {
        let dir = try TemporaryDirectory("sync-log-first-pull")
        let remote = InMemoryRemote()
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote)
        try await a.sync()
        let attached = try #require(try await a.engine.currentState())
        #expect(attached.clocks.isEmpty && attached.recordLog != nil)
        let b = try Replica(dir.path("b.sqlite"), type: "sqlite", remote: remote)
        var books: [UUID] = []
        for i in 0..<40 { books.append(try b.insert("Book", ["title": .string("book \(i)"), "pages": .integer64(Int64(i))])) }
        try await b.sync()
        let pulled = try await a.sync()
        #expect(pulled.insertedRecords == 40)
        let state = try #require(try await a.engine.currentState())
        #expect(state.clocks.count == 40 && state.recordLog == attached.recordLog)
        // Another process reads the pulled state back from the log.
        let reread = try #require(try await Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote).engine.currentState())
        #expect(reread.clocks == state.clocks && reread.revision == state.revision)
        // A later change is a frame after the snapshot.
        try b.update(books[3]) { o, _ in try o.setValue(.string("changed"), forKey: "title") }
        try await b.sync()
        try await a.sync()
        let later = try #require(try await a.engine.currentState())
        let rereadLater = try #require(try await Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote).engine.currentState())
        #expect(rereadLater.clocks == later.clocks && later.clocks[books[3]] != state.clocks[books[3]])
        #expect(try a.value(books[3], "title") == .string("changed"))
    }

    @Test func framesTheMetadataDoesNotNameAreLeftOutAndCutOff() throws {
        let dir = try TemporaryDirectory("sync-log-frames")
        let url = dir.path("x.storesync")
        let peer = UUID()
        var state = SyncState(peer: peer, location: "here", storeUUID: UUID())
        let id = UUID()
        let gone = UUID()
        func stamp(_ wall: Int64) -> HybridLogicalClock { HybridLogicalClock(wall: wall, counter: 0, peer: peer) }
        state.clocks[id] = ["title": stamp(1)]
        let log = UUID()
        let first = try RecordStateLog.writeSnapshot(at: url, id: log, revision: 1, state: state)
        state.clocks[id] = ["title": stamp(2), "pages\t\n\\": stamp(2)]
        state.tombstones[gone] = stamp(3)
        state.removed.insert("\(id.uuidString) tags→x")
        let second = try RecordStateLog.append(at: url, position: first, revision: 2, ids: [id, gone],
                                               members: ["\(id.uuidString) tags→x"], state: state)
        var read1 = SyncState(peer: peer, location: "here", storeUUID: UUID())
        #expect(RecordStateLog.read(at: url, id: log, revision: 1, into: &read1) == first)
        #expect(read1.clocks[id] == ["title": stamp(1)] && read1.tombstones.isEmpty)
        var read2 = SyncState(peer: peer, location: "here", storeUUID: UUID())
        #expect(RecordStateLog.read(at: url, id: log, revision: 2, into: &read2) == second)
        #expect(read2.clocks == state.clocks && read2.tombstones == state.tombstones && read2.removed == state.removed)
        // Another log, or a revision it never reached: not used.
        var other = SyncState(peer: peer, location: "here", storeUUID: UUID())
        #expect(RecordStateLog.read(at: url, id: UUID(), revision: 2, into: &other) == nil)
        #expect(RecordStateLog.read(at: url, id: log, revision: 3, into: &other) == nil && other.clocks.isEmpty)
        // Metadata written at revision 1 (a crash before it named 2): the next frame replaces frame 2.
        var again = read1
        again.clocks[id] = ["title": stamp(5)]
        _ = try RecordStateLog.append(at: url, position: first, revision: 2, ids: [id], members: [], state: again)
        var read3 = SyncState(peer: peer, location: "here", storeUUID: UUID())
        #expect(RecordStateLog.read(at: url, id: log, revision: 2, into: &read3) != nil)
        #expect(read3.clocks[id] == ["title": stamp(5)] && read3.tombstones.isEmpty)
        // A torn frame at the end (a write that failed half-way) is not read.
        let handle = try FileHandle(forWritingTo: url)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("F\t3\tD\t999\t0\nG\tpartial".utf8))
        try handle.close()
        var read4 = SyncState(peer: peer, location: "here", storeUUID: UUID())
        #expect(RecordStateLog.read(at: url, id: log, revision: 2, into: &read4) != nil && read4.clocks == read3.clocks)
        #expect(RecordStateLog.read(at: url, id: log, revision: 3, into: &read4) == nil)
    }

    /// A log of the earlier layout (version 1: every stamp written in full) still reads; the next write rewrites it
    /// in the current layout instead of appending a frame of another layout to it.
    @Test func aLogOfTheEarlierLayoutStillReadsAndIsRewritten() throws {
        let dir = try TemporaryDirectory("sync-log-v1")
        let url = dir.path("x.storesync")
        let peer = UUID()
        let id = UUID()
        let log = UUID()
        func stamp(_ wall: Int64) -> HybridLogicalClock { HybridLogicalClock(wall: wall, counter: 0, peer: peer) }
        // A record named by something that is not a global ID names no record: its lines are left out.
        let body = Array(("G\tnot-an-id\nC\ttitle\t6.0.\(peer.uuidString)\nG\t\(id.uuidString)\nC\ttitle\t7.0.\(peer.uuidString)\n"
            + "M\t\(id.uuidString) tags→x\t8.0.\(peer.uuidString)\t1\n").utf8)
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in body {
            hash ^= UInt64(b)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let file = Array("storesync-records\t1\t\(log.uuidString)\nF\t1\tS\t\(body.count)\t\(String(hash, radix: 16))\n".utf8) + body
        try Data(file).write(to: url)
        var state = SyncState(peer: peer, location: "here", storeUUID: UUID())
        let position = try #require(RecordStateLog.read(at: url, id: log, revision: 1, into: &state))
        #expect(position.version == 1)
        #expect(state.clocks == [id: ["title": stamp(7)]])
        #expect(state.isMember(id, "tags→x") == false)
        #expect(state.covers?["\(id.uuidString) tags→x"] == stamp(8) && state.removed == ["\(id.uuidString) tags→x"])
        state.clocks[id]?["pages"] = stamp(9)
        let next = try RecordStateLog.append(at: url, position: position, revision: 2, ids: [id], members: [], state: state)
        #expect(next.version == RecordStateLog.currentVersion)
        let text = String(decoding: try Data(contentsOf: url), as: UTF8.self)
        #expect(text.hasPrefix("storesync-records\t\(RecordStateLog.currentVersion)\t\(log.uuidString)\n"))
        var reread = SyncState(peer: peer, location: "here", storeUUID: UUID())
        #expect(RecordStateLog.read(at: url, id: log, revision: 2, into: &reread) == next)
        #expect(reread.clocks == state.clocks && reread.covers == state.covers && reread.removed == state.removed)
    }

    /// The per-record maps are keyed by global ID in memory and by its text in the metadata, as earlier versions
    /// wrote them: states of either read in both. A key that is not a global ID names no record and is left out.
    @Test func theStateKeepsGlobalIDsAsTextInTheMetadata() throws {
        let peer = UUID(), id = UUID(), gone = UUID(), winner = UUID()
        let stamp = HybridLogicalClock(wall: 5, counter: 1, peer: peer)
        var state = SyncState(peer: peer, location: "here", storeUUID: UUID())
        state.clocks[id] = ["title": stamp]
        state.tombstones[gone] = stamp
        state.redirects[gone] = winner
        state.orderHints[id] = ["chapters": "[]"]
        guard case .string(let text) = try state.encoded() else {
            Issue.record("the state is not written as text")
            return
        }
        var json = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect((json["clocks"] as? [String: Any])?.keys.sorted() == [id.uuidString])
        #expect((json["tombstones"] as? [String: Any])?.keys.sorted() == [gone.uuidString])
        #expect(json["redirects"] as? [String: String] == [gone.uuidString: winner.uuidString])
        #expect((json["orderHints"] as? [String: Any])?.keys.sorted() == [id.uuidString])
        var clocks = try #require(json["clocks"] as? [String: Any])
        clocks["not-an-id"] = clocks[id.uuidString]
        json["clocks"] = clocks
        var redirects = try #require(json["redirects"] as? [String: String])
        redirects["not-an-id"] = winner.uuidString
        json["redirects"] = redirects
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        let read = try decoder.decode(SyncState.self, from: JSONSerialization.data(withJSONObject: json))
        #expect(read == state)
        #expect(read.resolved(gone) == winner && read.stamp(id, "title") == stamp)
    }

    @Test func aLostLogIsRebuiltFromTheRemoteWithoutDuplicates() async throws {
        let dir = try TemporaryDirectory("sync-log-lost")
        let remote = InMemoryRemote()
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote)
        let b = try Replica(dir.path("b.lmdb"), type: "lmdb", remote: remote)
        for i in 0..<20 { try a.insert("Author", ["name": .string("a \(i)")]) }
        let bookID = try b.insert("Book", ["title": "b's"])
        try await a.sync()
        try await b.sync()
        try await a.sync()
        try FileManager.default.removeItem(at: RecordStateLog.url(beside: dir.path("b.lmdb")))
        // Another process opens b: its state names a log that is gone.
        try b.coordinator.removeStore(b.loaded)
        let b2 = try Replica(dir.path("b.lmdb"), type: "lmdb", remote: remote)
        try b2.update(bookID) { o, _ in try o.setValue(.integer64(300), forKey: "pages") }
        try await b2.sync()
        try a.update(bookID) { o, _ in try o.setValue(.string("renamed by a"), forKey: "title") }
        try await a.sync()
        try await b2.sync()
        try await a.sync()
        #expect(try b2.count("Author") == 20 && b2.count("Book") == 1 && a.count("Book") == 1)
        #expect(try a.value(bookID, "pages") == .integer64(300) && b2.value(bookID, "title") == .string("renamed by a"))
        #expect(try a.differences(from: b2).isIdentical)
        #expect(FileManager.default.fileExists(atPath: RecordStateLog.url(beside: dir.path("b.lmdb")).path))
    }

    /// A snapshot's body as the encoder of earlier versions wrote it (kept here as the reference): the records with
    /// clocks, then those with only a tombstone, then only order hints, in the maps' order; then the memberships.
    private static func previousSnapshotBody(_ state: SyncState) -> [UInt8] {
        func escape(_ s: String) -> [UInt8] {
            s.utf8.flatMap { b -> [UInt8] in
                switch b {
                case UInt8(ascii: "\\"): [b, b]
                case 9: [UInt8(ascii: "\\"), UInt8(ascii: "t")]
                case 10: [UInt8(ascii: "\\"), UInt8(ascii: "n")]
                default: [b]
                }
            }
        }
        var table = StampTable()
        var out: [UInt8] = []
        var ids = Array(state.clocks.keys)
        ids += state.tombstones.keys.filter { state.clocks[$0] == nil }
        ids += state.orderHints.keys.filter { state.clocks[$0] == nil && state.tombstones[$0] == nil }
        for id in ids {
            out += Array("G\t\(id.uuidString)\n".utf8)
            if let t = state.tombstones[id] { out += Array("T\t\(table.number(t))\n".utf8) }
            for (key, stamp) in state.clocks[id] ?? [:] { out += Array("C\t".utf8) + escape(key) + Array("\t\(table.number(stamp))\n".utf8) }
            for (key, hint) in state.orderHints[id] ?? [:] { out += Array("O\t".utf8) + escape(key) + [9] + escape(hint) + [10] }
        }
        var members = Array(state.removed)
        if let covers = state.covers { members += covers.keys.filter { !state.removed.contains($0) } }
        for member in members {
            out += Array("M\t".utf8) + escape(member) + [9]
            if let cover = state.covers?[member] { out += Array("\(table.number(cover))".utf8) }
            out += Array("\t\(state.removed.contains(member) ? 1 : 0)\n".utf8)
        }
        return table.stamps.flatMap { Array("K\t\($0.description)\n".utf8) } + out
    }

    /// Records sharing one clock map (as a pull's new records do), records whose maps are equal but made apart, and
    /// records with maps of their own, interleaved: the snapshot is the previous encoder's bytes and reads back to
    /// the same state.
    @Test func recordsSharingAClockMapAreWrittenAsTheirOwnMapsWould() throws {
        let dir = try TemporaryDirectory("sync-log-shared")
        let url = dir.path("x.storesync")
        let peer = UUID()
        var state = SyncState(peer: peer, location: "here", storeUUID: UUID())
        func stamp(_ wall: Int64) -> HybridLogicalClock { HybridLogicalClock(wall: wall, counter: 0, peer: peer) }
        let shared = ["name": stamp(5), "count": stamp(5), "score\t": stamp(5)]
        for n in 0..<300 {
            let id = UUID()
            switch n % 4 {
            case 0, 1: state.clocks[id] = shared
            case 2:
                var apart: [String: HybridLogicalClock] = [:]
                for key in ["score\t", "count", "name"] { apart[key] = stamp(5) }
                state.clocks[id] = apart
            default: state.clocks[id] = ["name": stamp(Int64(n)), "count": stamp(5)]
            }
            if n % 9 == 0 { state.tombstones[id] = stamp(99) }
        }
        let read = try Self.snapshotReadBack(state, at: url)
        #expect(read.clocks == state.clocks && read.tombstones == state.tombstones)
    }

    /// Writes `state` as a snapshot at `url`, checks that its body is the previous encoder's bytes, and reads it back.
    static func snapshotReadBack(_ state: SyncState, at url: URL) throws -> SyncState {
        let log = UUID()
        _ = try RecordStateLog.writeSnapshot(at: url, id: log, revision: 1, state: state)
        let expected = previousSnapshotBody(state)
        let written = try [UInt8](Data(contentsOf: url))
        #expect(written.count > expected.count && Array(written.suffix(expected.count)) == expected)
        var read = SyncState(peer: state.peer, location: "here", storeUUID: state.storeUUID)
        #expect(RecordStateLog.read(at: url, id: log, revision: 1, into: &read) != nil)
        return read
    }

    /// Snapshots and deltas are written byte for byte as earlier versions wrote them, odd keys and texts included,
    /// so logs of either version read in the other; and they read back to the same state.
    @Test func framesAreThePreviousEncodersBytes() throws {
        let dir = try TemporaryDirectory("sync-log-bytes")
        let url = dir.path("x.storesync")
        let peer = UUID()
        var state = SyncState(peer: peer, location: "here", storeUUID: UUID())
        func stamp(_ wall: Int64, _ counter: Int32 = 0) -> HybridLogicalClock { HybridLogicalClock(wall: wall, counter: counter, peer: peer) }
        let odd = ["", "title", "tab\there", "new\nline", "back\\slash", "é ✓ 🙂", "\"quoted\"", "\\t\\n"]
        var ids: [UUID] = []
        for n in 0..<40 {
            let id = UUID()
            ids.append(id)
            switch n % 5 {
            case 0: state.clocks[id] = Dictionary(uniqueKeysWithValues: odd.enumerated().map { ($1, stamp(Int64($0 + n), Int32(n))) })
            case 1: state.clocks[id] = ["pages": stamp(.max / 2, .max)]
            case 2: state.tombstones[id] = stamp(Int64(n))
            case 3:
                state.clocks[id] = ["title": stamp(1)]
                state.orderHints[id] = [odd[n % odd.count]: "[\"\(ids[0].uuidString)\"]\t\n\\"]
            default: state.orderHints[id] = ["related": "[]"]
            }
            if n % 7 == 0 { state.tombstones[id] = stamp(99) }
        }
        // A record whose lines outgrow the room the writer made for the frame at the start.
        state.clocks[UUID()] = [String(repeating: "long\t\\", count: 4_000): stamp(7), "after": stamp(8)]
        for (n, key) in odd.enumerated() {
            let member = SyncState.member(ids[n], "tags→\(key)")
            if n % 2 == 0 { state.removed.insert(member) }
            if n % 3 != 1 { state.covers = (state.covers ?? [:]).merging([member: stamp(Int64(n))]) { $1 } }
        }
        let read = try Self.snapshotReadBack(state, at: url)
        #expect(read.clocks == state.clocks && read.tombstones == state.tombstones && read.orderHints == state.orderHints)
        #expect(read.removed == state.removed && read.covers == state.covers)
    }
}
