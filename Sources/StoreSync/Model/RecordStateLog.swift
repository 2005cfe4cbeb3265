import Foundation
@_spi(BackendKit) import StoreAPI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The per-record part of a file store's sync state (clocks, tombstones, order hints, memberships), kept in a log
/// file beside the store (`<store>.storesync`) so that a sync writes what it changed instead of the whole state.
///
/// The log is a snapshot frame followed by delta frames, each numbered with the revision it brings the state to and
/// protected by its length and a checksum. The store's metadata names the log (``SyncState/recordLog``) and the
/// revision the rest of its state goes with (``SyncState/revision``): a frame is appended *before* the metadata
/// names its revision, and a reader applies only the frames up to the revision the metadata names. A crash between
/// the two steps, or a store restored from a backup beside a newer log, therefore reads exactly the state its
/// metadata was written with; the frames after it are cut off before the next append. A log that cannot give that
/// revision (missing, another log, compacted past it, damaged) is not used, and the engine rebuilds the state from
/// the remote (see ``SyncEngine``).
struct RecordStateLog {
    /// The log file.
    let url: URL

    /// Where the log of the store at `storeURL` lives.
    static func url(beside storeURL: URL) -> URL {
        StoreCompanionFiles.syncStateLog(beside: storeURL)
    }

    /// The first line's start: the layout version and a tab. Version 2 frames write each clock stamp once, in a
    /// table at the frame's top, and name it by number; version 1 frames (logs of earlier versions, still read)
    /// repeat the whole stamp on every line.
    private static func magic(_ version: Int) -> String { "storesync-records\t\(version)\t" }

    /// The layout new logs are written in.
    static let currentVersion = 2

    /// What reading the log found, for appending to it later.
    struct Position: Sendable, Hashable {
        /// The log's identity, as the metadata names it.
        var id: UUID
        /// The revision of the last frame applied.
        var revision: Int64
        /// The bytes up to the end of that frame: what follows is cut off before the next append.
        var length: Int
        /// The bytes of the snapshot frame: the log is compacted when its deltas outgrow it.
        var snapshotBytes: Int
        /// The log's layout version: frames are appended only to a log of the current one.
        var version = RecordStateLog.currentVersion
    }

    /// How the next write of a state goes to its log.
    enum NextWrite: Equatable {
        /// A snapshot of every record's state: of the log `id`, or of a new log when `nil`.
        case snapshot(UUID?)
        /// A frame of the changed records' state, appended to the log at `position`.
        case append(Position)
        /// Nothing: no record's state changed.
        case nothing
    }

    /// How writing `state` goes to the log that stands at `position` (`nil`: none read or written yet); `everyRecord`:
    /// every record's state is to be written; `touched`: some record's state changed.
    static func nextWrite(position: Position?, state: SyncState, everyRecord: Bool, touched: Bool) -> NextWrite {
        guard let position, position.id == state.recordLog, position.revision == state.revision else { return .snapshot(nil) }
        // The touched sets do not list every change: only a snapshot is sure to hold them all.
        if everyRecord { return .snapshot(position.id) }
        return touched ? .append(position) : .nothing
    }

