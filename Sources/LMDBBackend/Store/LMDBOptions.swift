import Foundation
import StoreAPI

/// The backend-specific options the LMDB backend reads from ``StoreOptions/backend``.
struct LMDBOptions: Sendable {
    /// Bytes the memory map starts at (`lmdb.mapSize`). The map doubles by itself whenever it fills up.
    var initialMapSize: Int = 64 << 20
    /// The most the map may grow to (`lmdb.maxMapSize`); reaching it is an error.
    var maxMapSize: Int = 1 << 40
    /// Create new stores in the file form (`lmdb.noSubdir` = `true`): the URL is the data file.
    var fileForm = false

    /// The option keys.
    enum Key {
        static let mapSize = "lmdb.mapSize"
        static let maxMapSize = "lmdb.maxMapSize"
        static let noSubdir = "lmdb.noSubdir"
    }

    init() {}

    /// Reads the options; malformed values are an error naming the key, not silently ignored.
    init(_ options: [String: String]) throws {
        if let raw = options[Key.mapSize] { initialMapSize = try Self.size(raw, key: Key.mapSize) }
        if let raw = options[Key.maxMapSize] { maxMapSize = try Self.size(raw, key: Key.maxMapSize) }
        if let raw = options[Key.noSubdir] {
            switch raw.lowercased() {
            case "true", "yes", "1": fileForm = true
            case "false", "no", "0": fileForm = false
            default: throw StoreError.unsupported("option \(Key.noSubdir) must be true or false, not '\(raw)'")
            }
        }
        if maxMapSize < initialMapSize { maxMapSize = initialMapSize }
    }

    /// A byte count, optionally with a K, M, G or T suffix (binary multiples).
    private static func size(_ raw: String, key: String) throws -> Int {
        let text = raw.trimmingCharacters(in: .whitespaces).uppercased()
        var digits = Substring(text)
        if digits.hasSuffix("IB") { digits = digits.dropLast(2) } else if digits.hasSuffix("B") { digits = digits.dropLast() }
        var shift = 0
        if let last = digits.last, let s = ["K": 10, "M": 20, "G": 30, "T": 40][String(last)] {
            shift = s
            digits = digits.dropLast()
        }
        guard let n = Int(digits), n > 0, n <= (Int.max >> shift) else {
            throw StoreError.unsupported("option \(key) must be a positive size in bytes (like 67108864 or 64M), not '\(raw)'")
        }
        // liblmdb needs room for its meta pages and a few tree pages.
        return max(n << shift, 32 << 10)
    }
}
