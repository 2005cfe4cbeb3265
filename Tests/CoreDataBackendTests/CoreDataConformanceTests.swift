import CoreDataBackend
import StoreAPI
import StoreConformance
import Testing

/// The published conformance suite, run against the writable coredata backend.
///
/// Records inserted with global identifiers of their own keep them (`STOREKIT_GLOBALID`, see
/// `CoreDataGlobalIDTable`), so `attributeValues` and `batchInsert` find the records they inserted. What
/// `attributeValues` still cannot get back are values Core Data's columns cannot hold, and only those run as a known
/// issue: decimals are stored as REAL (digits past a double's precision are lost), and SQLite stores a NaN double or
/// float as NULL and -0.0 as 0. Any other failure of the group, a record it cannot find included, fails the test.
@Suite struct CoreDataConformanceTests {
    static let suite = ConformanceSuite(backend: CoreDataStoreBackend(), peers: [InMemoryBackend()])

    /// The `Sample` attributes whose edge values Core Data's SQL encodings change.
    static let lossyAttributes = ["Sample.dec:", "Sample.dbl:", "Sample.flt:"]

    @Test(arguments: suite.groups)
    func conformance(_ group: ConformanceGroup) throws {
        guard "\(group)" == "attributeValues" else {
            try Self.suite.run(group)
            return
        }
        try withKnownIssue("Core Data stores decimals as REAL; SQLite stores NaN as NULL and -0.0 as 0") {
            try Self.suite.run(group)
        } matching: { issue in
            issue.comments.contains { comment in Self.lossyAttributes.contains { comment.rawValue.hasPrefix($0) } }
        }
    }
}
