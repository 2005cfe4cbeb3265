import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The stage → fsync → rename steps every file-writing operation uses, so a crash at any point leaves either the old
/// file or the complete new one, and never a partial file under the real name.
@_spi(BackendKit) public enum AtomicFile {
    /// The prefix of every staging file and directory the framework creates; a path starting with it is never a
    /// store, and leftovers are removed by ``removeStaleStaging(near:)``.
    public static let stagingPrefix = ".storeapi-staging-"

    /// A fresh staging path in the same directory as `url` (same file system, so the final rename is atomic).
    public static func stagingURL(for url: URL) -> URL {
        url.deletingLastPathComponent()
            .appendingPathComponent("\(stagingPrefix)\(UUID().uuidString)-\(url.lastPathComponent)")
    }

    /// Writes a file atomically: `body` writes to a staging path, which is then fsynced and renamed over `url`, and
    /// the directory is fsynced. If `body` throws, the staging file is removed and `url` is untouched.
    public static func write(to url: URL, _ body: (URL) throws -> Void) throws {
        try checkDirectory(of: url)
        let staging = stagingURL(for: url)
        do {
            try body(staging)
            try fsync(path: staging)
            try rename(staging, to: url)
            try fsyncDirectory(of: url)
        } catch {
            try? FileManager.default.removeItem(at: staging)
            throw error
        }
    }

