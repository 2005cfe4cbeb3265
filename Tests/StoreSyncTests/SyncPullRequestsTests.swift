import Foundation
import StoreAPI
@testable import StoreSync
import StoreTestSupport
import Testing

/// A pull fetches its files in requests of at most ``SyncSession/filesPerRequest`` files, the next one under way
/// while the files of one are decoded: every file is asked for once, in listing order, and a pull of more files
/// than one request holds applies them all.
@Suite("Sync pull requests")
struct SyncPullRequestsTests {
    static let schema: Schema = {
        do {
            return try Schema(entities: [
                EntityDescription(name: "Item", attributes: [AttributeDescription(name: "count", type: .integer64)]),
            ])
        } catch {
            preconditionFailure("the pull request test schema is invalid: \(error)")
        }
    }()

    @Test(arguments: [0, 1, SyncSession.filesPerRequest, SyncSession.filesPerRequest + 1, 3 * SyncSession.filesPerRequest + 5])
    func requestsAskForEveryFileOnceInOrder(count: Int) {
        let peer = UUID()
        let wanted = (0..<count).map { ChangeFileName(peer: peer, sequence: Int64($0 + 1)) }
        let requests = SyncSession.requests(for: wanted)
        #expect(requests.flatMap { $0 } == wanted)
        #expect(requests.dropLast().allSatisfy { $0.count == SyncSession.filesPerRequest })
        #expect(requests.last.map { !$0.isEmpty && $0.count <= SyncSession.filesPerRequest } ?? true)
    }

    @Test func aPullOfMoreFilesThanOneRequestHoldsAppliesEveryOne() async throws {
        let dir = try TemporaryDirectory("sync-pull-requests")
        let remote = InMemoryRemote()
        let a = try Replica(dir.path("a.sqlite"), type: "sqlite", remote: remote, schema: Self.schema)
        // One file per sync: the pull's second request is partial.
        let files = SyncSession.filesPerRequest + 3
        for i in 0..<files {
            let c = a.context()
            try c.insert("Item", ["count": .integer64(Int64(i))])
            try c.save()
            try await a.sync()
        }
        let b = try Replica(dir.path("b.sqlite"), type: "sqlite", remote: remote, schema: Self.schema)
        let report = try await b.sync()
        #expect(report.pulledFiles == files)
        #expect(report.insertedRecords == files)
        #expect(try b.count("Item") == files)
        #expect(try a.differences(from: b).isIdentical)
    }
}