    /// Reads the log into `state`'s per-record maps, applying frames up to `revision`. Returns `nil`, leaving `state`
    /// as it was, when there is no log, it is another one than `id`, or it cannot give `revision`. Never writes.
    static func read(at url: URL, id: UUID, revision: Int64, into state: inout SyncState) -> Position? {
        guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
        let bytes = [UInt8](data)
        guard let headerEnd = bytes.firstIndex(of: 0x0A) else { return nil }
        let header = String(decoding: bytes[..<headerEnd], as: UTF8.self)
        guard let version = [currentVersion, 1].first(where: { header == magic($0) + id.uuidString }) else { return nil }
        var maps = RecordMaps()
        var offset = headerEnd + 1
        var applied: Int64?
        var length = offset
        var snapshotBytes = 0
        while offset < bytes.count {
            guard let lineEnd = bytes[offset...].firstIndex(of: 0x0A) else { break }
            let fields = String(decoding: bytes[offset..<lineEnd], as: UTF8.self).split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count == 5, fields[0] == "F", let rev = Int64(fields[1]), let size = Int(fields[3]), size >= 0,
                  lineEnd + 1 + size <= bytes.count
            else { break }
            let body = bytes[(lineEnd + 1)..<(lineEnd + 1 + size)]
            guard String(checksum(body), radix: 16) == fields[4] else { break }
            if rev > revision { break }
            let isSnapshot = fields[2] == "S"
            // The first frame must be the snapshot; a later one is a delta on what came before.
            if applied == nil, !isSnapshot { return nil }
            if isSnapshot {
                maps = RecordMaps()
                snapshotBytes = size
            }
            guard maps.apply(body, version: version) else { return nil }
            applied = rev
            offset = lineEnd + 1 + size
            length = offset
        }
        guard applied == revision else { return nil }
        maps.store(into: &state)
        return Position(id: id, revision: revision, length: length, snapshotBytes: snapshotBytes, version: version)
    }

    /// Writes a new log holding every record's state at `revision`, atomically (a staging file renamed over it).
    static func writeSnapshot(at url: URL, id: UUID, revision: Int64, state: SyncState) throws -> Position {
        try commit(stageSnapshot(for: url, id: id, revision: revision, state: state), to: url)
    }

    /// A new log written in full to a staging file beside the log, fsynced, and not yet in the log's place.
    struct StagedSnapshot: Sendable {
        /// The staging file.
        let staging: URL
        /// Where the log stands once the staging file is in its place.
        let position: Position
    }

    /// Writes a new log holding every record's state at `revision` to a staging file beside `url`, and fsyncs it;
    /// ``commit(_:to:)`` puts it in the log's place. The log itself is untouched. A failed write removes the
    /// staging file.
    static func stageSnapshot(for url: URL, id: UUID, revision: Int64, state: SyncState) throws -> StagedSnapshot {
        try AtomicFile.checkDirectory(of: url)
        let body = RecordMaps.encodeAll(state)
        let head = Array((magic(currentVersion) + id.uuidString + "\n").utf8) + frameHeader(revision: revision, kind: "S", body: body)
        let staging = AtomicFile.stagingURL(for: url)
        do {
            // The file's parts are written one after the other, not copied into one buffer first.
            try writeAll([head, body], to: staging, create: true, truncateTo: nil, sync: true)
        } catch {
            try? FileManager.default.removeItem(at: staging)
            throw error
        }
        return StagedSnapshot(staging: staging,
                              position: Position(id: id, revision: revision, length: head.count + body.count, snapshotBytes: body.count))
    }

    /// Renames a staged snapshot over the log at `url` and fsyncs the directory: the log is the old one or the
    /// whole new one, whatever happens. A failed rename removes the staging file.
    static func commit(_ staged: StagedSnapshot, to url: URL) throws -> Position {
        do {
            try AtomicFile.rename(staged.staging, to: url)
        } catch {
            try? FileManager.default.removeItem(at: staged.staging)
            throw error
        }
        try AtomicFile.fsyncDirectory(of: url)
        return staged.position
    }

    /// Appends a frame with the state of the records `ids` and the memberships `members` at `revision`, after
    /// cutting off frames beyond `position`; fsynced before it returns. Compacts into a new snapshot instead when
    /// the deltas have outgrown it.
    static func append(at url: URL, position: Position, revision: Int64, ids: Set<UUID>, members: Set<String>,
                       state: SyncState) throws -> Position {
        let deltaBytes = position.length - position.snapshotBytes
        let limit = max(position.snapshotBytes * 2, 1 << 20)
        // A log of an earlier layout is written anew in the current one; so is a log whose deltas would outgrow
        // the snapshot, known before the frame is made when its records' lines alone would (a first push writes
        // every record: encoding them twice was a measurable part of it).
        if position.version != currentVersion || deltaBytes + ids.count * RecordMaps.recordLineBytes > limit {
            return try writeSnapshot(at: url, id: position.id, revision: revision, state: state)
        }
        let body = RecordMaps.encode(ids: ids, members: members, of: state)
        if deltaBytes + body.count > limit {
            return try writeSnapshot(at: url, id: position.id, revision: revision, state: state)
        }
        let header = frameHeader(revision: revision, kind: "D", body: body)
        try writeAll([header, body], to: url, create: false, truncateTo: position.length, sync: true)
        return Position(id: position.id, revision: revision, length: position.length + header.count + body.count,
                        snapshotBytes: position.snapshotBytes)
    }

