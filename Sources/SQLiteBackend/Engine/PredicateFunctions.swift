import CSQLite
import Foundation
@_spi(BackendKit) import StoreAPI

/// SQL functions that let ``QueryTranslator`` run `[c]`/`[d]` comparisons, `LIKE` and `MATCHES` in SQLite with the
/// evaluator's exact semantics: each calls the very ``PredicateEvaluator`` code the in-memory path runs, so the
/// two paths cannot disagree (SQLite's own `LIKE`, `NOCASE` and `lower()` fold ASCII only, or not as Foundation
/// does). They are registered on every connection the backend opens and are deterministic, so SQLite may
/// evaluate them once per row and value. ASCII-only text is folded and matched on its bytes (as the evaluator
/// folds it: A-Z to a-z for `[c]`), without making a string per row.
///
/// - `store_fold(text, options)`: the text folded by ``PredicateEvaluator/fold(_:_:)`` as a blob of UTF-8 (so
///   comparisons with it are bytewise — Unicode scalar order — and NUL characters survive); `NULL` for `NULL`.
/// - `store_like(text, pattern, options)`: 1 when the folded text matches the already folded `LIKE` pattern.
/// - `store_matches(text, pattern, options)`: 1 when the text matches the `MATCHES` pattern (compiled once per
///   statement; the translator only passes patterns that compile).
enum PredicateFunctions {
    static let fold = "store_fold"
    static let like = "store_like"
    static let matches = "store_matches"

    /// Registers the functions on `db`; returns SQLite's result code.
    static func register(_ db: OpaquePointer) -> Int32 {
        let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC
        var rc = sqlite3_create_function_v2(db, fold, 2, flags, nil, foldFunction, nil, nil, nil)
        if rc == SQLITE_OK { rc = sqlite3_create_function_v2(db, like, 3, flags, nil, likeFunction, nil, nil, nil) }
        if rc == SQLITE_OK { rc = sqlite3_create_function_v2(db, matches, 3, flags, nil, matchesFunction, nil, nil, nil) }
        return rc
    }

    /// The argument's bytes as a string (text or blob alike), or `nil` for `NULL`.
    fileprivate static func string(_ value: OpaquePointer?) -> String? {
        guard sqlite3_value_type(value) != SQLITE_NULL else { return nil }
        // `sqlite3_value_blob` hands back a text value's UTF-8 bytes as they are, NUL characters included.
        let bytes = sqlite3_value_blob(value)
        let count = Int(sqlite3_value_bytes(value))
        guard let bytes, count > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    fileprivate static func options(_ value: OpaquePointer?) -> ComparisonOptions {
        ComparisonOptions(rawValue: Int(sqlite3_value_int(value)))
    }

    /// Runs `body` with the argument's bytes folded as ``PredicateEvaluator/fold(_:_:)`` folds ASCII-only text
    /// (A-Z to a-z for `[c]`, nothing else), without making a string; `nil` when the text is not ASCII-only.
    /// Most text is ASCII, and making a `String` per row would cost more than the comparison.
    fileprivate static func withFoldedASCII<T>(
        _ value: OpaquePointer?, _ options: ComparisonOptions, _ body: (UnsafeRawBufferPointer) -> T
    ) -> T? {
        // The pointer first, then the length, as SQLite asks.
        let base = sqlite3_value_blob(value)
        let count = Int(sqlite3_value_bytes(value))
        guard let base, count > 0 else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        let bytes = UnsafeRawBufferPointer(start: base, count: count)
        var hasUpper = false
        for b in bytes {
            if b >= 0x80 { return nil }
            if b &- 0x41 < 26 { hasUpper = true }
        }
        guard hasUpper, options.contains(.caseInsensitive) else { return body(bytes) }
        return withUnsafeTemporaryAllocation(byteCount: count, alignment: 1) { buffer in
            for (i, b) in bytes.enumerated() { buffer[i] = b &- 0x41 < 26 ? b | 0x20 : b }
            return body(UnsafeRawBufferPointer(buffer))
        }
    }

    /// Whether every byte of the argument is ASCII.
    fileprivate static func isASCII(_ value: OpaquePointer?) -> Bool {
        let base = sqlite3_value_blob(value)
        let count = Int(sqlite3_value_bytes(value))
        guard let base, count > 0 else { return true }
        return UnsafeRawBufferPointer(start: base, count: count).allSatisfy { $0 < 0x80 }
    }
}

/// A compiled `MATCHES` pattern kept by SQLite between rows of one statement (`sqlite3_set_auxdata`).
private final class CompiledPattern {
    let regex: NSRegularExpression
    init(_ regex: NSRegularExpression) { self.regex = regex }
}

private let foldFunction: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
    context, _, args in
    guard let args, sqlite3_value_type(args[0]) != SQLITE_NULL else { return sqlite3_result_null(context) }
    let options = PredicateFunctions.options(args[1])
    let done: Void? = PredicateFunctions.withFoldedASCII(args[0], options) { bytes in
        if let base = bytes.baseAddress, !bytes.isEmpty {
            sqlite3_result_blob(context, base, Int32(bytes.count), sqliteTransient)
        } else {
            sqlite3_result_zeroblob(context, 0)
        }
    }
    guard done == nil, let text = PredicateFunctions.string(args[0]) else { return }
    var folded = PredicateEvaluator.fold(text, options)
    folded.withUTF8 { bytes in
        if let base = bytes.baseAddress, !bytes.isEmpty {
            sqlite3_result_blob(context, base, Int32(bytes.count), sqliteTransient)
        } else {
            sqlite3_result_zeroblob(context, 0)
        }
    }
}

