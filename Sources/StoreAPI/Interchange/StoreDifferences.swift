import Foundation

/// What ``StoreComparison`` found between two stores, A and B. Records are matched by global ID.
public struct StoreDifferences: Sendable, Hashable, Codable {
    /// A record named by entity and global ID.
    public struct RecordReference: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The record's concrete entity.
        public var entity: String
        /// The record's global ID.
        public var globalID: UUID

        /// Creates a reference.
        public init(entity: String, globalID: UUID) {
            self.entity = entity
            self.globalID = globalID
        }

        public var description: String { "\(entity) \(globalID.uuidString)" }
    }

    /// A record present in both stores whose values differ.
    public struct RecordDifference: Sendable, Hashable, Codable {
        /// The record (as named in A).
        public var record: RecordReference
        /// One sentence per differing attribute, relationship or entity.
        public var details: [String]

        /// Creates a difference.
        public init(record: RecordReference, details: [String]) {
            self.record = record
            self.details = details
        }
    }

    /// Records only in A (up to the comparison's listing limit; ``onlyInACount`` counts all).
    public var onlyInA: [RecordReference] = []
    /// The number of records only in A.
    public var onlyInACount = 0
    /// Records only in B (up to the listing limit).
    public var onlyInB: [RecordReference] = []
    /// The number of records only in B.
    public var onlyInBCount = 0
    /// Records in both whose attributes, relationships or entity differ (up to the listing limit).
    public var differing: [RecordDifference] = []
    /// The number of differing records.
    public var differingCount = 0
    /// Records present in both stores and compared.
    public var recordsCompared = 0
    /// Metadata differences (store UUID, schema, configuration, custom keys, sync options), one sentence each.
    public var metadata: [String] = []
    /// History differences, one sentence each.
    public var history: [String] = []

    /// Creates an empty result.
    public init() {}

    /// Whether the two stores are the same logical store (for what was compared).
    public var isIdentical: Bool {
        onlyInACount == 0 && onlyInBCount == 0 && differingCount == 0 && metadata.isEmpty && history.isEmpty
    }

    /// A readable report, several lines.
    public var summary: String {
        if isIdentical { return "identical (\(recordsCompared) records compared)" }
        var lines: [String] = []
        func section(_ title: String, _ count: Int, _ items: [String]) {
            guard count > 0 else { return }
            lines.append("\(title): \(count)")
            lines += items.map { "  " + $0 }
            if items.count < count { lines.append("  … and \(count - items.count) more") }
        }
        section("Records only in A", onlyInACount, onlyInA.map(\.description))
        section("Records only in B", onlyInBCount, onlyInB.map(\.description))
        section("Records that differ", differingCount, differing.flatMap { d in
            [d.record.description] + d.details.map { "  " + $0 }
        })
        section("Metadata differences", metadata.count, metadata)
        section("History differences", history.count, history)
        lines.append("\(recordsCompared) records present in both were compared")
        return lines.joined(separator: "\n")
    }
}
