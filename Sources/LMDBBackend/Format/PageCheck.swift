import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Structural checks of an LMDB data file's B-tree pages, read with `pread` before liblmdb maps them.
///
/// liblmdb trusts every page it reaches: a node offset pointing outside its page, a key longer than the page, a
/// child page number past the end of the file or a branch that points back up the tree makes it read past the
/// mapped file (SIGBUS) or search forever. Opening a store reaches the *main* tree first (`mdb_dbi_open` looks up
/// every named database there), so that tree — a page or two in our stores — is checked on every probe, together
/// with the root page of each named database it lists. (64-bit little-endian layout of liblmdb 0.9: a 16-byte page
/// header, 2-byte node offsets, 8-byte node headers.)
struct PageCheck {
    let fd: Int32
    let pageSize: Int
    let lastPage: UInt64

    // Page flags and node flags of liblmdb 0.9.
    static let branch: UInt16 = 0x01, leaf: UInt16 = 0x02, leaf2: UInt16 = 0x20
    static let bigData: UInt16 = 0x01, subData: UInt16 = 0x02
    static let headerSize = 16, nodeHeaderSize = 8, dbRecordSize = 48
    /// liblmdb's `CURSOR_STACK`: no tree is deeper.
    static let maxDepth = 32

    struct Damage: Error { let reason: String }

    /// Checks the main tree rooted at `root` and the root page of every named database in it.
    func checkMainTree(root: UInt64) -> String? {
        guard root != LMDBHeader.invalidPage else { return nil }
        var visited: Set<Int> = []  // page numbers; `Int`, not `UInt64`, for the reason given at LMDBLayout.entitiesByID
        var namedRoots: [UInt64] = []
        do {
            try walk(root, depth: 0, visited: &visited) { page, node, offset in
                // A named database's record: an MDB_db whose last field is the root page.
                guard node.flags & Self.subData != 0 else { return }
                guard node.dataSize == Self.dbRecordSize else {
                    throw Damage(reason: "a named database's record on page \(page) has \(node.dataSize) bytes, not \(Self.dbRecordSize)")
                }
                namedRoots.append(node.page.u64(offset + Self.nodeHeaderSize + node.keySize + 40))
            }
            for named in namedRoots where named != LMDBHeader.invalidPage {
                _ = try read(named, depth: 0)
            }
        } catch let damage as Damage {
            return damage.reason
        } catch {
            return "\(error)"
        }
        return nil
    }

    /// One node of a page, as far as the checks need it.
    struct Node {
        let page: [UInt8]
        let flags: UInt16
        let keySize: Int
        let dataSize: Int
        let child: UInt64
    }

    /// Visits every leaf node of the tree under `pageNumber`, checking every page on the way.
    private func walk(
        _ pageNumber: UInt64, depth: Int, visited: inout Set<Int>, _ leafNode: (UInt64, Node, Int) throws -> Void
    ) throws {
        guard depth < Self.maxDepth else { throw Damage(reason: "the tree through page \(pageNumber) is deeper than \(Self.maxDepth) levels") }
        guard visited.insert(Int(truncatingIfNeeded: pageNumber)).inserted else { throw Damage(reason: "page \(pageNumber) is reached twice (a loop in the tree)") }
        let (bytes, nodes) = try read(pageNumber, depth: depth)
        for (offset, node) in nodes {
            if node.child != 0 {
                try walk(node.child, depth: depth + 1, visited: &visited, leafNode)
            } else {
                try leafNode(pageNumber, Node(page: bytes, flags: node.flags, keySize: node.keySize, dataSize: node.dataSize, child: 0), offset)
            }
        }
    }

    /// Reads page `pageNumber` and checks its header and every node's bounds; returns the nodes (with their
    /// offsets) of branch and ordinary leaf pages.
    private func read(_ pageNumber: UInt64, depth: Int) throws -> ([UInt8], [(Int, Node)]) {
        guard pageNumber >= 2, pageNumber <= lastPage else {
            throw Damage(reason: "a tree points to page \(pageNumber), outside the file's pages 2...\(lastPage)")
        }
        var page = [UInt8](repeating: 0, count: pageSize)
        let offset = pageNumber.multipliedReportingOverflow(by: UInt64(pageSize))
        guard !offset.overflow, offset.partialValue <= UInt64(Int64.max) else { throw Damage(reason: "page \(pageNumber) is out of range") }
        let n = page.withUnsafeMutableBytes { pread(fd, $0.baseAddress, pageSize, off_t(offset.partialValue)) }
        guard n == pageSize else { throw Damage(reason: "page \(pageNumber) cannot be read whole") }
        guard page.u64(0) == pageNumber else { throw Damage(reason: "page \(pageNumber) says it is page \(page.u64(0))") }
        let flags = page.u16(10)
        let isBranch = flags & Self.branch != 0
        guard isBranch != (flags & Self.leaf != 0) else { throw Damage(reason: "page \(pageNumber) is neither a branch nor a leaf page (flags \(flags))") }
        if flags & Self.leaf2 != 0 { return (page, []) }  // fixed-size keys, no nodes (DUPFIXED data)
        let lower = Int(page.u16(12)), upper = Int(page.u16(14))
        guard lower >= Self.headerSize, lower <= upper, upper <= pageSize, (lower - Self.headerSize) % 2 == 0 else {
            throw Damage(reason: "page \(pageNumber) has impossible bounds (lower \(lower), upper \(upper))")
        }
        let count = (lower - Self.headerSize) / 2
        guard count > 0 || depth == 0 else { throw Damage(reason: "page \(pageNumber) is empty below the root") }
        var nodes: [(Int, Node)] = []
        nodes.reserveCapacity(count)
        for i in 0..<count {
            let at = Int(page.u16(Self.headerSize + 2 * i))
            guard at >= upper, at + Self.nodeHeaderSize <= pageSize else {
                throw Damage(reason: "page \(pageNumber): node \(i) starts at \(at), outside the page's node area")
            }
            let lo = UInt64(page.u16(at)), hi = UInt64(page.u16(at + 2)), nodeFlags = page.u16(at + 4)
            let keySize = Int(page.u16(at + 6))
            var end = at + Self.nodeHeaderSize + keySize
            var child: UInt64 = 0
            var dataSize = 0
            if isBranch {
                child = lo | hi << 16 | UInt64(nodeFlags) << 32
                guard child >= 2, child <= lastPage else {
                    throw Damage(reason: "page \(pageNumber): node \(i) points to page \(child), outside the file")
                }
            } else {
                dataSize = Int(lo | hi << 16)
                end += nodeFlags & Self.bigData != 0 ? 8 : dataSize
            }
            guard end <= pageSize else {
                throw Damage(reason: "page \(pageNumber): node \(i) runs past the end of the page")
            }
            nodes.append((at, Node(page: [], flags: nodeFlags, keySize: keySize, dataSize: dataSize, child: child)))
        }
        return (page, nodes)
    }
}
