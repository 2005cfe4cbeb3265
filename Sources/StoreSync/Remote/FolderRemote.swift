import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A remote in a directory: a local folder, a network share or a folder a file-syncing service mirrors.
///
/// Layout under `<directory>/<container>/`: an `identity` file naming the dataset, and `changes/`, one file per
/// change file name. Files are only ever created, never edited: each is written to a temporary name and linked to
/// its final name, which fails if the name exists, so a reader never sees a partial file and two writers can never
/// overwrite each other. Names that are not change file names (temporary files, a sync service's conflict copies,
/// anything foreign) are ignored.
///
/// The cursor remembers, per peer, the last sequence applied; a peer's files are listed only without gaps, so a
/// file that arrives late through a mirroring service is waited for, never skipped.
public final class FolderRemote: SyncRemote {
    /// The dataset's directory: `<directory>/<container>`.
    public let root: URL
    private var changes: URL { root.appendingPathComponent("changes", isDirectory: true) }

    /// A remote in `directory`, which must exist, for `container` (a plain name, the sub-directory used).
    public init(directory: URL, container: String) throws {
        guard !container.isEmpty, !container.contains("/"), container != ".", container != "..", !container.hasPrefix(".")
        else {
            throw SyncError.unsupportedRemote(directory.path, reason: "'\(container)' is not a usable container name "
                + "(a plain name without '/' that does not start with '.')")
        }
        self.root = directory.appendingPathComponent(container, isDirectory: true)
    }

    /// The container directory's path.
    public var displayName: String { root.path }

    /// The dataset identity kept in the container's `identity` file, created by the first peer.
    public func identity() async throws -> String {
        try prepare()
        let file = root.appendingPathComponent("identity")
        if let text = try? String(contentsOf: file, encoding: .utf8), let id = UUID(uuidString: text.trimmingCharacters(in: .whitespacesAndNewlines)) {
            return id.uuidString
        }
        // First peer: publish a new identity; if another peer published one first, theirs is the identity.
        _ = try publish(Data(UUID().uuidString.utf8), at: file)
        guard let text = try? String(contentsOf: file, encoding: .utf8),
              let id = UUID(uuidString: text.trimmingCharacters(in: .whitespacesAndNewlines))
        else { throw SyncError.remote(displayName, reason: "the identity file is not a UUID; is this a sync folder?") }
        return id.uuidString
    }

    /// Change files after the cursor, per peer in sequence order without gaps.
    public func list(after cursor: SyncCursor?) async throws -> RemoteListing {
        try prepare()
        var seen = try cursor.map(Self.positions) ?? [:]
        let entries: [String]
        do { entries = try FileManager.default.contentsOfDirectory(atPath: changes.path) } catch {
            throw SyncError.remote(displayName, reason: "cannot list change files: \(error.localizedDescription)")
        }
        var byPeer: [UUID: Set<Int64>] = [:]
        for entry in entries {
            guard let name = ChangeFileName(fileName: entry) else { continue }
            byPeer[name.peer, default: []].insert(name.sequence)
        }
        var names: [ChangeFileName] = []
        for peer in byPeer.keys.sorted(by: { $0.uuidString < $1.uuidString }) {
            let sequences = byPeer[peer] ?? []
            var next = (seen[peer.uuidString] ?? 0) + 1
            while sequences.contains(next) {
                names.append(ChangeFileName(peer: peer, sequence: next))
                next += 1
            }
            if next > 1 { seen[peer.uuidString] = next - 1 }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let text = String(decoding: try encoder.encode(seen), as: UTF8.self)
        return RemoteListing(names: names, cursor: SyncCursor(rawValue: text))
    }

    /// The file's bytes.
    public func fetch(_ name: ChangeFileName) async throws -> Data {
        do { return try Data(contentsOf: changes.appendingPathComponent(name.description)) } catch {
            throw SyncError.remote(displayName, reason: "cannot read \(name): \(error.localizedDescription)")
        }
    }

    /// Writes the file by temporary file and link; an existing name is left as it is.
    public func put(_ data: Data, as name: ChangeFileName) async throws -> PutOutcome {
        try prepare()
        return try publish(data, at: changes.appendingPathComponent(name.description)) ? .created : .alreadyExists
    }

    /// Creates the container's directories inside the existing remote directory.
    private func prepare() throws {
        let parent = root.deletingLastPathComponent()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: parent.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw SyncError.remote(parent.path, reason: "the remote folder does not exist or is not reachable "
                + "(for a new remote, create the folder first: it is never created here, so that a share that is not "
                + "mounted is not taken for an empty remote)")
        }
        do { try FileManager.default.createDirectory(at: changes, withIntermediateDirectories: true) } catch {
            throw SyncError.remote(displayName, reason: "cannot create the change folder: \(error.localizedDescription)")
        }
    }

    /// Writes `data` under `file` if no file has that name: a synced temporary file, then a hard link, which is
    /// atomic and refuses an existing name. Returns whether this call created it.
    private func publish(_ data: Data, at file: URL) throws -> Bool {
        let temp = file.deletingLastPathComponent().appendingPathComponent(".tmp-\(UUID().uuidString)")
        defer { unlink(temp.path) }
        do {
            try data.write(to: temp)
            let handle = try FileHandle(forWritingTo: temp)
            try handle.synchronize()
            try handle.close()
        } catch {
            throw SyncError.remote(displayName, reason: "cannot write \(file.lastPathComponent): \(error.localizedDescription)")
        }
        if link(temp.path, file.path) == 0 { return true }
        let code = errno
        if code == EEXIST { return false }
        throw SyncError.remote(displayName, reason: "cannot publish \(file.lastPathComponent): \(String(cString: strerror(code)))")
    }

    private static func positions(_ cursor: SyncCursor) throws -> [String: Int64] {
        guard let map = try? JSONDecoder().decode([String: Int64].self, from: Data(cursor.rawValue.utf8)) else {
            throw SyncError.remote("folder", reason: "'\(cursor.rawValue)' is not a cursor of a folder remote")
        }
        return map
    }
}
