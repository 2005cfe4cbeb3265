import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

/// What a killed operation leaves under staging names is removed by the next operation on the same path — every
/// shape of leftover the crash harness has produced — and nothing that belongs to another path is touched.
@Suite("Staging cleanup")
struct StagingCleanupTests {
    static func stagingName(_ target: String) -> String { "\(AtomicFile.stagingPrefix)\(UUID().uuidString)-\(target)" }

    @Test("the next convert removes plain, sidecar, set-aside and nested staging of its destination", arguments: Backends.types)
    func nextOperationCleansUp(_ type: String) throws {
        let scratch = try TemporaryDirectory("reliability-staging-\(type)")
        defer { scratch.remove() }
        let source = try Fixtures.other("sqlite")
        let directory = try scratch.directory("dst")
        let target = "out.\(type)"
        let ours = [
            Self.stagingName(target),                                   // a staged store
            Self.stagingName(target + "-wal"),                          // a staged sidecar
            // An old store's sidecar set aside by a placement, without its main file: the old store was already
            // gone. (A set-aside main file is the store itself and is put back: PlacementRecoveryTests.)
            Self.stagingName(target) + "-old-" + target + "-wal",
            Self.stagingName(Self.stagingName(target)),                 // a backend's own staging of the staged path
            Self.stagingName(Self.stagingName(target) + "-journal"),    // … and of its sidecar
        ]
        let others = [
            Self.stagingName("x-" + target),                            // the staging of a neighbour
            Self.stagingName(Self.stagingName("x-" + target)),
            Self.stagingName("other.\(type)"),
            "\(AtomicFile.stagingPrefix)not-a-uuid-\(target)",
        ]
        for name in ours + others { try Data("leftover".utf8).write(to: directory.appendingPathComponent(name)) }

        let run = try Child.storectl(["convert", source.path, directory.appendingPathComponent(target).path, "--to", type, "-q"])
        #expect(run.status == 0, "\(run.summary)")
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: directory.path))
        #expect(left.isDisjoint(with: ours), "left: \(left.intersection(ours).sorted())")
        #expect(Set(others).isSubset(of: left), "removed another path's files: \(Set(others).subtracting(left).sorted())")
    }

    @Test("opening an XML store for writing removes the staging a killed save left")
    func xmlWriterCleansUp() throws {
        let scratch = try TemporaryDirectory("reliability-staging-xml-save")
        defer { scratch.remove() }
        let store = scratch.path("store.xml")
        try StoreBytes.copy(try Fixtures.other("xml"), to: store)
        let leftover = scratch.path(Self.stagingName("store.xml"))
        let neighbour = scratch.path(Self.stagingName("store.xml2"))
        try Data("half a save".utf8).write(to: leftover)
        try Data("someone else's".utf8).write(to: neighbour)

        let readOnly = try Backends.open(store, readOnly: true)
        try readOnly.close()
        #expect(FileManager.default.fileExists(atPath: leftover.path), "a reader holds no lock and must not clean up")
        let writer = try Backends.open(store, readOnly: false)
        try writer.close()
        #expect(!FileManager.default.fileExists(atPath: leftover.path))
        #expect(FileManager.default.fileExists(atPath: neighbour.path))
    }
}