    private static func frameHeader(revision: Int64, kind: String, body: [UInt8]) -> [UInt8] {
        Array("F\t\(revision)\t\(kind)\t\(body.count)\t\(String(checksum(body[...]), radix: 16))\n".utf8)
    }

    /// FNV-1a over the frame body: it finds a torn or damaged frame, which is all it is for.
    private static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        // Through a buffer pointer: a snapshot frame has bytes for every synced value, each checked against the
        // slice's bounds otherwise.
        bytes.withUnsafeBufferPointer { buffer in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for b in buffer {
                hash ^= UInt64(b)
                hash = hash &* 0x0000_0100_0000_01b3
            }
            return hash
        }
    }

    /// Writes `parts` one after the other at the end of the file (after cutting it to `truncateTo`), and fsyncs it
    /// when `sync` (an atomic write fsyncs its staging file itself). A failed write (a full disk, a file-size limit)
    /// is an error naming the file; what was written of the frame is cut off by the next reader, which stops at a
    /// frame whose checksum does not match.
    private static func writeAll(_ parts: [[UInt8]], to url: URL, create: Bool, truncateTo: Int?, sync: Bool) throws {
        let fd = open(url.path, O_WRONLY | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0), 0o644)
        guard fd >= 0 else { throw StoreError.io(url, operation: "opening the sync state log", reason: errorText()) }
        defer { close(fd) }
        var at = off_t(0)
        if let truncateTo {
            guard ftruncate(fd, off_t(truncateTo)) == 0 else {
                throw StoreError.io(url, operation: "cutting off unused sync state frames", reason: errorText())
            }
            at = off_t(truncateTo)
        }
        for bytes in parts {
            var done = 0
            while done < bytes.count {
                let n = bytes.withUnsafeBytes { raw in pwrite(fd, raw.baseAddress.map { $0 + done }, bytes.count - done, at + off_t(done)) }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { throw StoreError.io(url, operation: "writing the sync state log", reason: errorText()) }
                done += n
            }
            at += off_t(bytes.count)
        }
        guard !sync || fsync(fd) == 0 else { throw StoreError.io(url, operation: "syncing the sync state log", reason: errorText()) }
    }

    private static func errorText() -> String { String(cString: strerror(errno)) }
}

/// The per-record maps of a ``SyncState`` as the log's frames carry them.
///
/// A frame body is lines of tab-separated fields (names and texts escaped): `K stamp` lines first, the frame's stamp
/// table; then `G id` starts a record's whole state (tombstone `T stamp`, clocks `C key stamp`, order hints
/// `O key text`), replacing what an earlier frame said of it; `M member cover removed` is one membership's state.
/// A stamp field is the stamp's number in the table (in logs of version 1, which have no table, the stamp itself).
private struct RecordMaps {
    var clocks: [UUID: [String: HybridLogicalClock]] = [:]
    var tombstones: [UUID: HybridLogicalClock] = [:]
    var orderHints: [UUID: [String: String]] = [:]
    var removed: Set<String> = []
    var covers: [String: HybridLogicalClock] = [:]

    func store(into state: inout SyncState) {
        state.clocks = clocks
        state.tombstones = tombstones
        state.orderHints = orderHints
        state.removed = removed
        state.covers = covers.isEmpty ? nil : covers
    }

