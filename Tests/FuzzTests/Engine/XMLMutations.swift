import StoreTestSupport

/// XML-aware mutations: whole tags and elements duplicated, removed, moved or renamed; attribute values and text
/// replaced with interesting values; DTDs, entity references, CDATA and deep nesting inserted.
enum XMLMutations {
    static let elementNames = [
        "database", "databaseInfo", "version", "UUID", "nextObjectID", "metadata", "storeMetadata", "plist", "dict",
        "key", "string", "integer", "real", "true", "false", "data", "date", "array", "object", "attribute",
        "relationship", "history", "transaction", "author", "change", "changed", "tombstone",
        "model", "entity", "userInfo", "entry", "uniquenessConstraints", "uniquenessConstraint", "constraint",
        "configuration", "memberEntity", "elements", "element", "fetchRequest", "fetchedProperty", "fetchIndex",
        "fetchIndexElement", "compoundIndexes", "composite", "compositeAttribute", "a",
    ]

    static let attributeNames = [
        "name", "type", "id", "pk", "gid", "idrefs", "destination", "enc", "format", "formatVersion", "token",
        "timestamp", "kind", "entity", "attributeType", "optional", "defaultValueString", "toMany", "ordered",
        "deletionRule", "inverseName", "inverseEntity", "destinationEntity", "minCount", "maxCount", "parentEntity",
        "isAbstract", "representedClassName", "transient", "valueTransformerName", "syncable", "key", "value",
        "versionHashModifier", "elementID", "derived", "derivationExpression", "xmlns", "xmlns:x",
    ]

    static let attributeValues = [
        "string", "int16", "int32", "int64", "decimal", "double", "float", "bool", "date", "binary", "uuid", "uri",
        "transformable", "complex", "escaped", "rot13", "storeapi-json", "1", "99", "insert", "update", "delete",
        "Integer 16", "Integer 32", "Integer 64", "Decimal", "Double", "Float", "String", "Boolean", "Date",
        "Binary", "UUID", "URI", "Transformable", "Undefined", "ObjectID", "Composite", "YES", "NO", "Cascade",
        "Nullify", "Deny", "No Action", "0/0", "0/1", "1/1", "2/5", "-1", "z1 z2", "z1 z1", "z2 z99",
    ]

    /// Markup a hostile or broken file might hold.
    static let snippets = [
        "<!DOCTYPE database [<!ENTITY e \"x\">]>", "<!DOCTYPE database SYSTEM \"file:///etc/passwd\">",
        "<!DOCTYPE database [<!ENTITY xxe SYSTEM \"file:///etc/hostname\">]>",
        "<!DOCTYPE database [<!ENTITY % p SYSTEM \"http://127.0.0.1:9/x.dtd\"> %p;]>",
        "<!DOCTYPE database [<!ENTITY a \"&b;\"><!ENTITY b \"&a;\">]>",
        "<!DOCTYPE database [<!ENTITY l0 \"lollollol\"><!ENTITY l1 \"&l0;&l0;&l0;&l0;&l0;&l0;&l0;&l0;\"><!ENTITY l2 \"&l1;&l1;&l1;&l1;&l1;&l1;&l1;&l1;\">]>",
        "<!DOCTYPE database [<!ATTLIST object type CDATA \"Injected\">]>",
        "&e;", "&xxe;", "&l2;", "&a;", "&amp;", "&lt;", "&#0;", "&#x1;", "&#xFFFE;", "&#xD800;", "&#1114112;",
        "&#38;#38;", "&#13;", "&", "&;", "&#;", "<![CDATA[x]]>", "<![CDATA[", "]]>", "<!---->", "<!-- -- -->",
        "<?pi x?>", "<?xml version=\"1.0\"?>", "<?xml version=\"1.0\" encoding=\"UTF-16\"?>",
        "<?xml version=\"1.0\" encoding=\"bogus\"?>", "<?xml version=\"1.1\"?>", "<", "</>", "<a/>", "</a>",
        "<object type=\"A\" id=\"z1\"/>", "<object type=\"A\" id=\"z1\" pk=\"1\" gid=\"D1E2667A-3268-45DB-8AA0-DF69A046A0F1\"/>",
        "<attribute name=\"x\" type=\"string\">y</attribute>",
        "<relationship name=\"r\" type=\"0/0\" destination=\"A\" idrefs=\"z1 z1 z2\"></relationship>",
        "<x:y xmlns:x=\"urn:x\"/>", "<database xmlns=\"urn:x\">", "<a b=\"1\" b=\"2\"/>", "<a b='1'>",
        "<plist version=\"1.0\"><dict><key>k</key></dict></plist>", "<key>k</key><integer>1e999</integer>",
    ]

