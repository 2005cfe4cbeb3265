import Foundation
import StoreAPI

/// Schema evolution: upgrading each source store (a copy of it) to the dataset's schema plus one optional
/// attribute, beside a streamed same-type conversion of the same store — the work an upgrade that rewrites the store
/// must at least do. SQLite upgrades such a change in place, so its ratio shows what not rewriting saves; LMDB and
/// XML stream the store through the plan.
enum UpgradeSection {
    /// The target for the backends that rewrite the store: within this factor of the streamed conversion.
    static let maxRatio = 1.2
    static let targetRecords = 1_000_000
    /// The attribute the next version adds.
    static let addedAttribute = (entity: "Book", name: "subtitle")

    /// The dataset's schema with one optional attribute added, as the JSON schema form storectl reads.
    static func writeNextModel(_ env: BenchEnvironment) throws -> (Schema, URL) {
        var defs = env.dataset.schema.definitions
        if let i = defs.firstIndex(where: { $0.name == addedAttribute.entity }) {
            defs[i].attributes.append(AttributeDescription(name: addedAttribute.name, type: .string))
        }
        let next = try Schema(entities: defs)
        let url = env.scratch.appendingPathComponent("model-next.json")
        try next.jsonData().write(to: url)
        return (next, url)
    }

    static func run(_ env: BenchEnvironment) throws {
        let (next, model) = try writeNextModel(env)
        for type in SourceStores.types where env.types.contains(type) {
            var times: [Timing] = []
            var references: [Timing] = []
            var rss: [Double] = []
            for run in 0..<env.runs {
                func reference() throws {
                    let dst = env.destination("streamed.\(type)")
                    let outcome = try ChildProcess.worker(["convert-streamed", env.source(type).path, dst.path, type])
                    references.append(outcome.timing)
                    env.remove(dst)
                }
                if run % 2 == 1 { try reference() }
                // Untimed: a fresh copy of the source to upgrade (the engines' fast copy where there is one), read
                // once so that it is in the page cache as the reference's source is: LMDB's copy writes around the
                // cache, and the upgrade would otherwise be timed reading the disk.
                let store = env.destination("upgraded.\(type)")
                try StoreOperations().copyStore(from: env.source(type), to: store, type: type)
                try readThrough(store)
                let outcome = try env.product.upgrade(store, model: model)
                times.append(outcome.timing)
                rss.append(Double(outcome.peakRSS))
                if run == 0 { check(env, store, type: type, next: next) }
                env.remove(store)
                if run % 2 == 0 { try reference() }
            }
            let rewrites = type != "sqlite"
            env.table.add(.timed("upgrade \(type): + optional attribute", records: env.total, ours: Timing.median(times),
                                 reference: Timing.median(references),
                                 referenceName: "streamed same-type convert" + (rewrites ? "" : " (SQLite upgrades in place: ALTER TABLE)"),
                                 maxRatio: rewrites && env.total >= targetRecords ? maxRatio : nil,
                                 peakRSS: Int(Measure.median(rss))))
        }
    }

    /// Reads every file of the store at `url` (a file or a directory) once, to the end.
    static func readThrough(_ url: URL) throws {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        guard fm.fileExists(atPath: url.path, isDirectory: &isDirectory) else { return }
        let files = isDirectory.boolValue
            ? try fm.contentsOfDirectory(at: url, includingPropertiesForKeys: nil).filter { !$0.hasDirectoryPath }
            : [url]
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        for file in files {
            let fd = open(file.path, O_RDONLY)
            guard fd >= 0 else { throw StoreError.io(file, operation: "opening", reason: String(cString: strerror(errno))) }
            defer { close(fd) }
            var n = 0
            repeat {
                n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            } while n > 0
            if n < 0 { throw StoreError.io(file, operation: "reading", reason: String(cString: strerror(errno))) }
        }
    }

    /// The upgraded store has the next version's hashes and every record, and its existing books read no subtitle.
    static func check(_ env: BenchEnvironment, _ url: URL, type: String, next: Schema) {
        do {
            let store = try BenchEnvironment.openReadOnly(url)
            defer { try? store.close() }
            if store.metadata.versionHashes != next.versionHashes { env.fail("upgrade \(type): the store does not have the new version hashes") }
            for name in Dataset.entityNames {
                let n = try store.count(FetchRequest(entity: name, includesSubentities: false))
                if n != env.dataset.count(of: name) { env.fail("upgrade \(type): \(n) \(name) records, expected \(env.dataset.count(of: name))") }
            }
            let predicate = try FetchPredicate("\(addedAttribute.name) != nil")
            let withValue = try store.count(FetchRequest(entity: addedAttribute.entity, predicate: predicate))
            if withValue != 0 { env.fail("upgrade \(type): \(withValue) records have a value for the added attribute") }
        } catch {
            env.fail("upgrade \(type): cannot check the upgraded store: \(error)")
        }
    }
}