    /// Applies one frame body of a log of `version`; `false` when it does not read.
    mutating func apply(_ body: ArraySlice<UInt8>, version: Int) -> Bool {
        var current: UUID?
        // A record whose ID is not a global ID names no record: its lines are read and left out.
        var skipping = false
        var stamps: [HybridLogicalClock] = []
        // Version 2: a stamp field is a number in the frame's table; version 1: the stamp itself.
        func stamp(_ field: String) -> HybridLogicalClock? {
            guard version >= 2 else { return HybridLogicalClock(text: field) }
            guard let n = Int(field), n >= 0, n < stamps.count else { return nil }
            return stamps[n]
        }
        var start = body.startIndex
        while start < body.endIndex {
            let end = body[start...].firstIndex(of: 0x0A) ?? body.endIndex
            let fields = String(decoding: body[start..<end], as: UTF8.self)
                .split(separator: "\t", omittingEmptySubsequences: false).map { Self.unescape($0) }
            start = end < body.endIndex ? end + 1 : end
            guard let kind = fields.first else { return false }
            switch (kind, fields.count) {
            case ("K", 2) where version >= 2:
                guard let stamp = HybridLogicalClock(text: fields[1]) else { return false }
                stamps.append(stamp)
            case ("G", 2):
                current = UUID(uuidString: fields[1])
                skipping = current == nil
                guard let id = current else { continue }
                clocks[id] = nil
                tombstones[id] = nil
                orderHints[id] = nil
            case ("T", 2):
                if skipping { continue }
                guard let id = current, let stamp = stamp(fields[1]) else { return false }
                tombstones[id] = stamp
            case ("C", 3):
                if skipping { continue }
                guard let id = current, let stamp = stamp(fields[2]) else { return false }
                clocks[id, default: [:]][fields[1]] = stamp
            case ("O", 3):
                if skipping { continue }
                guard let id = current else { return false }
                orderHints[id, default: [:]][fields[1]] = fields[2]
            case ("M", 4):
                let member = fields[1]
                if fields[2].isEmpty { covers[member] = nil } else {
                    guard let cover = stamp(fields[2]) else { return false }
                    covers[member] = cover
                }
                if fields[3] == "1" { removed.insert(member) } else { removed.remove(member) }
            default:
                return false
            }
        }
        return true
    }

    /// The fewest bytes a record's lines take in a frame: its `G` line with a global ID.
    static let recordLineBytes = "G\t\(UUID().uuidString)\n".utf8.count

    static func encodeAll(_ state: SyncState) -> [UInt8] {
        // Each record and membership once, straight from the maps, in their order (a frame's lines say the same in
        // any order): every record with clocks, then those with only a tombstone, then only order hints.
        var frame = Frame(capacity: state.clocks.count)
        let tombstones = !state.tombstones.isEmpty, hints = !state.orderHints.isEmpty
        for (id, clocks) in state.clocks {
            frame.record(id, tombstone: tombstones ? state.tombstones[id] : nil, clocks: clocks, hints: hints ? state.orderHints[id] : nil)
        }
        for (id, stamp) in state.tombstones where state.clocks[id] == nil {
            frame.record(id, tombstone: stamp, clocks: nil, hints: hints ? state.orderHints[id] : nil)
        }
        for (id, h) in state.orderHints where state.clocks[id] == nil && state.tombstones[id] == nil {
            frame.record(id, tombstone: nil, clocks: nil, hints: h)
        }
        for member in state.removed { frame.member(member, of: state) }
        if let covers = state.covers {
            for member in covers.keys where !state.removed.contains(member) { frame.member(member, of: state) }
        }
        return frame.bytes()
    }

    /// The records `ids` and memberships `members`, each named once.
    static func encode(ids: Set<UUID>, members: Set<String>, of state: SyncState) -> [UInt8] {
        var frame = Frame(capacity: ids.count)
        // Maps that are empty (most states have no tombstone or order hint) are not looked up per record.
        let tombstones = !state.tombstones.isEmpty, hints = !state.orderHints.isEmpty
        for id in ids {
            frame.record(id, tombstone: tombstones ? state.tombstones[id] : nil, clocks: state.clocks[id],
                         hints: hints ? state.orderHints[id] : nil)
        }
        for member in members { frame.member(member, of: state) }
        return frame.bytes()
    }