    static func apply(_ d: inout [UInt8], rng: inout SeededGenerator, maxSize: Int) {
        let tags = tagRanges(d)
        switch rng.below(13) {
        case 0 where !tags.isEmpty:  // remove a tag
            d.removeSubrange(rng.pick(tags))
        case 1 where !tags.isEmpty:  // duplicate a tag in place or elsewhere
            let t = rng.pick(tags)
            let copy = Array(d[t])
            d.insert(contentsOf: copy, at: rng.percent(50) ? t.upperBound : rng.pick(tags).lowerBound)
        case 2 where tags.count > 1:  // move a tag
            let t = rng.pick(tags)
            let copy = Array(d[t])
            d.removeSubrange(t)
            let targets = tagRanges(d)
            d.insert(contentsOf: copy, at: targets.isEmpty ? 0 : rng.pick(targets).lowerBound)
        case 3:  // duplicate or remove a whole element
            guard let e = randomElement(d, rng: &rng) else { return }
            if rng.percent(50) {
                let copy = Array(d[e])
                d.insert(contentsOf: copy, at: e.upperBound)
            } else {
                d.removeSubrange(e)
            }
        case 4:  // rename a tag (start or end)
            guard let n = randomTagName(d, rng: &rng) else { return }
            d.replaceSubrange(n, with: Array(rng.pick(elementNames).utf8))
        case 5:  // replace an attribute value
            guard let v = randomAttributeValue(d, rng: &rng) else { return }
            let text = rng.percent(50) ? rng.pick(attributeValues) : escape(FuzzValues.text(&rng), raw: rng.percent(20))
            d.replaceSubrange(v, with: Array(text.utf8))
        case 6:  // replace text content
            guard let t = randomText(d, rng: &rng) else { return }
            d.replaceSubrange(t, with: Array(escape(FuzzValues.text(&rng), raw: rng.percent(20)).utf8))
        case 7 where !tags.isEmpty:  // add, duplicate or remove an attribute in a start tag
            let t = rng.pick(tags)
            guard d[t.lowerBound + 1] != UInt8(ascii: "/"), let space = FuzzText.find([0x20], in: Array(d[t])) else { return }
            let at = t.lowerBound + space
            if rng.percent(60) {
                let attr = " \(rng.pick(attributeNames))=\"\(rng.percent(50) ? rng.pick(attributeValues) : escape(FuzzValues.text(&rng), raw: false))\""
                d.insert(contentsOf: Array(attr.utf8), at: at)
            } else if let v = randomAttribute(d, within: t, rng: &rng) {
                if rng.percent(50) { d.insert(contentsOf: Array(d[v]), at: v.upperBound) } else { d.removeSubrange(v) }
            }
        case 8:  // insert hostile or broken markup at a tag boundary
            let at = tags.isEmpty ? rng.below(d.count + 1) : rng.pick(tags).lowerBound
            d.insert(contentsOf: Array(rng.pick(snippets).utf8), at: at)
        case 9:  // a DOCTYPE at the top (after the XML declaration if any)
            var at = 0
            if let decl = FuzzText.find(Array("?>".utf8), in: d), decl < 200 { at = decl + 2 }
            d.insert(contentsOf: Array(rng.pick(Array(snippets.prefix(7))).utf8), at: at)
        case 10:  // deep nesting
            let name = rng.percent(50) ? "a" : rng.pick(elementNames)
            let depth = rng.pick([10, 63, 64, 65, 100, 256, 257, 1000, 3000])
            let open = Array("<\(name)>".utf8)
            let close = Array("</\(name)>".utf8)
            guard (open.count + close.count) * depth < maxSize else { return }
            var nest: [UInt8] = []
            for _ in 0..<depth { nest += open }
            if rng.percent(80) { for _ in 0..<depth { nest += close } }
            let at = tags.isEmpty ? rng.below(d.count + 1) : rng.pick(tags).upperBound
            d.insert(contentsOf: nest, at: at)
        case 11:  // swap the values of two attributes (types, names, idrefs change places)
            guard let a = randomAttributeValue(d, rng: &rng), let b = randomAttributeValue(d, rng: &rng), a != b else { return }
            let (first, second) = a.lowerBound < b.lowerBound ? (a, b) : (b, a)
            guard first.upperBound <= second.lowerBound else { return }
            let x = Array(d[first])
            let y = Array(d[second])
            d.replaceSubrange(second, with: x)
            d.replaceSubrange(first, with: y)
        default:  // a long attribute value or text (a few hundred KB at most)
            let long = String(repeating: rng.pick(["A", "9", "z1 ", "&amp;", "é"]), count: rng.pick([1000, 10_000, 50_000]))
            if rng.percent(50), let v = randomAttributeValue(d, rng: &rng) {
                d.replaceSubrange(v, with: Array(long.utf8))
            } else if let t = randomText(d, rng: &rng) {
                d.replaceSubrange(t, with: Array(long.utf8))
            }
        }
    }

