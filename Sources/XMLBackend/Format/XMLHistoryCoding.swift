import Foundation
import StoreAPI

/// History transactions in XML stores: the `<history>` element after the objects (see ``XMLStoreFormat``).
///
/// ```xml
/// <transaction token="4" timestamp="757382400.25">
///     <author>importer</author>
///     <context>import</context>
///     <process>MyApp</process>
///     <bundle>com.example.MyApp</bundle>
///     <change kind="update" entity="Book" pk="7" gid="91D3…"><changed>title</changed></change>
///     <change kind="delete" entity="Book" pk="8" gid="…"><tombstone name="isbn">978-…</tombstone></change>
/// </transaction>
/// ```
/// Free text (author, context, process and bundle names, changed keys, tombstone values) goes in elements so it can
/// be escaped like attribute values; each of the four names appears at most once and only when the transaction has it.
enum XMLHistoryCoding {
    static func write(_ t: HistoryTransaction, to w: LibXMLWriter) throws {
        try w.startElement("transaction")
        try w.attribute("token", String(t.token))
        try w.attribute("timestamp", XMLValueText.text(for: t.timestamp.timeIntervalSinceReferenceDate))
        let names = namedElements(of: t)
        for (element, value) in names { try XMLStoreWriter.escapableTextElement(w, element, value) }
        for c in t.changes {
            try XMLStoreWriter.checkName(c.entity)
            try w.startElement("change")
            try w.attribute("kind", c.kind.rawValue)
            try w.attribute("entity", c.entity)
            try w.attribute("pk", String(c.primaryKey))
            try w.attribute("gid", c.globalID.uuidString)
            for key in c.changedKeys { try XMLStoreWriter.escapableTextElement(w, "changed", key) }
            for (name, value) in c.tombstone.sorted(by: { $0.key < $1.key }) {
                try XMLStoreWriter.checkName(name)
                try XMLStoreWriter.escapableTextElement(w, "tombstone", value, attributes: [("name", name)])
            }
            if c.changedKeys.isEmpty && c.tombstone.isEmpty { try w.endEmptyElement() } else { try w.endElement(container: true) }
        }
        try w.endElement(container: !t.changes.isEmpty || !names.isEmpty)
    }

    /// The transaction's names that it has, as (element, text), in the order they are written.
    private static func namedElements(of t: HistoryTransaction) -> [(StaticString, String)] {
        let all: [(StaticString, String?)] = [
            ("author", t.author), ("context", t.contextName), ("process", t.processName), ("bundle", t.bundleIdentifier),
        ]
        return all.compactMap { element, value in value.map { (element, $0) } }
    }

    /// Reads the transactions of the `<history>` element the reader is on, in order.
    static func read(_ r: LibXMLReader, _ body: (HistoryTransaction) throws -> Void) throws {
        guard !r.isEmptyElement else { return }
        let depth = r.depth
        var lastToken: Int64?
        while try r.nextChildElement(parentDepth: depth) {
            guard r.name == "transaction" else { throw r.corrupt("unexpected <\(r.name)> in <history>") }
            let line = r.line
            guard let token = r.attribute("token").flatMap({ Int64($0) }) else {
                throw r.corrupt("<transaction> without a valid token")
            }
            guard let seconds = r.attribute("timestamp").flatMap(XMLValueText.double) else {
                throw r.corrupt("<transaction> without a valid timestamp")
            }
            if let lastToken, token <= lastToken {
                throw r.corrupt("history token \(token) does not follow \(lastToken)")
            }
            lastToken = token
            var t = HistoryTransaction(token: token, timestamp: Date(timeIntervalSinceReferenceDate: seconds), author: nil, changes: [])
            if !r.isEmptyElement {
                let tDepth = r.depth
                while try r.nextChildElement(parentDepth: tDepth) {
                    switch r.name {
                    case "author":
                        guard t.author == nil else { throw r.corrupt("transaction \(token) has two authors") }
                        t.author = try readEscapableText(r)
                    case "context":
                        guard t.contextName == nil else { throw r.corrupt("transaction \(token) has two context names") }
                        t.contextName = try readEscapableText(r)
                    case "process":
                        guard t.processName == nil else { throw r.corrupt("transaction \(token) has two process names") }
                        t.processName = try readEscapableText(r)
                    case "bundle":
                        guard t.bundleIdentifier == nil else {
                            throw r.corrupt("transaction \(token) has two bundle identifiers")
                        }
                        t.bundleIdentifier = try readEscapableText(r)
                    case "change":
                        t.changes.append(try readChange(r))
                    default:
                        throw r.corrupt("unexpected <\(r.name)> in <transaction> (line \(line))")
                    }
                }
            }
            try body(t)
        }
    }

    private static func readChange(_ r: LibXMLReader) throws -> HistoryChange {
        guard let kind = r.attribute("kind").flatMap(HistoryChange.Kind.init(rawValue:)) else {
            throw r.corrupt("<change> without a valid kind (insert, update or delete)")
        }
        guard let entity = r.attribute("entity"), !entity.isEmpty else { throw r.corrupt("<change> without an entity") }
        guard let pk = r.attribute("pk").flatMap({ Int64($0) }) else { throw r.corrupt("<change> without a valid pk") }
        guard let gid = r.attribute("gid").flatMap(UUID.init(uuidString:)) else {
            throw r.corrupt("<change> without a valid gid")
        }
        var change = HistoryChange(kind: kind, entity: entity, primaryKey: pk, globalID: gid)
        guard !r.isEmptyElement else { return change }
        let depth = r.depth
        while try r.nextChildElement(parentDepth: depth) {
            switch r.name {
            case "changed":
                change.changedKeys.append(try readEscapableText(r))
            case "tombstone":
                guard let name = r.attribute("name") else { throw r.corrupt("<tombstone> without a name") }
                guard change.tombstone[name] == nil else { throw r.corrupt("tombstone value '\(name)' appears twice") }
                change.tombstone[name] = try readEscapableText(r)
            default:
                throw r.corrupt("unexpected <\(r.name)> in <change>")
            }
        }
        return change
    }

    /// The text of the current element, unescaped when it is marked `enc="escaped"`.
    static func readEscapableText(_ r: LibXMLReader) throws -> String {
        let enc = r.attribute("enc")
        let text = try r.readText()
        guard let enc else { return text }
        guard enc == "escaped" else { throw r.corrupt("unknown text encoding enc=\"\(enc)\"") }
        guard let plain = XMLTextEscaping.unescape(text) else { throw r.corrupt("invalid escape sequence in escaped text") }
        return plain
    }
}
