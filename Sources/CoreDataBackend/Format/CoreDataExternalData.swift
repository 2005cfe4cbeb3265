import Foundation
@_spi(BackendKit) import StoreAPI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Core Data's external binary data: the values of attributes with `allowsExternalBinaryDataStorage` that live in
/// files beside the store rather than in its tables.
///
/// **Everything here is unverified** (no corpus store has external data; see the format reference, §1 and §5), and
/// this is the one place that decides it:
/// - the column holds a marker byte, then either the value itself (``inlineMarker``) or the name of a file
///   (``fileMarker``), UTF-8 and NUL-terminated;
/// - the files are in ``folderName`` inside the store's `.Name_SUPPORT` folder
///   (``CoreDataStoreBackend/supportFolder(of:)``), one file per value, named by an uppercase UUID string;
/// - a value goes to a file when it is larger than ``threshold`` (Core Data's own limit is not documented; about
///   1 MB is the figure reported).
///
/// Writing keeps the order that loses nothing: a new file is complete and durable (written under a staging name,
/// fsynced, renamed, the folder fsynced) before the transaction that refers to it commits, and a file the store no
/// longer refers to is removed only after that commit. A crash in between leaves an unreferenced file, which is
/// harmless; never a reference without its file.
enum CoreDataExternalData {
    /// The marker of a value stored in the column itself.
    static let inlineMarker: UInt8 = 1
    /// The marker of a value stored in a file, whose name follows.
    static let fileMarker: UInt8 = 2
    /// The folder of the value files inside `.Name_SUPPORT`.
    static let folderName = "_EXTERNAL_DATA"
    /// Values with more bytes than this are written to files; smaller ones stay in the column.
    static let threshold = 1 << 20

    /// The folder of the value files of the store at `url`.
    static func folder(ofStoreAt url: URL) -> URL {
        CoreDataStoreBackend.supportFolder(of: url).appendingPathComponent(folderName)
    }

    /// A name for a new value file.
    static func newFileName() -> String { UUID().uuidString.uppercased() }

    /// What a column of an attribute that allows external storage holds.
    enum Content: Hashable {
        /// No bytes at all: an empty value.
        case empty
        /// The value follows the marker.
        case inline
        /// The value is in the file of this name.
        case file(String)
        /// Not something Core Data writes; the reason.
        case invalid(String)
    }

    /// Reads the marker (and file name) of a column's bytes.
    static func content(of bytes: [UInt8]) -> Content {
        guard let marker = bytes.first else { return .empty }
        switch marker {
        case inlineMarker:
            return .inline
        case fileMarker:
            let nameBytes = bytes.dropFirst().prefix { $0 != 0 }
            guard nameBytes.count + 1 < bytes.count else { return .invalid("a file reference without its NUL") }
            guard let name = String(validating: nameBytes, as: UTF8.self) else {
                return .invalid("a file reference that is not UTF-8")
            }
            guard !name.isEmpty, !name.contains("/"), name != "..", name != "." else {
                return .invalid("a bad file name '\(name)'")
            }
            return .file(name)
        default:
            return .invalid("unknown external storage marker \(marker)")
        }
    }

    /// The value a column of an attribute that allows external storage holds: the inline bytes, or the file's.
    ///
    /// - Throws: ``StoreError/corruptStore(_:reason:)`` naming the row, the attribute and, for a missing or
    ///   unreadable file, the file's path.
    static func decode(
        _ bytes: [UInt8], store url: URL, table: String, primaryKey pk: Int64, attribute: String
    ) throws(StoreError) -> Data {
        let place = "\(table) row Z_PK \(pk), \(attribute)"
        switch content(of: bytes) {
        case .empty:
            return Data()
        case .inline:
            return Data(bytes.dropFirst())
        case .invalid(let why):
            throw .corruptStore(url, reason: "\(place): \(why)")
        case .file(let name):
            let file = folder(ofStoreAt: url).appendingPathComponent(name)
            do {
                // Read, never mapped: a file another process truncates under a mapping would crash the reader.
                return try Data(contentsOf: file)
            } catch {
                let why = FileManager.default.fileExists(atPath: file.path)
                    ? "cannot be read (\(error.localizedDescription))" : "is missing"
                throw .corruptStore(url, reason: "\(place): external data file \(file.path) \(why)")
            }
        }
    }

    /// The column bytes of a value kept in the column.
    static func inlineColumn(_ data: Data) -> [UInt8] { [inlineMarker] + Array(data) }

    /// The column bytes of a reference to the file `name`.
    static func fileColumn(_ name: String) -> [UInt8] { [fileMarker] + Array(name.utf8) + [0] }

    // MARK: References

