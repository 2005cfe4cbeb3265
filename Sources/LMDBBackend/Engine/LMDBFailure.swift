import CLMDB
import Foundation
import StoreAPI

/// A non-zero return code from liblmdb, kept as the code so callers can react to the recoverable ones
/// (`MDB_MAP_FULL`, `MDB_MAP_RESIZED`, `MDB_KEYEXIST`, `MDB_NOTFOUND`) before it becomes a ``StoreError``.
struct LMDBFailure: Error, CustomStringConvertible {
    /// The liblmdb (or errno) code.
    let code: Int32
    /// What was being done, for the message.
    let operation: String

    /// liblmdb's own words for the code (it covers errno values too).
    var message: String {
        guard let c = mdb_strerror(code) else { return "error \(code)" }
        return String(cString: c)
    }

    var description: String { "\(operation): \(message)" }

    var isMapFull: Bool { code == MDB_MAP_FULL }

    /// The typed error a caller sees, naming the store file.
    func storeError(_ url: URL) -> StoreError {
        switch code {
        case MDB_CORRUPTED, MDB_PAGE_NOTFOUND, MDB_INVALID:
            return .corruptStore(url, reason: "\(operation): \(message)")
        case MDB_VERSION_MISMATCH:
            return .corruptStore(url, reason: "\(operation): written by an incompatible LMDB version (\(message))")
        case EACCES, EPERM, EROFS:
            return .readOnly(url, reason: "\(operation): \(message)")
        case EBUSY:
            return .locked(url, reason: operation)
        case MDB_TXN_FULL:
            return .io(url, operation: operation, reason: "the save changes more pages than one LMDB transaction can hold; save in smaller batches")
        default:
            return .io(url, operation: operation, reason: message)
        }
    }
}

extension LMDBFailure {
    /// The error of a failed environment copy, charged to the side that failed: liblmdb's own codes (all
    /// negative) come from reading the source environment; an `errno` comes from writing the copy (a full disk,
    /// a file-size limit, an I/O error), and the user needs to hear about the destination, not the intact source.
    func copyError(source: URL, destination: URL) -> StoreError {
        guard code > 0 else { return storeError(source) }
        return .io(destination, operation: "copying \(source.path)", reason: message)
    }
}

/// Throws an ``LMDBFailure`` for a non-zero liblmdb return code.
@inline(__always)
func check(_ rc: Int32, _ operation: @autoclosure () -> String) throws {
    if rc != 0 { throw LMDBFailure(code: rc, operation: operation()) }
}
