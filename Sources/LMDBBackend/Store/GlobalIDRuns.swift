import Foundation
import StoreAPI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The sorted runs of a bulk load's global-ID entries, kept in a temporary file until the load finishes and then
/// merged into one stream in key order.
///
/// Why: global IDs are random, so every run of them lands on leaf pages all over the index, and a copy-on-write
/// B-tree rewrites every page it touches. Written run by run, a load of a million records rewrote the whole index
/// once per run (eight times over); merged first, the entries of a load into an empty index are appended, and
/// each page is written once. Memory stays what one run takes: the file holds the runs, and the merge reads each
/// through a small buffer.
///
/// The file is unlinked as soon as it is made, so nothing is left behind whatever happens to the process.
///
/// `@unchecked Sendable`: it lives in a bulk load's pending state, which one save at a time takes out of the
/// store's lock and puts back.
final class GlobalIDRuns: @unchecked Sendable {
    typealias Entry = GlobalIDBatch.Entry

    private let fd: Int32
    /// Each run's first entry and length, in entries.
    private var runs: [(start: Int, count: Int)] = []
    private var written = 0
    /// Entries a run's reader holds at a time during a merge (16 KiB): a million-record load merges about thirty
    /// runs.
    private static let readerEntries = 512

    /// Makes the temporary file (in the system's temporary directory).
    init() throws {
        let template = FileManager.default.temporaryDirectory.appendingPathComponent("storeapi-gid-XXXXXX").path
        var path = Array(template.utf8CString)
        let fd = path.withUnsafeMutableBufferPointer { buf in buf.baseAddress.map { mkstemp($0) } ?? -1 }
        guard fd >= 0 else {
            throw StoreError.io(URL(fileURLWithPath: template), operation: "creating a temporary file for global IDs",
                                reason: String(cString: strerror(errno)))
        }
        path.withUnsafeBufferPointer { buf in _ = buf.baseAddress.map { unlink($0) } }
        self.fd = fd
    }

    deinit { close(fd) }

    var isEmpty: Bool { runs.isEmpty }
    /// Entries held in all runs.
    var count: Int { written }

    /// Appends a run, which must be in key order.
    func append(sortedRun entries: [Entry]) throws {
        guard !entries.isEmpty else { return }
        try entries.withUnsafeBytes { raw in
            try Self.writeAll(fd, raw, at: written * MemoryLayout<Entry>.stride)
        }
        runs.append((written, entries.count))
        written += entries.count
    }

    /// Calls `body` with every entry of every run and of `sorted` (itself in key order), in key order, in chunks
    /// of at most `chunk` entries; equal keys come in the order they were added. Then empties the runs.
    func merge(with sorted: [Entry], chunk: Int, _ body: (ArraySlice<Entry>) throws -> Void) throws {
        var readers = try runs.map { try RunReader(fd: fd, start: $0.start, count: $0.count, capacity: Self.readerEntries) }
        // The in-memory entries were added last: they are the last source, so ties keep the order of addition.
        readers.append(RunReader(entries: sorted))
        // A binary heap of reader indexes by their current entry (ties: lower index first).
        func less(_ a: Int, _ b: Int) -> Bool {
            let x = readers[a].current, y = readers[b].current
            return x < y || (!(y < x) && a < b)
        }
        var heap = readers.indices.filter { !readers[$0].isDone }
        func siftDown(_ start: Int) {
            var i = start
            while true {
                let l = 2 * i + 1, r = l + 1
                var m = i
                if l < heap.count && less(heap[l], heap[m]) { m = l }
                if r < heap.count && less(heap[r], heap[m]) { m = r }
                if m == i { return }
                heap.swapAt(i, m)
                i = m
            }
        }
        for i in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(i) }
        var out: [Entry] = []
        out.reserveCapacity(chunk)
        while let top = heap.first {
            out.append(readers[top].current)
            if out.count == chunk {
                try body(out[...])
                out.removeAll(keepingCapacity: true)
            }
            if try readers[top].advance() {
                siftDown(0)
            } else {
                heap.swapAt(0, heap.count - 1)
                heap.removeLast()
                siftDown(0)
            }
        }
        if !out.isEmpty { try body(out[...]) }
        runs.removeAll()
        written = 0
        // The file's blocks are given back; a later run starts again at its beginning.
        _ = ftruncate(fd, 0)
    }

    private static func writeAll(_ fd: Int32, _ raw: UnsafeRawBufferPointer, at offset: Int) throws {
        guard let base = raw.baseAddress else { return }
        var done = 0
        while done < raw.count {
            let n = pwrite(fd, base + done, raw.count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError.io(URL(fileURLWithPath: "/proc/self/fd/\(fd)"), operation: "writing global IDs to a temporary file",
                                    reason: String(cString: strerror(errno)))
            }
            done += n
        }
    }

    /// Reads one run through a buffer (or walks an in-memory array).
    private struct RunReader {
        private let fd: Int32
        private let capacity: Int
        private var next: Int
        private var remaining: Int
        private var buffer: [Entry]
        private var position = 0
        private(set) var isDone = false

        init(fd: Int32, start: Int, count: Int, capacity: Int) throws {
            self.fd = fd
            self.capacity = max(1, capacity)
            next = start
            remaining = count
            buffer = []
            try refill()
        }

        init(entries: [Entry]) {
            fd = -1
            capacity = 0
            next = 0
            remaining = 0
            buffer = entries
            isDone = entries.isEmpty
        }

        var current: Entry { buffer[position] }

        /// Moves to the next entry; `false` at the end of the run.
        mutating func advance() throws -> Bool {
            position += 1
            if position < buffer.count { return true }
            guard remaining > 0 else {
                isDone = true
                return false
            }
            try refill()
            return !isDone
        }

        private mutating func refill() throws {
            let n = min(capacity, remaining)
            guard n > 0 else {
                isDone = true
                return
            }
            let template = Entry(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), entityID: 0, primaryKey: 0)
            buffer = [Entry](repeating: template, count: n)
            let stride = MemoryLayout<Entry>.stride
            let fd = self.fd, offset = next * stride
            try buffer.withUnsafeMutableBytes { raw in
                guard let base = raw.baseAddress else { return }
                var done = 0
                while done < raw.count {
                    let got = pread(fd, base + done, raw.count - done, off_t(offset + done))
                    if got < 0, errno == EINTR { continue }
                    guard got > 0 else {
                        throw StoreError.io(URL(fileURLWithPath: "/proc/self/fd/\(fd)"), operation: "reading global IDs back from a temporary file",
                                            reason: got < 0 ? String(cString: strerror(errno)) : "the file is shorter than what was written")
                    }
                    done += got
                }
            }
            next += n
            remaining -= n
            position = 0
        }
    }
}
