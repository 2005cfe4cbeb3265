import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The checks destroy and replace make before they delete anything: no symbolic link among the files they would
/// delete, and nobody using the store.
extension StoreOperations {
    /// Refuses a store whose path, or any file it owns, is a symbolic link.
    ///
    /// Deleting through a link would remove whatever it points to — possibly a file that belongs to nobody's store,
    /// or another store altogether — so destroy refuses and deletes nothing: the caller decides whether to remove
    /// the link or destroy the store at its target. (Replace is safe with links: it renames the link itself aside,
    /// never its target.)
    static func refuseSymbolicLinks(ofStoreAt url: URL, backend: any StoreBackend) throws {
        for file in [url] + backend.ownedFiles(ofStoreAt: url) where isSymbolicLink(file) {
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: file.path)) ?? "?"
            throw StoreError.refused(
                file, reason: file == url
                    ? "is a symbolic link (to \(target)); destroy the store it points to instead"
                    : "belongs to the store at \(url.path) but is a symbolic link (to \(target)); not deleting through it")
        }
    }

    /// Refuses (``StoreError/locked(_:reason:)``) a store someone has open, per ``StoreBackend/isInUse(at:)``.
    static func refuseIfInUse(_ url: URL, backend: any StoreBackend, action: String) throws {
        guard try backend.isInUse(at: url) else { return }
        throw StoreError.locked(
            url, reason: "another process (or another connection in this one) has the store open; close it first, or force the \(action)")
    }

    static func isSymbolicLink(_ url: URL) -> Bool {
        var st = stat()
        return lstat(url.path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFLNK
    }
}

extension AtomicStoreBackend {
    /// Whether a writer holds the store's lock file (see ``lockFileURL(for:)``), in this process or another.
    ///
    /// Probed with a non-blocking shared `flock` on a descriptor of its own: `flock` locks belong to an open file
    /// description, so taking and dropping this one never touches the writer's lock. Read-only opens hold no lock
    /// (they never write the file, so replacing or deleting it under them loses nothing) and are not seen.
    public func isInUse(at url: URL) throws -> Bool {
        isExclusivelyLocked(lockFileURL(for: url))
    }
}

/// Whether someone holds an exclusive `flock` on `file`.
private func isExclusivelyLocked(_ file: URL) -> Bool {
    let fd = open(file.path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    if flock(fd, LOCK_SH | LOCK_NB) == 0 {
        _ = flock(fd, LOCK_UN)
        return false
    }
    return errno == EWOULDBLOCK
}
