import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// `storectl upgrade` killed at each of its file-system mutations beside the store: the path holds the old store
/// whole or the upgraded one complete — or, killed while the new store replaces the old one, the old one set aside
/// whole — and running the upgrade again finishes it with every record of the original.
@Suite("Upgrade killed at each file-system mutation")
struct UpgradeKillTests {
    /// The library model with `change` applied to the entity named `entity`.
    static func library(changing entity: String, _ change: (inout EntityDescription) -> Void) throws -> Schema {
        let v1 = try #require(Fixtures.schema, "Samples/Library.xcdatamodeld does not load")
        return try Schema(entities: v1.definitions.map { d in
            var d = d
            if d.name == entity { change(&d) }
            return d
        }, configurations: v1.configurations)
    }

    /// The library model with one more optional attribute on an entity with records: the smallest upgrade that
    /// rewrites every record of that entity where it is not done in place.
    static func nextVersion() throws -> Schema {
        try library(changing: "Author") { $0.attributes.append(AttributeDescription(name: "upgradeNote", type: .string)) }
    }

    @Test("every mutation beside the store", .enabled(if: Syscalls.strace != nil, Syscalls.skipReason), arguments: Backends.types)
    func killedWhileUpgrading(_ type: String) throws {
        let scratch = try TemporaryDirectory("reliability-upgrade-\(type)")
        defer { scratch.remove() }
        let v2 = try Self.nextVersion()
        let model = scratch.path("v2.json")
        try JSONEncoder().encode(v2).write(to: model)
        try Self.killAtEveryMutation(type, in: scratch, model: model, points: .max) { reference in
            try Backends.operations.upgradeStore(at: reference, to: v2)
        }
    }

    /// An `.xcdatamodeld` of three versions is upgraded through on a staged copy placed at the end: killed anywhere,
    /// the store is the v1 store whole (never a store left at v2) or the v3 one complete.
    @Test("a chain of versions: every mutation beside the store", .enabled(if: Syscalls.strace != nil, Syscalls.skipReason),
          arguments: Backends.types)
    func killedWhileUpgradingThroughAChain(_ type: String) throws {
        let scratch = try TemporaryDirectory("reliability-upgrade-chain-\(type)")
        defer { scratch.remove() }
        let bundle = try Self.threeVersionBundle(in: scratch)
        let chain = try SchemaVersionChain(xcodeModelBundleAt: bundle)
        #expect(chain.versions.map(\.name) == ["Library", "Library 2", "Library 3"])
        // The copy and two steps make many more mutations than one step: a sample of them in CI, all in a full run.
        let points = RunSize.number("STORE_CRASH_POINTS") != nil ? Int.max : 12
        try Self.killAtEveryMutation(type, in: scratch, model: bundle, points: points) { reference in
            let steps = try Backends.operations.upgradeStore(at: reference, through: chain)
            #expect(steps.count == 2)
        }
    }

