import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Random (version 4) UUIDs for new records' global identifiers, drawn from a buffer of system randomness.
///
/// Why not `UUID()`: on Linux, Foundation's `UUID()` opens, reads and closes `/dev/urandom` for every identifier
/// (more than the rest of a context insert costs), and `SystemRandomNumberGenerator` makes one `getrandom` call per
/// 8 bytes. Reading 4 KiB at a time serves 256 identifiers per system call. The bytes come from the same
/// kernel source, so the identifiers are as unpredictable as `UUID()`'s.
///
/// Not thread-safe: each owner (a ``StoreContext``, an importer) keeps its own. A process that forks while holding
/// one must not let both sides draw from it (they would hand out the same identifiers); no API here forks.
struct GlobalIDSource {
    private static let refill = 4096
    private var buffer: [UInt8] = []
    private var offset = 0

    init() {}

    /// The next random version-4 UUID.
    mutating func next() -> UUID {
        if offset + 16 > buffer.count { fill() }
        defer { offset += 16 }
        return buffer.withUnsafeBytes { raw in
            var bytes = uuid_t(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &bytes) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + 16)])) }
            bytes.6 = (bytes.6 & 0x0F) | 0x40  // version 4
            bytes.8 = (bytes.8 & 0x3F) | 0x80  // RFC 4122 variant
            return UUID(uuid: bytes)
        }
    }

    private mutating func fill() {
        if buffer.count != Self.refill { buffer = [UInt8](repeating: 0, count: Self.refill) }
        offset = 0
        let filled = buffer.withUnsafeMutableBytes { Self.systemRandom($0) }
        if !filled {
            // No readable kernel source (a sandbox without /dev): the standard library's generator never fails.
            var generator = SystemRandomNumberGenerator()
            buffer.withUnsafeMutableBytes { raw in
                for i in stride(from: 0, to: raw.count, by: 8) {
                    withUnsafeBytes(of: generator.next()) { raw[i..<(i + 8)].copyBytes(from: $0) }
                }
            }
        }
    }

    /// Fills `buffer` from the kernel; false when that is not possible.
    private static func systemRandom(_ buffer: UnsafeMutableRawBufferPointer) -> Bool {
        guard let base = buffer.baseAddress else { return false }
        #if canImport(Darwin)
        arc4random_buf(base, buffer.count)
        return true
        #else
        let fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var done = 0
        while done < buffer.count {
            let n = read(fd, base + done, buffer.count - done)
            if n > 0 { done += n } else if n < 0, errno == EINTR { continue } else { return false }
        }
        return true
        #endif
    }
}