    /// Copies the bytes of the file `source` into the new file `copy` (which must not exist) with `sendfile` on
    /// Linux, else plain POSIX reads and writes. `FileManager.copyItem` is not used: it truncates paths over 1,024
    /// bytes on Linux and reports failures as `CocoaError`s; here a failed write (a full disk, a file-size limit)
    /// names `reported`, the file the caller is making, and a failed read the source.
    static func copyContents(of source: URL, to copy: URL, reporting reported: URL) throws {
        let input = open(source.path, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw StoreError.io(source, operation: "open for copying", reason: errnoString()) }
        defer { close(input) }
        let output = open(copy.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard output >= 0 else {
            let code = errno
            if code == EACCES || code == EROFS || code == EPERM { throw StoreError.readOnly(reported, reason: errnoString()) }
            throw StoreError.io(reported, operation: "creating the copy", reason: errnoString())
        }
        defer { close(output) }
        #if os(Linux)
        // In the kernel, page cache to page cache (what `cp` does with copy_file_range): no trip through a buffer
        // here, which was a third of a large copy's CPU time. Falls back to reads and writes where the file
        // systems cannot (nothing has been written then).
        var copied = 0
        while true {
            let n = sendfile(output, input, nil, 1 << 30)
            if n > 0 {
                copied += n
                continue
            }
            if n == 0 { return }
            if errno == EINTR { continue }
            let code = errno
            guard copied == 0, code == EINVAL || code == ENOSYS || code == EOPNOTSUPP else {
                // Which side failed is not told apart: a write failure (a full disk) is by far the likelier.
                throw StoreError.io(reported, operation: "copying \(source.path)", reason: String(cString: strerror(code)))
            }
            break
        }
        #endif
        let chunk = 1 << 20
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = read(input, buffer, chunk)
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError.io(source, operation: "reading for a copy", reason: errnoString())
            }
            if n == 0 { return }
            var written = 0
            while written < n {
                let w = posixWrite(output, buffer + written, n - written)
                if w < 0 {
                    if errno == EINTR { continue }
                    throw StoreError.io(reported, operation: "copying \(source.path)", reason: errnoString())
                }
                written += w
            }
        }
    }

    /// Renames `source` to `destination`, replacing it (POSIX `rename`, atomic on one file system).
    public static func rename(_ source: URL, to destination: URL) throws {
        if Glibc_rename(source.path, destination.path) != 0 {
            throw StoreError.io(destination, operation: "rename from \(source.lastPathComponent)", reason: errnoString())
        }
    }

    /// Flushes a file's (or directory's) contents to stable storage.
    public static func fsync(path url: URL) throws {
        let fd = open(url.path, O_RDONLY)
        guard fd >= 0 else { throw StoreError.io(url, operation: "open for fsync", reason: errnoString()) }
        defer { close(fd) }
        #if canImport(Darwin)
        let rc = fcntl(fd, F_FULLFSYNC)
        #else
        let rc = Glibc.fsync(fd)
        #endif
        if rc != 0 { throw StoreError.io(url, operation: "fsync", reason: errnoString()) }
    }

    /// Flushes the directory entry changes (creations, renames) of the directory holding `url`.
    public static func fsyncDirectory(of url: URL) throws {
        try fsync(path: url.deletingLastPathComponent())
    }

    /// Throws ``StoreError/directoryUnusable(_:reason:)`` unless the directory holding `url` exists and is writable.
    public static func checkDirectory(of url: URL) throws {
        let dir = url.deletingLastPathComponent()
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dir.path, isDirectory: &isDir), isDir.boolValue else {
            throw StoreError.directoryUnusable(dir, reason: "directory does not exist")
        }
        guard access(dir.path, W_OK) == 0 else {
            throw StoreError.readOnly(dir, reason: "directory is not writable")
        }
    }

    /// Removes staging files an interrupted operation left in the directory holding `url`.
    public static func removeStaleStaging(near url: URL) {
        let dir = url.deletingLastPathComponent()
        // Taken once: a URL makes its last component anew each time.
        let target = url.lastPathComponent
        for name in stagingNames(in: dir) where stagedName(name, belongsTo: target) {
            removeLeftover(dir.appendingPathComponent(name))
        }
    }

    /// Removes staging made for `url` once nothing is at `url`: a store's files moved aside by a destroy that was
    /// killed, or a killed save's. Not while a store is there: beside a store in use, staging may be a live writer's
    /// save in flight.
    static func removeStaleStagingIfVacant(near url: URL) {
        if !FileManager.default.fileExists(atPath: url.path) { removeStaleStaging(near: url) }
    }

    /// Whether `name` is a staging entry made for the file `target`: the prefix, a UUID, a dash, then `target`
    /// itself or `target` followed by a sidecar suffix. (A substring match would also take the staging files of
    /// `x-target` next door.)
    static func stagedName(_ name: String, belongsTo target: String) -> Bool {
        guard name.hasPrefix(stagingPrefix) else { return false }
        let rest = name.dropFirst(stagingPrefix.count)
        guard rest.count > 37, UUID(uuidString: String(rest.prefix(36))) != nil, rest.dropFirst(36).first == "-" else { return false }
        let tail = rest.dropFirst(37)
        return tail == target || tail.hasPrefix(target + "-") || tail.hasPrefix(target + ".")
    }

    /// Removes the entries of a directory whose name starts with `exactName` (a staging name and its sidecars).
    static func removeStaleStaging(near url: URL, exactName: String) {
        guard exactName.hasPrefix(stagingPrefix) else { return }
        let dir = url.deletingLastPathComponent()
        for name in stagingNames(in: dir) where name.hasPrefix(exactName) {
            removeLeftover(dir.appendingPathComponent(name))
        }
    }

    /// Removes one entry an interrupted operation left behind, and says so: a recovery is worth an operator's
    /// attention (something was killed), though nothing was lost.
    static func removeLeftover(_ url: URL) {
        do {
            try FileManager.default.removeItem(at: url)
            Logger.current.info("removed staging left by an interrupted operation", metadata: ["path": url.logValue])
        } catch {
            Logger.current.debug("could not remove staging left by an interrupted operation", metadata: [
                "path": url.logValue, "error": "\(error)",
            ])
        }
    }

    static func errnoString() -> String { String(cString: strerror(errno)) }
}

// `rename` is shadowed inside AtomicFile; reach the C function by another name.
private func Glibc_rename(_ a: String, _ b: String) -> Int32 {
    #if canImport(Glibc)
    return Glibc.rename(a, b)
    #else
    return Darwin.rename(a, b)
    #endif
}

// `write` is shadowed inside AtomicFile too.
private func posixWrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    return Glibc.write(fd, bytes, count)
    #else
    return Darwin.write(fd, bytes, count)
    #endif
}