    /// `Samples/Library.xcdatamodeld` with two more versions: the second adds an optional attribute to Author (in
    /// place on SQLite), the third removes one of Magazine's (every store streamed).
    static func threeVersionBundle(in scratch: TemporaryDirectory) throws -> URL {
        let bundle = scratch.path("Library.xcdatamodeld")
        let v1 = PackagePaths.libraryModel.appendingPathComponent("Library.xcdatamodel")
        let contents = try String(contentsOf: v1.appendingPathComponent("contents"), encoding: .utf8)
        let authorName = #"<attribute name="name" attributeType="String"/>"#
        let frequency = #"<attribute name="frequency" optional="YES" attributeType="String"/>"#
        #expect(contents.contains(authorName) && contents.contains(frequency), "the sample model changed: update this test")
        let v2 = contents.replacingOccurrences(
            of: authorName, with: authorName + #"<attribute name="upgradeNote" optional="YES" attributeType="String"/>"#)
        let v3 = v2.replacingOccurrences(of: frequency, with: "")
        for (name, text) in [("Library", contents), ("Library 2", v2), ("Library 3", v3)] {
            let version = bundle.appendingPathComponent("\(name).xcdatamodel")
            try FileManager.default.createDirectory(at: version, withIntermediateDirectories: true)
            try text.write(to: version.appendingPathComponent("contents"), atomically: true, encoding: .utf8)
        }
        let current = try String(contentsOf: PackagePaths.libraryModel.appendingPathComponent(".xccurrentversion"), encoding: .utf8)
            .replacingOccurrences(of: "<string>Library.xcdatamodel</string>", with: "<string>Library 3.xcdatamodel</string>")
        try current.write(to: bundle.appendingPathComponent(".xccurrentversion"), atomically: true, encoding: .utf8)
        return bundle
    }

    /// Upgrades a copy of the sample library of `type` with `upgrade` for the expected result, then kills
    /// `storectl upgrade STORE --model model` at up to `points` of its file-system mutations in the store's folder,
    /// checking after each that the store is the original whole, the upgraded one complete, or the original set
    /// aside by a placement, and that running the command again finishes the upgrade.
    static func killAtEveryMutation(_ type: String, in scratch: TemporaryDirectory, model: URL, points: Int,
                                    upgrade: (URL) throws -> Void) throws {
        let pristine = try Fixtures.library(type)
        let reference = try scratch.directory("reference").appendingPathComponent("library.\(type)")
        try StoreBytes.copy(pristine, to: reference)
        try upgrade(reference)

        let directory = try scratch.directory("stores")
        let store = directory.appendingPathComponent("library.\(type)")
        let command = [try BuiltTools.require(BuiltTools.storectl, "storectl").path, "upgrade", store.path, "--model", model.path, "-q"]
        func reset() throws {
            StoreBytes.removeAll(at: store)
            for name in StoreBytes.staging(in: directory) { try? FileManager.default.removeItem(at: directory.appendingPathComponent(name)) }
            try StoreBytes.copy(pristine, to: store)
        }
        try reset()
        let (first, all) = try Syscalls.boundaries(of: command)
        #expect(first.status == 0, "\(first.summary)")
        #expect(StoreChecks.problems(at: store, type: type, identicalTo: reference) == nil)
        var random = SeededGenerator(series: "upgrade \(model.lastPathComponent) \(type)")
        let targets = Syscalls.sample(all.filter { $0.call.contains(directory.path + "/") }, count: points, using: &random)
        #expect(!targets.isEmpty, "no mutation of the store's folder among \(all.count)")
        var outcomes: [String: Int] = [:]
        for boundary in targets {
            try reset()
            let (child, killed) = try KillPoint.syscall(boundary).run(command)
            #expect(killed, "\(boundary): \(child.summary)")
            let old = StoreChecks.problems(at: store, type: type, identicalTo: pristine)
            let new = StoreChecks.problems(at: store, type: type, identicalTo: reference)
            // Between setting the old files aside and moving the new main file in, no store is at the path: the old
            // one is whole under its aside names, and the next upgrade puts it back (checked below: the rerun must
            // give every record of the original).
            let setAside = Backends.storeType(at: store) == nil
                && StoreBytes.staging(in: directory).contains { $0.contains("-\(store.lastPathComponent)-old-\(store.lastPathComponent)") }
            #expect(old == nil || new == nil || setAside,
                    "killed \(boundary): neither the old store whole nor the new one: \(old ?? "") / \(new ?? "")")
            outcomes[old == nil ? "old store whole" : new == nil ? "upgraded store complete" : "old store set aside", default: 0] += 1
            let again = try Child.storectl(Array(command.dropFirst()))
            #expect(again.status == 0, "\(boundary), upgraded again: \(again.summary)")
            let finished = StoreChecks.problems(at: store, type: type, identicalTo: reference)
            #expect(finished == nil, "\(boundary), upgraded again: \(finished ?? "")")
            #expect(StoreBytes.staging(in: directory).isEmpty,
                    "\(boundary), upgraded again: staging left: \(StoreBytes.staging(in: directory).sorted())")
        }
        let summary = outcomes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        FileHandle.standardOutput.write(Data(
            "upgrade \(model.lastPathComponent) \(type): killed at \(targets.count) mutations (\(summary)), upgraded again each\n".utf8))
    }
}