private let likeFunction: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
    context, _, args in
    guard let args, sqlite3_value_type(args[0]) != SQLITE_NULL, sqlite3_value_type(args[1]) != SQLITE_NULL else {
        return sqlite3_result_null(context)
    }
    let options = PredicateFunctions.options(args[2])
    if PredicateFunctions.isASCII(args[1]) {
        let base = sqlite3_value_blob(args[1])
        let pattern = UnsafeRawBufferPointer(start: base, count: base == nil ? 0 : Int(sqlite3_value_bytes(args[1])))
        let matched = PredicateFunctions.withFoldedASCII(args[0], options) { PredicateEvaluator.likeASCII($0, pattern: pattern) }
        if let matched { return sqlite3_result_int(context, matched ? 1 : 0) }
    }
    guard let text = PredicateFunctions.string(args[0]), let pattern = PredicateFunctions.string(args[1]) else {
        return sqlite3_result_null(context)
    }
    let folded = PredicateEvaluator.fold(text, options)
    sqlite3_result_int(context, PredicateEvaluator.like(folded, pattern: pattern) ? 1 : 0)
}

private let matchesFunction: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
    context, _, args in
    guard let args, let text = PredicateFunctions.string(args[0]), let pattern = PredicateFunctions.string(args[1]) else {
        return sqlite3_result_null(context)
    }
    let options = PredicateFunctions.options(args[2])
    let regex: NSRegularExpression
    if let kept = sqlite3_get_auxdata(context, 1) {
        regex = Unmanaged<CompiledPattern>.fromOpaque(kept).takeUnretainedValue().regex
    } else {
        do {
            regex = try PredicateEvaluator.regularExpression(pattern, options)
        } catch {
            return sqlite3_result_error(context, "MATCHES pattern is not a regular expression", -1)
        }
        // SQLite releases the box when the statement no longer needs it (or at once, if it cannot keep it).
        sqlite3_set_auxdata(context, 1, Unmanaged.passRetained(CompiledPattern(regex)).toOpaque()) { box in
            if let box { Unmanaged<CompiledPattern>.fromOpaque(box).release() }
        }
    }
    sqlite3_result_int(context, PredicateEvaluator.matches(text, regex, options) ? 1 : 0)
}
