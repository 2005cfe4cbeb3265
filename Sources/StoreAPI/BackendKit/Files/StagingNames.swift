import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension AtomicFile {
    /// The names in `directory` that start with ``stagingPrefix`` (none when it cannot be read), read with
    /// `readdir`: a name becomes a Swift string only when its bytes start with the prefix.
    ///
    /// Every store operation looks for leftovers beside its destination, and destinations are often directories of
    /// many files (a folder of backups, a home directory). Listing one with FileManager makes a string of every
    /// name, which dominated a short `storectl copy` into such a directory.
    static func stagingNames(in directory: URL) -> [String] {
        guard let dir = opendir(directory.path) else { return [] }
        defer { closedir(dir) }
        let prefix = Array(stagingPrefix.utf8)
        var names: [String] = []
        while let entry = readdir(dir) {
            let name: String? = withUnsafeBytes(of: &entry.pointee.d_name) { raw in
                guard raw.count > prefix.count, raw.prefix(prefix.count).elementsEqual(prefix) else { return nil }
                // d_name is NUL-terminated inside its buffer.
                let length = raw.firstIndex(of: 0) ?? raw.count
                return String(decoding: raw.prefix(length), as: UTF8.self)
            }
            if let name { names.append(name) }
        }
        return names
    }
}