    /// Escapes `&`, `<` and `"` unless `raw` (which inserts them as they are).
    static func escape(_ s: String, raw: Bool) -> String {
        guard !raw else { return s }
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case "\"": out += "&quot;"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// The ranges of `<…>` tags (a `>` inside an attribute value ends them early; good enough for damage).
    static func tagRanges(_ d: [UInt8]) -> [Range<Int>] {
        var out: [Range<Int>] = []
        var i = 0
        while i < d.count {
            if d[i] == UInt8(ascii: "<") {
                var j = i + 1
                while j < d.count, d[j] != UInt8(ascii: ">"), d[j] != UInt8(ascii: "<") { j += 1 }
                if j < d.count, d[j] == UInt8(ascii: ">") {
                    out.append(i..<(j + 1))
                    i = j + 1
                    continue
                }
                i = j
                continue
            }
            i += 1
        }
        return out
    }

    private static func isNameByte(_ b: UInt8) -> Bool {
        !(b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D || b == UInt8(ascii: ">") || b == UInt8(ascii: "/")
            || b == UInt8(ascii: "<") || b == UInt8(ascii: "="))
    }

    /// The name of a random start or end tag.
    static func randomTagName(_ d: [UInt8], rng: inout SeededGenerator) -> Range<Int>? {
        let tags = tagRanges(d).filter { d[$0.lowerBound + 1] != UInt8(ascii: "!") && d[$0.lowerBound + 1] != UInt8(ascii: "?") }
        guard !tags.isEmpty else { return nil }
        let t = rng.pick(tags)
        var start = t.lowerBound + 1
        if d[start] == UInt8(ascii: "/") { start += 1 }
        var end = start
        while end < t.upperBound, isNameByte(d[end]) { end += 1 }
        return end > start ? start..<end : nil
    }

    /// A whole element: a start tag through its matching end tag (or an empty-element tag).
    static func randomElement(_ d: [UInt8], rng: inout SeededGenerator) -> Range<Int>? {
        let starts = tagRanges(d).filter {
            let c = d[$0.lowerBound + 1]
            return c != UInt8(ascii: "/") && c != UInt8(ascii: "!") && c != UInt8(ascii: "?")
        }
        guard !starts.isEmpty else { return nil }
        let t = rng.pick(starts)
        if d[t.upperBound - 2] == UInt8(ascii: "/") { return t }
        var end = t.lowerBound + 1
        while end < t.upperBound, isNameByte(d[end]) { end += 1 }
        let name = Array(d[(t.lowerBound + 1)..<end])
        guard !name.isEmpty else { return nil }
        let open = [UInt8(ascii: "<")] + name
        let close = Array("</".utf8) + name + [UInt8(ascii: ">")]
        var depth = 1
        var i = t.upperBound
        while i < d.count {
            if d[i] == UInt8(ascii: "<") {
                if d[i...].starts(with: close) {
                    depth -= 1
                    if depth == 0 { return t.lowerBound..<(i + close.count) }
                } else if d[i...].starts(with: open), i + open.count < d.count, !isNameByte(d[i + open.count]) {
                    depth += 1
                }
            }
            i += 1
        }
        return nil
    }

    /// The inside of a random `="…"` attribute value.
    static func randomAttributeValue(_ d: [UInt8], rng: inout SeededGenerator) -> Range<Int>? {
        var starts: [Int] = []
        var i = 0
        while i + 1 < d.count {
            if d[i] == UInt8(ascii: "="), d[i + 1] == UInt8(ascii: "\"") { starts.append(i + 2) }
            i += 1
        }
        guard !starts.isEmpty else { return nil }
        let s = rng.pick(starts)
        var e = s
        while e < d.count, d[e] != UInt8(ascii: "\"") { e += 1 }
        return e < d.count ? s..<e : nil
    }

    /// A whole ` name="value"` attribute inside the tag `t`.
    static func randomAttribute(_ d: [UInt8], within t: Range<Int>, rng: inout SeededGenerator) -> Range<Int>? {
        let tag = Array(d[t])
        var spans: [Range<Int>] = []
        var i = 0
        while i < tag.count {
            if tag[i] == 0x20 {
                var j = i + 1
                while j < tag.count, tag[j] != UInt8(ascii: "=") { j += 1 }
                guard j + 1 < tag.count, tag[j + 1] == UInt8(ascii: "\"") else { break }
                var k = j + 2
                while k < tag.count, tag[k] != UInt8(ascii: "\"") { k += 1 }
                guard k < tag.count else { break }
                spans.append((t.lowerBound + i)..<(t.lowerBound + k + 1))
                i = k + 1
                continue
            }
            i += 1
        }
        return spans.isEmpty ? nil : rng.pick(spans)
    }

    /// Non-empty text between a `>` and the next `<`.
    static func randomText(_ d: [UInt8], rng: inout SeededGenerator) -> Range<Int>? {
        var spans: [Range<Int>] = []
        var i = 0
        while i < d.count {
            if d[i] == UInt8(ascii: ">") {
                var j = i + 1
                while j < d.count, d[j] != UInt8(ascii: "<") { j += 1 }
                if j < d.count, j > i + 1, d[(i + 1)..<j].contains(where: { !($0 == 0x20 || $0 == 0x0A || $0 == 0x09) }) {
                    spans.append((i + 1)..<j)
                }
                i = j
                continue
            }
            i += 1
        }
        return spans.isEmpty ? nil : rng.pick(spans)
    }
}
