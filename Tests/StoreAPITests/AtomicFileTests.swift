import Foundation
@_spi(BackendKit) import StoreAPI
import StoreTestSupport
import Testing

@Suite struct AtomicFileTests {
    /// Leftovers of an interrupted operation on `a.sqlite` are removed; staging files of other targets in the same
    /// directory (even ones whose names end the same way) and the store itself are not.
    @Test func staleStagingIsRemovedForItsTargetOnly() throws {
        let tmp = try TemporaryDirectory("atomicfile")
        let dir = tmp.url
        let p = AtomicFile.stagingPrefix
        let mine = ["\(p)\(UUID().uuidString)-a.sqlite", "\(p)\(UUID().uuidString)-a.sqlite-wal",
                    "\(p)\(UUID().uuidString)-a.sqlite.lock", "\(p)\(UUID().uuidString)-a.sqlite-old-a.sqlite"]
        let others = ["\(p)\(UUID().uuidString)-x-a.sqlite", "\(p)\(UUID().uuidString)-a.sqlite3", "a.sqlite", "a.sqlite-wal",
                      "\(p)not-a-uuid-a.sqlite", "notes.txt"]
        for name in mine + others { try Data("x".utf8).write(to: dir.appendingPathComponent(name)) }
        AtomicFile.removeStaleStaging(near: dir.appendingPathComponent("a.sqlite"))
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: dir.path))
        #expect(left == Set(others))
    }

    /// Names are read from the directory as bytes: a staging name for a target with non-ASCII letters (stored as
    /// its UTF-8) is found, and a name cut short inside the prefix is not taken for one.
    @Test func staleStagingOfNonASCIINamesIsFound() throws {
        let tmp = try TemporaryDirectory("atomicfile")
        let dir = tmp.url
        let p = AtomicFile.stagingPrefix
        let mine = ["\(p)\(UUID().uuidString)-Bücher ✓.sqlite", "\(p)\(UUID().uuidString)-Bücher ✓.sqlite-shm"]
        let others = [String(p.dropLast()), "Bücher ✓.sqlite", "\(p)\(UUID().uuidString)-Bucher ✓.sqlite"]
        for name in mine + others { try Data("x".utf8).write(to: dir.appendingPathComponent(name)) }
        AtomicFile.removeStaleStaging(near: dir.appendingPathComponent("Bücher ✓.sqlite"))
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: dir.path)) == Set(others))
    }
}
