import Foundation

extension AtomicFile {
    /// Removes what ``removeStaleStaging(near:)`` misses: staging made *for a staging path*.
    ///
    /// An operation builds its store at a staging path, and the backend doing the building often stages its own
    /// work beside that path in turn (SQLite's creator and backup copy, LMDB's copy, an atomic store's first
    /// write), giving names like `<prefix><UUID>-<prefix><UUID>-library.sqlite`. A process killed during that
    /// inner step leaves such a name behind; it belongs to the destination just as much and is removed with it.
    static func removeNestedStaging(near url: URL) {
        let dir = url.deletingLastPathComponent()
        let target = url.lastPathComponent  // once, not per name (see removeStaleStaging(near:))
        for name in stagingNames(in: dir) where isNestedStaging(name, of: target) {
            removeLeftover(dir.appendingPathComponent(name))
        }
    }

    /// Whether `name` is a staging name (one level or more) whose inner name is a staging name for `target`.
    static func isNestedStaging(_ name: String, of target: String) -> Bool {
        var inner = Substring(name)
        // Strip one level at a time: the prefix, a UUID and a dash.
        while inner.hasPrefix(stagingPrefix) {
            let rest = inner.dropFirst(stagingPrefix.count)
            guard rest.count > 37, UUID(uuidString: String(rest.prefix(36))) != nil, rest.dropFirst(36).first == "-" else { return false }
            inner = rest.dropFirst(37)
            if inner.hasPrefix(stagingPrefix), stagedName(String(inner), belongsTo: target) { return true }
        }
        return false
    }
}
