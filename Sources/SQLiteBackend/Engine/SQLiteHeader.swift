import Foundation
import SQLiteFiles
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the first 100 bytes of a path say, read without a connection (which could create or recover files), through
/// SQLite's VFS so that this process's locks on a database it has open survive the read.
enum SQLiteHeader: Equatable {
    case missing
    case directory
    case unreadable(String)
    case empty
    /// Not an SQLite database (no `SQLite format 3\0` magic).
    case notSQLite
    /// The magic is there but the 100-byte header is not.
    case truncated
    /// The magic is there but the header's fixed fields are impossible (page size, payload fractions).
    case damaged
    /// An SQLite database with these header fields.
    case sqlite(applicationID: Int32, userVersion: Int32)

    static let magic: [UInt8] = Array("SQLite format 3".utf8) + [0]

    /// Reads the header of `url`.
    static func read(_ url: URL) -> SQLiteHeader {
        var info = stat()
        guard stat(url.path, &info) == 0 else {
            return errno == ENOENT || errno == ENOTDIR ? .missing : .unreadable(String(cString: strerror(errno)))
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: return .directory
        default: return .notSQLite  // a FIFO, socket or device: never opened (a FIFO would block)
        }
        // Through SQLite's VFS, not open(2): closing a plain descriptor would drop this process's locks on a
        // database it has open (see VFSFile).
        guard let file = VFSFile(url, readWrite: false) else { return .unreadable(String(cString: strerror(errno))) }
        guard let bytes = file.readPrefix(100) else { return .unreadable("read error") }
        let total = bytes.count
        if total == 0 { return .empty }
        guard total >= magic.count, Array(bytes[0..<magic.count]) == magic else { return .notSQLite }
        guard total == 100 else { return .truncated }
        func int32(at offset: Int) -> Int32 {
            Int32(bitPattern: UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16
                | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3]))
        }
        // Fields every valid database has: a power-of-two page size of 512…65536 (1 means 65536) and the fixed
        // payload fractions 64/32/32.
        let pageSize = Int(bytes[16]) << 8 | Int(bytes[17])
        let validPageSize = pageSize == 1 || (pageSize >= 512 && pageSize <= 32768 && pageSize & (pageSize - 1) == 0)
        guard validPageSize, bytes[21] == 64, bytes[22] == 32, bytes[23] == 32 else { return .damaged }
        return .sqlite(applicationID: int32(at: 68), userVersion: int32(at: 60))
    }
}
