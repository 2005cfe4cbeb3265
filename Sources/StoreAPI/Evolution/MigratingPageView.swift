import Foundation

/// A ``MigratingStoreView`` over a store that scans pages (``PageScanningStore``): when the destination inserts
/// pages too, an upgrade moves bytes as a conversion does. A value the plan copies as it is (same type, no custom
/// step) is copied from the source page's bytes; an added attribute is appended as its default; a relationship keeps
/// its encoded links. Entities the byte copy cannot map (a converted value, a to-one made to-many, a custom step,
/// inserted records) are read as records, mapped, and encoded into the page.
final class MigratingPageView: PageScanningStore {
    let view: MigratingStoreView
    let pages: any PageScanningStore
    /// Per destination entity that maps byte for byte: how its values and links are copied.
    private let byteSteps: [String: ByteStep]

    /// How one entity's page bytes map: runs of values copied as they are, values replaced by a default when nil,
    /// added values; links copied or added empty.
    private struct ByteStep: Sendable {
        enum Value: Sendable {
            /// Source values `range`, consecutive and in order, copied as one run of bytes.
            case copy(Range<Int>)
            /// Source value `index`, or `fill` when it is nil.
            case filled(Int, StoreValue)
            /// A value the source does not have.
            case added(StoreValue)
        }
        enum Link: Sendable {
            case copy(Range<Int>)
            case added(toMany: Bool)
        }
        let step: MigrationRecordMapper.EntityStep
        let values: [Value]
        let links: [Link]
        /// Whether values must be split at each source value's bounds (else the whole source run is copied).
        let splitsValues: Bool
        let splitsLinks: Bool

        init?(_ step: MigrationRecordMapper.EntityStep) {
            guard step.attributes.allSatisfy({ $0.convertTo == nil }) else { return nil }
            var values: [Value] = []
            for a in step.attributes {
                switch (a.source, values.last) {
                case (let s?, .copy(let run)?) where a.fill.isNull && run.upperBound == s:
                    values[values.count - 1] = .copy(run.lowerBound..<(s + 1))
                case (let s?, _): values.append(a.fill.isNull ? .copy(s..<(s + 1)) : .filled(s, a.fill))
                case (nil, _): values.append(.added(a.fill))
                }
            }
            var links: [Link] = []
            for r in step.relationships {
                guard let s = r.source else {
                    links.append(.added(toMany: r.toMany))
                    continue
                }
                guard step.source.relationships[s].isToMany == r.toMany else { return nil }
                if case .copy(let run)? = links.last, run.upperBound == s {
                    links[links.count - 1] = .copy(run.lowerBound..<(s + 1))
                } else {
                    links.append(.copy(s..<(s + 1)))
                }
            }
            self.step = step
            self.values = values
            self.links = links
            splitsValues = Self.needsSplit(values.compactMap { if case .copy(let r) = $0 { r } else if case .filled(let i, _) = $0 { i..<(i + 1) } else { nil } },
                                           count: step.source.attributes.count)
            splitsLinks = Self.needsSplit(links.compactMap { if case .copy(let r) = $0 { r } else { nil } }, count: step.source.relationships.count)
        }

        /// Whether the source runs are anything but every source value once, as one run.
        static func needsSplit(_ runs: [Range<Int>], count: Int) -> Bool {
            !(runs.count == 1 && runs[0] == 0..<count) && !(runs.isEmpty && count == 0)
        }
    }

    init(view: MigratingStoreView, pages: any PageScanningStore) {
        self.view = view
        self.pages = pages
        let mapper = view.mapper
        var steps: [String: ByteStep] = [:]
        if mapper.customStep == nil && (mapper.insertions?.isEmpty ?? true) {
            for (name, step) in mapper.steps { steps[name] = ByteStep(step) }
        }
        byteSteps = steps
    }

    func scanPage(entity: String, after primaryKey: Int64?, limit: Int) throws -> RecordPage {
        guard let byteStep = byteSteps[entity] else {
            var page = RecordPage(entity: entity)
            for record in try view.scan(entity: entity, after: primaryKey, limit: limit) { page.append(record) }
            return page
        }
        let step = byteStep.step
        let source = try pages.scanPage(entity: step.source.name, after: primaryKey, limit: limit)
        var page = RecordPage(entity: entity, capacity: source.count, bytesPerRecord: source.encodedByteCount / max(1, source.count) + 8)
        var ranges: [Range<Int>] = []
        for i in 0..<source.count {
            try source.withEncodedRecord(at: i) { values, _ in
                if byteStep.splitsValues {
                    try Self.split(values, count: step.source.attributes.count, into: &ranges, values: true, entity: entity)
                }
                page.beginRecord(primaryKey: source.primaryKeys[i], globalID: source.globalIDs[i])
                for op in byteStep.values {
                    switch op {
                    case .copy(let run):
                        guard byteStep.splitsValues else {
                            page.appendEncodedValue(values)
                            continue
                        }
                        page.appendEncodedValue(UnsafeRawBufferPointer(rebasing: values[ranges[run.lowerBound].lowerBound..<ranges[run.upperBound - 1].upperBound]))
                    case .filled(let s, let fill):
                        let bytes = UnsafeRawBufferPointer(rebasing: values[ranges[s]])
                        if bytes.first == RecordPage.Tag.null.rawValue { page.append(fill) } else { page.appendEncodedValue(bytes) }
                    case .added(let value):
                        page.append(value)
                    }
                }
                page.endValues()
            }
        }
        for i in 0..<source.count {
            try source.withEncodedRecord(at: i) { _, links in
                if byteStep.splitsLinks {
                    try Self.split(links, count: step.source.relationships.count, into: &ranges, values: false, entity: entity)
                }
                for op in byteStep.links {
                    switch op {
                    case .copy(let run):
                        guard byteStep.splitsLinks else {
                            page.appendEncodedLinks(links)
                            continue
                        }
                        page.appendEncodedLinks(UnsafeRawBufferPointer(rebasing: links[ranges[run.lowerBound].lowerBound..<ranges[run.upperBound - 1].upperBound]))
                    case .added(let toMany):
                        if toMany { page.appendToMany([]) } else { page.appendToOne(nil) }
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
