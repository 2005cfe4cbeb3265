import Foundation
import StoreAPI

/// Drives every read-only entry point of a backend over a (possibly damaged) store file, and the checks that
/// make "it did not crash" a stronger statement: errors name the file, and whatever opens can be copied to
/// another store and read back identically.
enum StoreProbe {
    static let readOnly = StoreOptions(isReadOnly: true, createIfMissing: false, timeout: 0.5)

    /// Sniffs with every backend and detects, then reads metadata, checks integrity, opens read-only and reads
    /// every record, count, key lookup, page and history transaction. Returns the number of records read.
    /// The first error of the backend is rethrown after checking that it names the file.
    @discardableResult
    static func readEverything(_ url: URL, with backend: any StoreBackend) throws -> Int {
        for b in FuzzBackends.persistent {
            _ = b.sniff(url)
            _ = b.ownedFiles(ofStoreAt: url)
        }
        do { _ = try FuzzBackends.registry.detectBackend(at: url) } catch {}
        var first: (any Error)?
        do { _ = try backend.readMetadata(at: url) } catch { first = first ?? error }
        do { _ = try backend.checkIntegrity(at: url) } catch { first = first ?? error }
        var count = 0
        do { count = try readRecords(url, with: backend) } catch { first = first ?? error }
        if let first {
            try requireNamesFile(first, url)
            throw first
        }
        return count
    }

    /// Opens read-only and reads everything through the ``PersistentStore`` interface.
    static func readRecords(_ url: URL, with backend: any StoreBackend) throws -> Int {
        let store = try backend.open(at: url, options: readOnly, creating: nil)
        defer { try? store.close() }
        var count = 0
        for e in store.metadata.schema.entities {
            let all = try store.fetch(FetchRequest(entity: e.name))
            count += e.isAbstract ? 0 : all.filter { $0.entity == e.name }.count
            _ = try store.count(FetchRequest(entity: e.name))
            _ = try store.records(withKeys: all.prefix(5).map(\.primaryKey) + [-1, .max], root: e.rootName)
            if !e.isAbstract { _ = try store.scan(entity: e.name, after: nil, limit: 3) }
            if let a = e.attributes.first(where: { !$0.isTransient }) {
                let request = FetchRequest(entity: e.name, predicate: try FetchPredicate("%K != nil", .string(a.name)),
                                           sortDescriptors: [SortKey(a.name, ascending: false)], offset: 1, limit: 5)
                _ = try store.fetch(request)
            }
        }
        _ = try store.history(after: nil)
        return count
    }

    /// A thrown error must say which file it is about (a person has to find the file to fix it).
    static func requireNamesFile(_ error: any Error, _ url: URL) throws {
        let text = "\(error)"
        guard !text.contains(url.lastPathComponent) else { return }
        if case StoreError.cancelled = error { return }
        throw FuzzViolation("the error does not name the file \(url.lastPathComponent): \(type(of: error)).\(FuzzErrors.caseName(error)): \(text)")
    }

    /// Copies the store at `url` record by record into a new store of `type` beside it, then checks both read the
    /// same. A typed error from the copy is acceptable (the damage may only show when everything is read); a
    /// copy that succeeds but differs is a ``FuzzViolation``.
    static func copyMustMatch(_ url: URL, with backend: any StoreBackend, to type: String, at destination: URL) throws {
        let operations = StoreOperations(registry: FuzzBackends.registry)
        defer { try? operations.destroyStore(at: destination, type: type) }
        try operations.copyStore(from: url, sourceType: backend.typeIdentifier, to: destination, type: type,
                                 options: StoreOperations.CopyOptions(allowFastCopy: false))
        let target = try FuzzBackends.registry.backend(for: type)
        let a = try backend.open(at: url, options: readOnly, creating: nil)
        defer { try? a.close() }
        let b = try target.open(at: destination, options: readOnly, creating: nil)
        defer { try? b.close() }
        let differences = try StoreComparison().compare(a, b)
        guard differences.isIdentical else {
            throw FuzzViolation("the \(backend.typeIdentifier) store opened, but its copy as \(type) differs: \(differences.summary)")
        }
    }
}
