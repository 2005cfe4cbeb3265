import Foundation

/// A ``MigratingStoreView`` over a store that scans pages (``PageScanningStore``): when the destination inserts
/// pages too, an upgrade moves bytes as a conversion does. A value the plan copies as it is (same type, no custom
/// step) is copied from the source page's bytes; an added attribute is appended as its default; a relationship keeps
/// its encoded links. Entities the byte copy cannot map (a converted value, a to-one made to-many, a custom step,
/// inserted records) are read as records, mapped, and encoded into the page.
final class MigratingPageView: PageScanningStore {
    let view: MigratingStoreView
    let pages: any PageScanningStore
    /// Per destination entity that maps byte for byte: its mapping.
    private let byteSteps: [String: MigrationRecordMapper.EntityStep]

    init(view: MigratingStoreView, pages: any PageScanningStore) {
        self.view = view
        self.pages = pages
        let mapper = view.mapper
        var steps: [String: MigrationRecordMapper.EntityStep] = [:]
        if mapper.customStep == nil && (mapper.insertions?.isEmpty ?? true) {
            for (name, step) in mapper.steps {
                let values = step.attributes.allSatisfy { $0.convertTo == nil }
                let links = zip(step.relationships, step.destination.relationships).allSatisfy { r, _ in
                    r.source.map { step.source.relationships[$0].isToMany == r.toMany } ?? true
                }
                if values && links { steps[name] = step }
            }
        }
        byteSteps = steps
    }

    func scanPage(entity: String, after primaryKey: Int64?, limit: Int) throws -> RecordPage {
        guard let step = byteSteps[entity] else {
            var page = RecordPage(entity: entity)
            for record in try view.scan(entity: entity, after: primaryKey, limit: limit) { page.append(record) }
            return page
        }
        let source = try pages.scanPage(entity: step.source.name, after: primaryKey, limit: limit)
        var page = RecordPage(entity: entity, capacity: source.count, bytesPerRecord: source.encodedByteCount / max(1, source.count) + 8)
        let attributeCount = step.source.attributes.count
        let relationshipCount = step.source.relationships.count
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(max(attributeCount, relationshipCount))
        for i in 0..<source.count {
            try source.withEncodedRecord(at: i) { values, _ in
                try Self.split(values, count: attributeCount, into: &ranges, values: true, entity: entity)
                page.beginRecord(primaryKey: source.primaryKeys[i], globalID: source.globalIDs[i])
                for a in step.attributes {
                    guard let s = a.source else {
                        page.append(a.fill)
                        continue
                    }
                    let bytes = UnsafeRawBufferPointer(rebasing: values[ranges[s]])
                    if bytes.first == RecordPage.Tag.null.rawValue && !a.fill.isNull { page.append(a.fill) } else { page.appendEncodedValue(bytes) }
                }
                page.endValues()
            }
        }
        for i in 0..<source.count {
            try source.withEncodedRecord(at: i) { _, links in
                try Self.split(links, count: relationshipCount, into: &ranges, values: false, entity: entity)
                for r in step.relationships {
                    if let s = r.source {
                        page.appendEncodedLinks(UnsafeRawBufferPointer(rebasing: links[ranges[s]]))
                    } else if r.toMany {
                        page.appendToMany([])
                    } else {
                        page.appendToOne(nil)
                    }
                }
                page.endLinks()
            }
        }
        return page
    }

    /// The byte range of each of the `count` encoded values (or relationship values) in `bytes`.
    private static func split(_ bytes: UnsafeRawBufferPointer, count: Int, into ranges: inout [Range<Int>], values: Bool,
                              entity: String) throws {
        ranges.removeAll(keepingCapacity: true)
        var reader = PageByteReader(bytes)
        for _ in 0..<count {
            let start = reader.offset
            let ok = values ? reader.skipValue() != nil : reader.skipRelationship()
            guard ok else { throw StoreError.io(nil, operation: "upgrading \(entity)", reason: "a page holds a malformed value") }
            ranges.append(start..<reader.offset)
        }
    }

    // The rest is the record view's.
    var url: URL? { view.url }
    var metadata: StoreMetadata { view.metadata }
    func fetch(_ request: FetchRequest) throws -> [Record] { try view.fetch(request) }
    func count(_ request: FetchRequest) throws -> Int { try view.count(request) }
    func records(withKeys keys: [Int64], root: String) throws -> [Record] { try view.records(withKeys: keys, root: root) }
    func scan(entity: String, after primaryKey: Int64?, limit: Int) throws -> [Record] { try view.scan(entity: entity, after: primaryKey, limit: limit) }
    func scanKeys(entity: String, after primaryKey: Int64?, limit: Int) throws -> [Int64] {
        try view.scanKeys(entity: entity, after: primaryKey, limit: limit)
    }
    func save(_ changes: StoreChanges) throws { try view.save(changes) }
    func allocatePrimaryKeys(root: String, count: Int) throws -> Int64 { try view.allocatePrimaryKeys(root: root, count: count) }
    func history(after token: Int64?) throws -> [HistoryTransaction] { try view.history(after: token) }
    func close() throws {}
}

extension PageByteReader {
    /// Skips one relationship value without reading its keys into an array; `false` when it is malformed.
    mutating func skipRelationship() -> Bool {
        switch byte() {
        case 0: return true
        case 1: return signed() != nil
        case 2:
            guard let n = varint(), n <= UInt64(remaining) else { return false }
            for _ in 0..<n {
                guard signed() != nil else { return false }
            }
            return true
        default: return false
        }
    }
}
