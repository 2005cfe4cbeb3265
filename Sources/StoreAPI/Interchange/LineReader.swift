import Foundation

/// Splits a byte stream into lines without holding more than one chunk and one line in memory.
///
/// Lines end with `\n`; a `\r` before it and a UTF-8 byte-order mark at the very start are dropped. The last line
/// needs no terminator.
struct LineReader {
    private let next: () throws -> Data?
    private var pending: [UInt8] = []
    private var chunk: [UInt8] = []
    private var position = 0
    private var finished = false
    private var atStart = true
    /// The 1-based number of the line last returned.
    private(set) var lineNumber = 0

    /// Reads from a file handle, a megabyte at a time.
    init(handle: FileHandle, name: String) {
        next = {
            do { return try handle.read(upToCount: 1 << 20) } catch {
                throw InterchangeError(file: name, line: 0, message: "cannot read: \(error.localizedDescription)")
            }
        }
    }

    /// Reads from bytes in memory.
    init(data: Data) {
        var delivered = false
        next = {
            if delivered { return nil }
            delivered = true
            return data
        }
    }

    /// The next line's bytes, or `nil` at the end of the input.
    mutating func nextLine() throws -> ArraySlice<UInt8>? {
        pending.removeAll(keepingCapacity: true)
        while true {
            if position >= chunk.count {
                if finished { break }
                guard let data = try next(), !data.isEmpty else {
                    finished = true
                    break
                }
                chunk = [UInt8](data)
                position = 0
                if atStart {
                    atStart = false
                    if chunk.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
                }
                continue
            }
            if let newline = chunk[position...].firstIndex(of: 0x0A) {
                let line: ArraySlice<UInt8>
                if pending.isEmpty {
                    line = chunk[position..<newline]
                } else {
                    pending.append(contentsOf: chunk[position..<newline])
                    line = pending[...]
                }
                position = newline + 1
                lineNumber += 1
                return Self.trimmingCR(line)
            }
            pending.append(contentsOf: chunk[position...])
            position = chunk.count
        }
        guard !pending.isEmpty else { return nil }
        lineNumber += 1
        let line = pending[...]
        return Self.trimmingCR(line)
    }

    private static func trimmingCR(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        line.last == 0x0D ? line.dropLast() : line
    }
}
