import Foundation
import StoreAPI

/// A change file as a pull reads it: its records, values and memberships in flat lists that name keys, entities and
/// stamps by their numbers in the file's tables, and texts by where they are in the file's bytes.
///
/// Most records of a pull are new to the store and go in as rows (``SyncSession/FreshRecords``): their values are
/// read from here slot by slot, and no map of stamped values is made, or freed, per record. A record that goes the
/// general way is made into the ``RecordChange`` that ``ChangeBatch/decode(_:)`` reads of it (``change(_:)``).
struct PulledChangeFile: Sendable {
    /// The writing peer.
    let peer: UUID
    /// The file's position among its peer's files.
    let sequence: Int64
    /// The bytes value texts are read from: the file's own (format 2), or the texts of a file read another way.
    let bytes: [UInt8]
    /// The names of entities, attributes and relationships. Numbers in ``records``, ``values`` and ``members`` are
    /// of the first entry of each name: a name listed twice is one key.
    let names: [String]
    /// The clock stamps.
    let stamps: [HybridLogicalClock]
    /// The records' changes, in file order.
    let records: [Record]
    /// Every record's values, record after record.
    let values: [Value]
    /// Every record's membership changes, record after record.
    let members: [Member]

    /// One record's change.
    struct Record: Sendable {
        let id: UUID
        /// Its entity's name number.
        let entity: Int
        /// The stamp number of its deletion.
        var deleted: Int?
        /// Its values' positions in ``PulledChangeFile/values``.
        var values: Range<Int>
        /// Its memberships' positions in ``PulledChangeFile/members``.
        var members: Range<Int>
        /// Whether each of its values names another key and every stamp is after zero: then its values are what its
        /// ``RecordChange``'s map holds, one for one. A key named twice keeps its last value in the map only.
        var isPlain: Bool
    }

    /// One stamped value.
    struct Value: Sendable {
        /// The key's name number.
        let key: Int
        /// The stamp number.
        let stamp: Int
        /// Where its text is in ``PulledChangeFile/bytes``.
        let text: Range<Int>
        /// Whether the text has escapes to undo (checked when the file was read).
        let escaped: Bool
    }

    /// One membership change.
    struct Member: Sendable {
        /// The relationship's name number.
        let relationship: Int
        let target: UUID
        let present: Bool
        /// The stamp number.
        let stamp: Int
        /// The observed add's stamp number.
        let observed: Int?
    }

    /// The file's name on the remote.
    var name: ChangeFileName { ChangeFileName(peer: peer, sequence: sequence) }

    /// Reads a fetched file of format 1 or 2; `nil` exactly when ``ChangeBatch/decode(_:)`` reads nothing of it.
    static func read(_ data: Data) -> PulledChangeFile? {
        if data.starts(with: ChangeBatch.linesMagic.utf8) { return decodeLines([UInt8](data)) }
        return ChangeBatch.decodeJSON(data).map(PulledChangeFile.init)
    }

    /// The changes of `batch` (a format 1 file, read as JSON): its texts are laid end to end in ``bytes``, without
    /// escapes.
    init(_ batch: ChangeBatch) {
        var names: [String] = []
        var numbers: [String: Int] = [:]
        func number(_ name: String) -> Int {
            if let n = numbers[name] { return n }
            numbers[name] = names.count
            names.append(name)
            return names.count - 1
        }
        var stamps = StampTable()
        var bytes: [UInt8] = []
        var records: [Record] = []
        var values: [Value] = []
        var members: [Member] = []
        records.reserveCapacity(batch.changes.count)
        for c in batch.changes {
            let firstValue = values.count, firstMember = members.count
            var isPlain = true
            for (key, v) in c.values {
                let start = bytes.count
                bytes += v.text.utf8
                if !(v.clock > .zero) { isPlain = false }
                values.append(Value(key: number(key), stamp: stamps.number(v.clock), text: start..<bytes.count, escaped: false))
            }
            for (rel, list) in c.members {
                let r = number(rel)
                for m in list {
                    members.append(Member(relationship: r, target: m.target, present: m.present, stamp: stamps.number(m.clock),
                                          observed: m.observed.map { stamps.number($0) }))
                }
            }
            records.append(Record(id: c.id, entity: number(c.entity), deleted: c.deleted.map { stamps.number($0) },
                                  values: firstValue..<values.count, members: firstMember..<members.count, isPlain: isPlain))
        }
        self.init(peer: batch.peer, sequence: batch.sequence, bytes: bytes, names: names, stamps: stamps.stamps,
                  records: records, values: values, members: members)
    }

    init(peer: UUID, sequence: Int64, bytes: [UInt8], names: [String], stamps: [HybridLogicalClock], records: [Record],
         values: [Value], members: [Member]) {
        self.peer = peer
        self.sequence = sequence
        self.bytes = bytes
        self.names = names
        self.stamps = stamps
        self.records = records
        self.values = values
        self.members = members
    }

    /// The entity name of record `n`.
    func entity(_ n: Int) -> String { names[records[n].entity] }

    /// The text of a value.
    func text(_ v: Value) -> String {
        bytes.withUnsafeBufferPointer { all in
            let slice = UnsafeBufferPointer(rebasing: all[v.text])
            // Escapes were checked when the file was read: the empty text is never the answer.
            return v.escaped ? LineFields.unescaped(slice) ?? "" : String(decoding: slice, as: UTF8.self)
        }
    }

    /// The attribute value of `v`'s text as ``SyncedSchema/value(of:type:)`` reads it; a text without escapes is read
    /// from the file's bytes, and made into a string only for the forms not read directly.
    func attributeValue(_ v: Value, type: AttributeType) -> StoreValue? {
        guard !v.escaped else { return SyncedSchema.value(of: text(v), type: type) }
        return bytes.withUnsafeBufferPointer { SyncedSchema.value(ofBytes: UnsafeBufferPointer(rebasing: $0[v.text]), type: type) }
    }

    /// Record `n`'s change, as ``ChangeBatch/decode(_:)`` reads it.
    func change(_ n: Int) -> RecordChange {
        let r = records[n]
        var c = RecordChange(entity: names[r.entity], id: r.id, deleted: r.deleted.map { stamps[$0] },
                             values: [String: StampedValue](minimumCapacity: r.values.count))
        for v in values[r.values] { c.values[names[v.key]] = StampedValue(clock: stamps[v.stamp], text: text(v)) }
        for m in members[r.members] {
            c.members[names[m.relationship], default: []].append(
                MemberChange(target: m.target, present: m.present, clock: stamps[m.stamp], observed: m.observed.map { stamps[$0] }))
        }
        return c
    }

    /// Every record's change.
    var batch: ChangeBatch { ChangeBatch(peer: peer, sequence: sequence, changes: records.indices.map(change)) }
}