    /// A frame body being written: a first push or pull writes a line per synced value, each record's lines through
    /// a pointer into room made for them at once (``ByteWriter``). Each stamp is written once, in a table before the
    /// lines that name it by number: the values of one push share one stamp.
    private struct Frame: ~Copyable {
        private var out: ByteWriter
        private var table = StampTable()

        init(capacity records: Int) { out = ByteWriter(capacity: records * 80) }

        /// A record's lines: `G`, then its tombstone, clocks and order hints.
        mutating func record(_ id: UUID, tombstone: HybridLogicalClock?, clocks: [String: HybridLogicalClock]?,
                             hints: [String: String]?) {
            // Each line's room: its kind, tabs and newline, its escaped texts, and a stamp number.
            var room = ByteWriter.uuidRoom + 3
            if tombstone != nil { room += 3 + ByteWriter.decimalRoom }
            if let clocks {
                for key in clocks.keys { room += 4 + ByteWriter.escapedRoom(key) + ByteWriter.decimalRoom }
            }
            if let hints {
                for (key, hint) in hints { room += 4 + ByteWriter.escapedRoom(key) + ByteWriter.escapedRoom(hint) }
            }
            var p = out.room(room)
            func put(_ b: UInt8) {
                p[0] = b
                p += 1
            }
            put(UInt8(ascii: "G"))
            put(9)
            p = ByteWriter.uuid(id, at: p)
            put(10)
            if let tombstone {
                put(UInt8(ascii: "T"))
                put(9)
                p = ByteWriter.decimal(table.number(tombstone), at: p)
                put(10)
            }
            if let clocks {
                for (key, stamp) in clocks {
                    put(UInt8(ascii: "C"))
                    put(9)
                    p = ByteWriter.escape(key, at: p)
                    put(9)
                    p = ByteWriter.decimal(table.number(stamp), at: p)
                    put(10)
                }
            }
            if let hints {
                for (key, hint) in hints {
                    put(UInt8(ascii: "O"))
                    put(9)
                    p = ByteWriter.escape(key, at: p)
                    put(9)
                    p = ByteWriter.escape(hint, at: p)
                    put(10)
                }
            }
            out.commit(upTo: p)
        }

        /// A membership's line: its cover (if any) and whether it is removed.
        mutating func member(_ member: String, of state: SyncState) {
            var p = out.room(6 + ByteWriter.escapedRoom(member) + ByteWriter.decimalRoom)
            func put(_ b: UInt8) {
                p[0] = b
                p += 1
            }
            put(UInt8(ascii: "M"))
            put(9)
            p = ByteWriter.escape(member, at: p)
            put(9)
            if let cover = state.covers?[member] { p = ByteWriter.decimal(table.number(cover), at: p) }
            put(9)
            put(state.removed.contains(member) ? UInt8(ascii: "1") : UInt8(ascii: "0"))
            put(10)
            out.commit(upTo: p)
        }

        /// The body: the stamp table, then the lines.
        func bytes() -> [UInt8] {
            var frame: [UInt8] = []
            frame.reserveCapacity(table.stamps.count * 60 + out.count)
            for stamp in table.stamps {
                frame.append(UInt8(ascii: "K"))
                frame.append(9)
                TextBytes.append(stamp, to: &frame)
                frame.append(10)
            }
            frame.append(contentsOf: out.bytes)
            return frame
        }
    }

    private static func unescape(_ s: Substring) -> String {
        guard s.contains("\\") else { return String(s) }
        var out = ""
        var escaping = false
        for c in s {
            if escaping {
                out.append(c == "t" ? "\t" : c == "n" ? "\n" : c)
                escaping = false
            } else if c == "\\" {
                escaping = true
            } else {
                out.append(c)
            }
        }
        return out
    }
}
