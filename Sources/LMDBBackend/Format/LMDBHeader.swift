import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The facts of an LMDB data file's newest meta page, read as bytes without liblmdb.
///
/// liblmdb maps the file and trusts its page numbers: a truncated or garbage file can crash the process when a
/// page past the end of the file is touched (SIGBUS). Every open first validates both meta pages here — magic,
/// format version, page size, and that the committed pages fit in the file — and the pages of the main tree
/// (``PageCheck``), and refuses the file otherwise.
struct LMDBHeader: Sendable, Equatable {
    /// `MDB_MAGIC`.
    static let magic: UInt32 = 0xBEEF_C0DE
    /// `MDB_DATA_VERSION` of liblmdb 0.9.
    static let dataVersion: UInt32 = 1
    /// `P_META`.
    static let metaPageFlag: UInt16 = 0x08
    /// `P_INVALID`: no root page.
    static let invalidPage: UInt64 = .max

    let pageSize: Int
    let mapSize: UInt64
    let lastPage: UInt64
    let transactionID: UInt64
    let mainRoot: UInt64
    let mainEntries: UInt64

    /// What a data file turned out to be.
    enum Probe: Sendable, Equatable {
        /// No file there.
        case missing
        /// An empty file (liblmdb would initialise it as a new environment).
        case empty
        /// Not an LMDB data file at all (the reason says what was seen).
        case notLMDB(String)
        /// LMDB's magic number, but the file is damaged or truncated.
        case damaged(String)
        /// The file exists but cannot be read.
        case unreadable(String)
        /// A valid LMDB data file.
        case valid(LMDBHeader)
    }

    /// Reads and validates the meta pages of the data file at `url` (64-bit little-endian layout).
    static func probe(_ url: URL, attempt: Int = 0) -> Probe {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            return errno == ENOENT ? .missing : .unreadable(FileProbe.errnoString())
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return .unreadable(FileProbe.errnoString()) }
        guard (st.st_mode & S_IFMT) == S_IFREG else { return .notLMDB("not a regular file") }
        let size = UInt64(st.st_size)
        if size == 0 { return .empty }

        guard let first = readPage(fd, at: 0, size: size) else { return .unreadable(FileProbe.errnoString()) }
        guard first.count >= 24, first.u32(16) == magic else {
            return .notLMDB("no LMDB magic number in the first page")
        }
        guard first.count >= metaLength else {
            return .damaged("truncated: \(size) bytes, shorter than one meta page")
        }
        guard first.u32(20) == dataVersion else {
            return .damaged("LMDB data format version \(first.u32(20)); this build reads version \(dataVersion)")
        }
        let pageSize = Int(first.u32(40))
        guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else {
            return .damaged("meta page 0 gives an impossible page size \(pageSize)")
        }
        guard size >= UInt64(2 * pageSize) else {
            return .damaged("truncated: \(size) bytes, shorter than the two \(pageSize)-byte meta pages")
        }
        guard let second = readPage(fd, at: UInt64(pageSize), size: size), second.count >= metaLength else {
            return .damaged("meta page 1 cannot be read")
        }
        var metas: [LMDBHeader] = []
        for (index, page) in [first, second].enumerated() {
            switch parse(page, index: index, pageSize: pageSize) {
            case .success(let h): metas.append(h)
            case .failure(let reason): return .damaged(reason.text)
            }
        }
        // liblmdb uses the meta page with the newer transaction.
        let newest = metas[1].transactionID > metas[0].transactionID ? metas[1] : metas[0]
        let pages = newest.lastPage.addingReportingOverflow(1)
        let needed = pages.partialValue.multipliedReportingOverflow(by: UInt64(pageSize))
        guard !pages.overflow, !needed.overflow, needed.partialValue <= size else {
            return .damaged("truncated: the committed pages end at byte \(needed.partialValue) but the file holds \(size) bytes")
        }
        if let reason = PageCheck(fd: fd, pageSize: pageSize, lastPage: newest.lastPage).checkMainTree(root: newest.mainRoot) {
            // Pages are read without being registered as a reader: a writer in another process may have committed
            // twice meanwhile and reused pages of this snapshot. Then the check starts over on the new snapshot.
            if attempt < 8, newestTransaction(fd, size: size, pageSize: pageSize) != newest.transactionID {
                return probe(url, attempt: attempt + 1)
            }
            return .damaged(reason)
        }
        return .valid(newest)
    }

    /// The transaction ID of the newer meta page, as it is now.
    private static func newestTransaction(_ fd: Int32, size: UInt64, pageSize: Int) -> UInt64? {
        guard let first = readPage(fd, at: 0, size: size), let second = readPage(fd, at: UInt64(pageSize), size: size) else { return nil }
        return Swift.max(first.u64(144), second.u64(144))
    }

    private struct Reason: Error { let text: String }

    /// The bytes of `MDB_page` header + `MDB_meta` that are validated.
    private static let metaLength = 152

    private static func parse(_ page: [UInt8], index: Int, pageSize: Int) -> Result<LMDBHeader, Reason> {
        let name = "meta page \(index)"
        guard page.u64(0) == UInt64(index) else { return .failure(Reason(text: "\(name) has page number \(page.u64(0))")) }
        guard page.u16(10) & metaPageFlag != 0 else { return .failure(Reason(text: "\(name) is not marked as a meta page")) }
        guard page.u32(16) == magic else { return .failure(Reason(text: "\(name) has no LMDB magic number")) }
        guard page.u32(20) == dataVersion else {
            return .failure(Reason(text: "\(name) has LMDB data format version \(page.u32(20))"))
        }
        guard Int(page.u32(40)) == pageSize else {
            return .failure(Reason(text: "\(name) disagrees about the page size (\(page.u32(40)) vs \(pageSize))"))
        }
        let lastPage = page.u64(136)
        guard lastPage >= 1 else { return .failure(Reason(text: "\(name) records no pages")) }
        let freeRoot = page.u64(80)
        let mainRoot = page.u64(128)
        for (root, what) in [(freeRoot, "free-page"), (mainRoot, "main")] where root != invalidPage {
            guard root >= 2, root <= lastPage else {
                return .failure(Reason(text: "\(name): the \(what) tree's root page \(root) is outside the file's \(lastPage &+ 1) pages"))
            }
        }
        return .success(LMDBHeader(
            pageSize: pageSize, mapSize: page.u64(32), lastPage: lastPage, transactionID: page.u64(144),
            mainRoot: mainRoot, mainEntries: page.u64(120)))
    }

    private static func readPage(_ fd: Int32, at offset: UInt64, size: UInt64) -> [UInt8]? {
        let length = Int(min(UInt64(metaLength), size - min(size, offset)))
        guard length > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: length)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, length, off_t(offset)) }
        guard n >= 0 else { return nil }
        return Array(buffer.prefix(n))
    }
}

/// Little-endian reads of LMDB's on-disk structures; 0 past the end of the bytes (the checks then fail).
extension Array where Element == UInt8 {
    func u16(_ at: Int) -> UInt16 {
        guard at >= 0, at + 2 <= count else { return 0 }
        return UInt16(self[at]) | UInt16(self[at + 1]) << 8
    }

    func u32(_ at: Int) -> UInt32 {
        guard at >= 0, at + 4 <= count else { return 0 }
        var v: UInt32 = 0
        for i in 0..<4 { v |= UInt32(self[at + i]) << (8 * UInt32(i)) }
        return v
    }

    func u64(_ at: Int) -> UInt64 {
        guard at >= 0, at + 8 <= count else { return 0 }
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(self[at + i]) << (8 * UInt64(i)) }
        return v
    }
}
