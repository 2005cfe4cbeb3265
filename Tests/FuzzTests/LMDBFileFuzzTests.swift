import Foundation
import LMDBBackend
import StoreAPI
import StoreTestSupport
import Testing

/// The LMDB backend's sniffer, metadata reader, open, integrity check and fetches, fed mutated `data.mdb` files.
///
/// liblmdb maps the data file and trusts the page numbers in it, so a damaged B-tree page can crash whatever
/// reads it. Each input therefore runs in a `storectl` child process (`info`, `verify` or `export`, in turn): a
/// signal, a hang or a runaway memory peak is a failure of this test, not the end of the test run. Set
/// `STORE_FUZZ_LMDB_IN_PROCESS=1` to also run the inputs in process (faster, but the first crash ends the run).
@Suite struct LMDBFileFuzzTests {
    static func corpus(in dir: TemporaryDirectory) throws -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        let directoryForm = dir.path("fixture.lmdb")
        try FuzzFixture.write(LMDBStoreBackend(), at: directoryForm)
        seeds.append(Array(try Data(contentsOf: directoryForm.appendingPathComponent("data.mdb"))))
        let library = dir.path("library.lmdb")
        let store = try LMDBStoreBackend().open(at: library, options: StoreOptions(),
                                                creating: StoreMetadata(storeType: "lmdb", storeUUID: FuzzFixture.gid(700), schema: try LibrarySample.schema()))
        try NDJSONImporter().importRecords(from: Data(LibrarySample.slice(count: 12, seed: 7)), into: store)
        try store.close()
        seeds.append(Array(try Data(contentsOf: library.appendingPathComponent("data.mdb"))))
        if let lmdb = PackagePaths.corpus("lmdb"), let data = try? Data(contentsOf: lmdb.appendingPathComponent("minad__lmdb/data.mdb")) {
            seeds.append(Array(data))
        }
        return seeds
    }

    /// A refusal by the child (exit status 2 with a message naming the store).
    struct Refused: Error, CustomStringConvertible {
        let description: String
        /// "refused", or "engine fault" when liblmdb faulted on a page past the end of the file and storectl's
        /// fault guard reported the damaged store (see `FaultGuard`).
        var kind: String { description.contains("the storage engine faulted") ? "engine fault" : "refused" }
    }

    static let verbs: [[String]] = [["info", "--json"], ["verify"], ["export"]]

    /// Property: for every mutated data file, `storectl info`, `verify` and `export` finish within a generous
    /// time and memory bound, and either succeed or exit with status 2 and a message naming the store — never a
    /// signal.
    @Test func mutatedDataFilesInAChildProcess() throws {
        let storectl = try BuiltTools.require(BuiltTools.storectl, "storectl")
        let dir = try TemporaryDirectory("fuzz-lmdb")
        let input = dir.path("input.lmdb")
        let campaign = FuzzCampaign(target: "lmdb-file", corpus: try Self.corpus(in: dir), dialect: .binary, maxSize: 512 << 10,
                                    ciIterations: 45) { ($0 as? Refused)?.kind }
        let stats = campaign.run { bytes, index in
            try? FileManager.default.removeItem(at: input)
            try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
            try Data(bytes).write(to: input.appendingPathComponent("data.mdb"))
            let verb = Self.verbs[index % Self.verbs.count]
            let result = try ChildProcess.run(storectl, verb + [input.path], timeout: 120)
            if result.timedOut || result.signal != nil || result.peakMemoryBytes > 1 << 30 {
                throw FuzzViolation("storectl \(verb[0]) on a damaged data.mdb: \(result)")
            }
            switch result.exitStatus {
            case 0: return
            case 1 where verb[0] == "verify":  // problems found and listed
                throw Refused(description: result.stdout)
            case 2:
                guard result.stderr.contains(input.lastPathComponent) else {
                    throw FuzzViolation("storectl \(verb[0]) refused without naming the store: \(result.stderr)")
                }
                throw Refused(description: result.stderr)
            default:
                throw FuzzViolation("storectl \(verb[0]) exited \(result.exitStatus ?? -1): \(result.stderr)")
            }
        }
        #expect(stats.accepted > 0, "\(stats)")
    }

    /// The same inputs in process, for a fast long run once liblmdb-facing reads are hardened.
    @Test(.enabled(if: FuzzConfiguration.environment["STORE_FUZZ_LMDB_IN_PROCESS"] == "1"))
    func mutatedDataFilesInProcess() throws {
        let dir = try TemporaryDirectory("fuzz-lmdb-in-process")
        let input = dir.path("input.lmdb")
        let campaign = FuzzCampaign(target: "lmdb-file", corpus: try Self.corpus(in: dir), dialect: .binary, maxSize: 512 << 10,
                                    ciIterations: 300, classify: FuzzErrors.store)
        campaign.run { bytes, _ in
            try? FileManager.default.removeItem(at: input)
            try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
            try Data(bytes).write(to: input.appendingPathComponent("data.mdb"))
            try StoreProbe.readEverything(input, with: LMDBStoreBackend())
        }
    }
}