    /// A column that may refer to a value file.
    struct Column: Hashable {
        var table: String
        var column: String
        /// `Entity.attribute`, for messages.
        var attribute: String
    }

    /// A row's reference to a value file.
    struct Reference: Hashable {
        var column: Column
        var primaryKey: Int64
        var content: Content
    }

    /// The columns of `layout` holding attributes of `schema` that allow external storage.
    static func columns(_ layout: CoreDataLayout, schema: Schema) -> [Column] {
        var out: [Column] = []
        for table in layout.tables {
            guard case .entity = table.kind else { continue }
            for column in table.columns {
                guard case .attribute(let owner, let name) = column.role,
                    schema.entity(named: owner)?.attribute(name)?.allowsExternalBinaryDataStorage == true
                else { continue }
                out.append(Column(table: table.name, column: column.name, attribute: owner + "." + name))
            }
        }
        return out
    }

    /// The longest value a save looks at for a file reference (``CoreDataExternalReferenceScanner``): a reference
    /// is a marker, a name and a NUL, far below it.
    static let longestReference = 1024

    /// Every row of `columns` whose value is not inline: file references and invalid values (empty and inline
    /// values are left out). `rows` runs a query on the store; SQLite loads every value whole to look at it.
    static func references(
        in columns: [Column], rows: (String) throws(StoreError) -> [[SQLiteValue]]
    ) throws(StoreError) -> [Reference] {
        var out: [Reference] = []
        for c in columns {
            let column = CoreDataSQL.quoted(c.column)
            // Inline values (marker 1) and NULLs are skipped by SQLite; anything else is looked at.
            let sql = "SELECT Z_PK, \(column) FROM \(CoreDataSQL.quoted(c.table)) WHERE \(column) IS NOT NULL "
                + "AND length(\(column)) > 0 AND substr(CAST(\(column) AS BLOB), 1, 1) <> x'01'"
            for row in try rows(sql) {
                guard row.count == 2, let pk = row[0].int else { continue }
                let content: Content
                if case .blob(let b) = row[1] {
                    content = Self.content(of: b)
                } else {
                    content = .invalid("a \(row[1]) rather than a blob")
                }
                out.append(Reference(column: c, primaryKey: pk, content: content))
            }
        }
        return out
    }

    // MARK: Files

    /// Writes `data` as the new file `name` in `folder`, durably: under a staging name, fsynced, renamed, and the
    /// folder fsynced (created first, with its parents, when missing).
    static func writeFile(_ data: Data, named name: String, in folder: URL, store url: URL) throws(StoreError) {
        do {
            try createFolder(folder)
            try AtomicFile.write(to: folder.appendingPathComponent(name)) { staging in
                try data.write(to: staging)
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw .io(folder.appendingPathComponent(name), operation: "writing external data of \(url.path)",
                      reason: error.localizedDescription)
        }
    }

    /// Creates `folder` and its missing parents, fsyncing each parent so the new entries survive a crash.
    static func createFolder(_ folder: URL) throws {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        if fm.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue { return }
        try createFolder(folder.deletingLastPathComponent())
        try fm.createDirectory(at: folder, withIntermediateDirectories: false)
        try AtomicFile.fsyncDirectory(of: folder)
    }

    /// Whether the file at `url` holds exactly `data`.
    static func file(_ url: URL, holds data: Data) -> Bool {
        guard let size = (try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber,
            size.intValue == data.count, let stored = try? Data(contentsOf: url)
        else { return false }
        return stored == data
    }

    /// Copies the folder tree `source` to the new path `destination`, each file's bytes fsynced and each folder
    /// fsynced once its entries are in place. Symbolic links and other special files are not copied.
    static func copyTree(_ source: URL, to destination: URL) throws(StoreError) {
        let fm = FileManager.default
        do {
            try fm.createDirectory(at: destination, withIntermediateDirectories: false)
            for name in try fm.contentsOfDirectory(atPath: source.path).sorted() {
                let from = source.appendingPathComponent(name), to = destination.appendingPathComponent(name)
                var info = stat()
                guard lstat(from.path, &info) == 0 else { continue }
                switch info.st_mode & S_IFMT {
                case S_IFDIR:
                    try copyTree(from, to: to)
                case S_IFREG:
                    let data = try Data(contentsOf: from)
                    try data.write(to: to)
                    try AtomicFile.fsync(path: to)
                default:
                    continue
                }
            }
            try AtomicFile.fsync(path: destination)
        } catch let error as StoreError {
            throw error
        } catch {
            throw .io(destination, operation: "copying \(source.path)", reason: error.localizedDescription)
        }
        try? AtomicFile.fsyncDirectory(of: destination)
    }
}
