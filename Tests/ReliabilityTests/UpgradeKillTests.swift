import Foundation
import StoreAPI
import StoreTestSupport
import Testing

/// `storectl upgrade` killed at each of its file-system mutations beside the store: the path holds the old store
/// whole or the upgraded one complete — or, killed while the new store replaces the old one, the old one set aside
/// whole — and running the upgrade again finishes it with every record of the original.
@Suite("Upgrade killed at each file-system mutation")
struct UpgradeKillTests {
    /// The library model with one more optional attribute on its first concrete entity: the smallest upgrade
    /// that rewrites every record of that entity.
    static func nextVersion() throws -> Schema {
        let v1 = try #require(Fixtures.schema, "Samples/Library.xcdatamodeld does not load")
        var added = false
        return try Schema(entities: v1.definitions.map { d in
            var d = d
            if !added, !d.isAbstract {
                d.attributes.append(AttributeDescription(name: "upgradeNote", type: .string))
                added = true
            }
            return d
        }, configurations: v1.configurations)
    }

    @Test("every mutation beside the store", .enabled(if: Syscalls.strace != nil, Syscalls.skipReason), arguments: Backends.types)
    func killedWhileUpgrading(_ type: String) throws {
        let scratch = try TemporaryDirectory("reliability-upgrade-\(type)")
        defer { scratch.remove() }
        let pristine = try Fixtures.library(type)
        let v2 = try Self.nextVersion()
        let model = scratch.path("v2.json")
        try JSONEncoder().encode(v2).write(to: model)
        let reference = try scratch.directory("reference").appendingPathComponent("library.\(type)")
        try StoreBytes.copy(pristine, to: reference)
        try Backends.operations.upgradeStore(at: reference, to: v2)

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
        let targets = all.filter { $0.call.contains(directory.path + "/") }
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
        FileHandle.standardOutput.write(Data("upgrade \(type): killed at \(targets.count) mutations (\(summary)), upgraded again each\n".utf8))
    }
}
