import Foundation

/// Where the records that custom steps insert (``RecordMigration/insert(_:values:linkedBy:)``) get their primary
/// keys and global IDs, so that every pass of an upgrade — the check before anything is written, then each pass the
/// writer makes, page by page — gives each inserted record the same key without remembering any.
///
/// The keys of one destination hierarchy are laid out in blocks above every key the hierarchy had: one block per
/// source entity whose records insert into it, in schema order, with a slot of `stride` keys per source key, where
/// `stride` is the most records one record of that entity inserted. The record with source key `k` gives its
/// `n`-th insertion into the hierarchy the key `first + (k - lowestKey) × stride + n`. Keys may leave gaps; they
/// are in the order the source records are read, so a page of inserted records is a page of source records.
struct MigrationInsertions: Sendable {
    /// The keys one source entity's records give to what they insert into one hierarchy.
    struct Block: Sendable {
        let sourceEntity: String
        /// The key before the block's first.
        let base: Int64
        /// The lowest and highest key of the source entity's records.
        let lowestKey: Int64
        let highestKey: Int64
        /// Keys per source record.
        let stride: Int64
        /// The block's last key.
        var last: Int64 { base + (highestKey - lowestKey + 1) * stride }

        /// The key of a record's `n`-th insertion (0-based) into the hierarchy.
        func key(sourceKey: Int64, ordinal: Int) -> Int64 { base + (sourceKey - lowestKey) * stride + Int64(ordinal) + 1 }

        /// The source key whose slot holds `key`, for a key inside the block.
        func sourceKey(holding key: Int64) -> Int64 { lowestKey + (key - base - 1) / stride }
    }

    /// Blocks by destination root entity, in key order.
    let blocksByRoot: [String: [Block]]

    /// Whether any record inserts anything.
    var isEmpty: Bool { blocksByRoot.isEmpty }

    /// What the check before writing counts: per source entity, its key range and, per destination root, the most
    /// records one of its records inserted there; per destination root, the highest key its records have.
    struct Counts: Sendable {
        var keyRange: [String: ClosedRange<Int64>] = [:]
        var most: [String: [String: Int]] = [:]
        var highestKey: [String: Int64] = [:]

        mutating func note(source: Record, destinationRoot: String, primaryKey: Int64, inserted: [InsertedRecord]) {
            let k = source.primaryKey
            keyRange[source.entity] = keyRange[source.entity].map { min($0.lowerBound, k)...max($0.upperBound, k) } ?? k...k
            highestKey[destinationRoot] = max(highestKey[destinationRoot] ?? 0, primaryKey)
            guard !inserted.isEmpty else { return }
            var perRoot: [String: Int] = [:]
            for r in inserted { perRoot[r.entity.rootName, default: 0] += 1 }
            for (root, n) in perRoot { most[source.entity, default: [:]][root] = max(most[source.entity]?[root] ?? 0, n) }
        }
    }

    /// Lays the blocks out from what was counted: source entities in `sourceOrder`, each hierarchy's blocks above
    /// `floor` (the highest key it had, or its key allocator's last key, whichever is higher).
    init(counts: Counts, sourceOrder: [String], floors: [String: Int64]) throws(StoreError) {
        var blocks: [String: [Block]] = [:]
        var next: [String: Int64] = [:]
        for source in sourceOrder {
            guard let perRoot = counts.most[source], let range = counts.keyRange[source] else { continue }
            for (root, stride) in perRoot.sorted(by: { $0.key < $1.key }) where stride > 0 {
                let base = next[root] ?? max(counts.highestKey[root] ?? 0, floors[root] ?? 0)
                let (span, o1) = (range.upperBound - range.lowerBound + 1).multipliedReportingOverflow(by: Int64(stride))
                let (end, o2) = base.addingReportingOverflow(span)
                guard !o1, !o2 else {
                    throw StoreError.invalidArgument("the records the custom step inserts into \(root) need more primary keys than there are")
                }
                blocks[root, default: []].append(Block(sourceEntity: source, base: base, lowestKey: range.lowerBound,
                                                       highestKey: range.upperBound, stride: Int64(stride)))
                next[root] = end
            }
        }
        self.blocksByRoot = blocks
    }

    /// The records `inserted` become when the record `creator` (destination key and global ID, source key
    /// `sourceKey`, of source entity `sourceEntity`) inserted them: keys from their block, global IDs derived from the
    /// creator's, each linked back to the creator.
    func records(_ inserted: [InsertedRecord], sourceEntity: String, sourceKey: Int64, creator: Record) throws -> [Record] {
        var ordinals: [String: Int] = [:]
        var out: [Record] = []
        out.reserveCapacity(inserted.count)
        for (position, i) in inserted.enumerated() {
            let root = i.entity.rootName
            let ordinal = ordinals[root, default: 0]
            ordinals[root] = ordinal + 1
            guard let block = blocksByRoot[root]?.first(where: { $0.sourceEntity == sourceEntity }), ordinal < block.stride else {
                throw StoreError.invalidArgument(
                    "the custom step inserted more records for \(creator.key) than when it was checked: it must depend on the record alone")
            }
            var relationships = i.entity.relationships.map { $0.isToMany ? RelationshipValue.toMany([]) : .toOne(nil) }
            relationships[i.backLink] = .toOne(creator.primaryKey)
            out.append(Record(entity: i.entity.name, primaryKey: block.key(sourceKey: sourceKey, ordinal: ordinal),
                              globalID: Self.globalID(creator: creator.globalID, position: position, entity: i.entity.name),
                              attributes: i.attributes, relationships: relationships))
        }
        return out
    }

    /// A name-based UUID (version 5 layout) of the creator's global ID, the insertion's position and its entity.
    static func globalID(creator: UUID, position: Int, entity: String) -> UUID {
        var message = withUnsafeBytes(of: creator.uuid) { Array($0) }
        message += Array("inserted:\(position):\(entity)".utf8)
        var b = Array(StoreDigest.sha1(message).prefix(16))
        b[6] = (b[6] & 0x0F) | 0x50
        b[8] = (b[8] & 0x3F) | 0x80
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }
}
