import Foundation

/// One immutable change file: the changes one peer pushed in one go, each value with the clock stamp of the change
/// that set it. Records are named by global ID only; primary keys never leave a store.
struct ChangeBatch: Sendable, Hashable, Codable {
    /// The layout this version writes (format 2, lines with tables of names and stamps); it reads format 1 (JSON)
    /// too. Files of another layout are ignored, never misread.
    static let currentFormat = 2

    var format: Int
    /// The writing peer.
    var peer: UUID
    /// The file's position among its peer's files, from 1.
    var sequence: Int64
    var changes: [RecordChange]

    init(peer: UUID, sequence: Int64, changes: [RecordChange]) {
        self.format = Self.currentFormat
        self.peer = peer
        self.sequence = sequence
        self.changes = changes
    }

    var name: ChangeFileName { ChangeFileName(peer: peer, sequence: sequence) }
}

/// What one record's change says: a tombstone, stamped values of attributes and single-valued relationships, and
/// stamped memberships of unordered to-many relationships.
struct RecordChange: Sendable, Hashable, Codable {
    var entity: String
    var id: UUID
    /// Set when the record was deleted: the stamp of the deletion. A deleted global ID never comes back.
    var deleted: HybridLogicalClock?
    /// Attribute name → its value's JSON text; to-one relationship name → the target's global ID (empty for none);
    /// ordered to-many name → a JSON array of global IDs.
    var values: [String: StampedValue]
    /// Unordered to-many relationship name → membership changes.
    var members: [String: [MemberChange]]

    init(entity: String, id: UUID, deleted: HybridLogicalClock? = nil, values: [String: StampedValue] = [:],
         members: [String: [MemberChange]] = [:]) {
        self.entity = entity
        self.id = id
        self.deleted = deleted
        self.values = values
        self.members = members
    }
}

/// A value with the stamp of the change that set it.
struct StampedValue: Sendable, Hashable, Codable {
    var clock: HybridLogicalClock
    var text: String
}

/// A target added to (`present`) or removed from an unordered to-many relationship, stamped.
///
/// Memberships are add-wins sets: a removal carries the stamp of the add it saw (``observed``) and removes only
/// that add and earlier ones, so an add it did not see — made concurrently on another peer — survives it.
struct MemberChange: Sendable, Hashable, Codable {
    var target: UUID
    var present: Bool
    var clock: HybridLogicalClock
    /// Of a removal: the latest add of the membership its peer had seen (`nil` in files of earlier versions,
    /// whose removals cover every add stamped before them).
    var observed: HybridLogicalClock?

    init(target: UUID, present: Bool, clock: HybridLogicalClock, observed: HybridLogicalClock? = nil) {
        self.target = target
        self.present = present
        self.clock = clock
        self.observed = observed
    }

    /// The adds a removal takes away: those stamped at or before this.
    var cover: HybridLogicalClock { observed ?? clock }
}
