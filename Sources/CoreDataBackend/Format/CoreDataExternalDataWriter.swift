import Foundation
@_spi(BackendKit) import StoreAPI

/// The external binary data of one save (see ``CoreDataExternalData`` for the format and the write order).
///
/// A save makes one writer and, inside its transaction:
/// 1. ``loadReferences()`` before changing any row: the files the store refers to now;
/// 2. ``encode(_:_:table:column:primaryKey:)`` for every value of an attribute that allows external storage: a
///    large value becomes a new, durable file (or keeps the file it had, when that file holds the same bytes);
/// 3. after the commit, ``removeUnreferenced()`` deletes the files the store referred to before and no longer
///    does; after a rollback, ``discardWritten()`` deletes the files this save wrote.
///
/// For a store whose model has no such attribute every step does nothing.
final class CoreDataExternalDataWriter {
    let storeURL: URL
    let columns: [CoreDataExternalData.Column]
    private var before: [Key: String] = [:]
    private var written: [String] = []

    private struct Key: Hashable {
        var table: String
        var column: String
        var primaryKey: Int64
    }

    init(store url: URL, layout: CoreDataLayout, schema: Schema) {
        storeURL = url
        columns = CoreDataExternalData.columns(layout, schema: schema)
    }

    private var folder: URL { CoreDataExternalData.folder(ofStoreAt: storeURL) }

    /// Notes the file every row refers to before the save changes anything (called inside the save's write
    /// transaction, before its first change: what is committed is what the save starts from).
    func loadReferences() throws(StoreError) {
        guard !columns.isEmpty else { return }
        before = [:]
        for r in try CoreDataExternalReferenceScanner(storeURL).references(in: columns) {
            if case .file(let name) = r.content {
                before[Key(table: r.column.table, column: r.column.column, primaryKey: r.primaryKey)] = name
            }
        }
    }

    /// The column value of `value` for an attribute that allows external storage, or `nil` for any other
    /// attribute or a value that is not binary (the caller encodes those).
    func encode(
        _ value: StoreValue, _ attribute: AttributeDescription, table: String, column: String, primaryKey pk: Int64
    ) throws(StoreError) -> SQLiteValue? {
        guard attribute.allowsExternalBinaryDataStorage, case .binary(let data) = value else { return nil }
        guard data.count > CoreDataExternalData.threshold else { return .blob(CoreDataExternalData.inlineColumn(data)) }
        if let name = before[Key(table: table, column: column, primaryKey: pk)],
            CoreDataExternalData.file(folder.appendingPathComponent(name), holds: data)
        {
            return .blob(CoreDataExternalData.fileColumn(name))
        }
        let name = CoreDataExternalData.newFileName()
        try CoreDataExternalData.writeFile(data, named: name, in: folder, store: storeURL)
        written.append(name)
        return .blob(CoreDataExternalData.fileColumn(name))
    }

    /// After the commit: deletes the files referred to before the save and no longer. A file that cannot be
    /// deleted stays, unreferenced and harmless.
    func removeUnreferenced() {
        guard !before.isEmpty else { return }
        guard let now = try? CoreDataExternalReferenceScanner(storeURL).references(in: columns) else { return }
        var kept: Set<String> = []
        for r in now { if case .file(let name) = r.content { kept.insert(name) } }
        for name in Set(before.values).subtracting(kept) {
            try? FileManager.default.removeItem(at: folder.appendingPathComponent(name))
        }
        before = [:]
    }

    /// After a rollback: deletes the files this save wrote, which nothing refers to.
    func discardWritten() {
        for name in written { try? FileManager.default.removeItem(at: folder.appendingPathComponent(name)) }
        written = []
    }
}
