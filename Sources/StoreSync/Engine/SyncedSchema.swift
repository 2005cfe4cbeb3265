import Foundation
import StoreAPI

/// What of a store's schema syncs, and how each value is written in a change file.
///
/// Only the entities of the store's configuration sync. Each relationship that has an inverse syncs from one side
/// only, its *owning* side, and the other side follows from it when the change is applied: the to-one side of a
/// one-to-many, the ordered side of a many-to-many with one, otherwise the side whose name sorts first. Syncing
/// both sides would let the two sides of one link win different conflicts.
struct SyncedSchema {
    /// A class: a pull and a push look an entity's shape up per record, and copying a struct of this many arrays
    /// retained and released each of them every time.
    final class Shape: Sendable {
        let entity: Entity
        /// Attribute positions that sync (stored, not derived).
        let attributes: [Int]
        /// Relationship positions that sync (owning sides).
        let relationships: [Int]
        /// Ordered to-many relationships whose to-one inverse owns the link: their members follow the inverse, and
        /// their order syncs as a hint, a register of the list that sorts the members (see ``SyncSession``).
        let orderHints: [Int]
        /// Destination hierarchy root of each relationship, aligned with ``Entity/relationships``.
        let destinationRoots: [String]
        /// Whether a pulled record of this entity is complete once inserted with its attribute values, so it is
        /// inserted without an object: the entity has no relationship and no uniqueness constraint (deduplication
        /// looks at objects), and no relationship of the schema can point to it (a link is set on an object).
        let insertsWithoutObject: Bool
        /// The synced attributes' positions, names and types, in the order of ``attributes``: a pull reads them per
        /// record, and reading them from the entity copied each attribute's description every time.
        let attributeSlots: [AttributeSlot]

        /// One synced attribute: its position in ``Entity/attributes``, its name and its type.
        struct AttributeSlot: Sendable {
            let index: Int
            let name: String
            let type: AttributeType
        }

        init(entity: Entity, attributes: [Int], relationships: [Int], orderHints: [Int], destinationRoots: [String],
             insertsWithoutObject: Bool) {
            self.entity = entity
            self.attributes = attributes
            self.relationships = relationships
            self.orderHints = orderHints
            self.destinationRoots = destinationRoots
            self.insertsWithoutObject = insertsWithoutObject
            attributeSlots = attributes.map {
                AttributeSlot(index: $0, name: entity.attributes[$0].name, type: entity.attributes[$0].type)
            }
        }

        func owns(_ key: String) -> Bool {
            if let i = entity.attributes.firstIndex(where: { $0.name == key }) { return attributes.contains(i) }
            if let i = entity.relationships.firstIndex(where: { $0.name == key }) { return relationships.contains(i) }
            return false
        }

        /// Whether `key` is an ordered to-many whose order syncs as a hint.
        func isOrderHint(_ key: String) -> Bool {
            orderHints.contains { entity.relationships[$0].name == key }
        }

        /// Whether a change of `key` syncs: an owned value or an order hint.
        func syncs(_ key: String) -> Bool { owns(key) || isOrderHint(key) }
    }

    let schema: Schema
    /// Concrete and abstract entities of the configuration, by name.
    let shapes: [String: Shape]
    /// The concrete entities, in schema order: what a full scan reads.
    let concrete: [String]

    init(schema: Schema, entityNames: Set<String>) {
        self.schema = schema
        var shapes: [String: Shape] = [:]
        var concrete: [String] = []
        for entity in schema.entities where entityNames.contains(entity.name) {
            let attributes = entity.attributes.indices.filter { entity.attributes[$0].derivation == nil && !entity.attributes[$0].isTransient }
            let relationships = entity.relationships.indices.filter { Self.isOwningSide(entity.relationships[$0], of: entity, schema) }
            let hints = entity.relationships.indices.filter {
                let r = entity.relationships[$0]
                return r.isToMany && r.isOrdered && !r.isTransient && !relationships.contains($0)
            }
            let roots = entity.relationships.map { schema.entity(named: $0.destination)?.rootName ?? $0.destination }
            let linked = schema.entities.contains { other in
                other.relationships.contains { (schema.entity(named: $0.destination)?.rootName ?? $0.destination) == entity.rootName }
            }
            let constrained = ([entity.name] + entity.ancestorNames).contains {
                schema.entity(named: $0)?.uniquenessConstraints.isEmpty == false
            }
            shapes[entity.name] = Shape(entity: entity, attributes: attributes, relationships: relationships,
                                        orderHints: hints, destinationRoots: roots,
                                        insertsWithoutObject: entity.relationships.isEmpty && !linked && !constrained)
            if !entity.isAbstract { concrete.append(entity.name) }
        }
        self.shapes = shapes
        self.concrete = concrete
    }

    private static func isOwningSide(_ r: RelationshipDescription, of entity: Entity, _ schema: Schema) -> Bool {
        if r.isTransient { return false }
        guard let inverseName = r.inverse, let destination = schema.entity(named: r.destination),
              let inverse = destination.relationships.first(where: { $0.name == inverseName })
        else { return true }
        if r.isToMany != inverse.isToMany { return !r.isToMany }
        // Of a many-to-many, the ordered side, so that its order is what syncs.
        if r.isOrdered != inverse.isOrdered { return r.isOrdered }
        if r.name != inverse.name { return r.name < inverse.name }
        return entity.rootName <= destination.rootName
    }

    // MARK: Values

    /// The JSON text of an attribute value: a one-element array, so every value (a bare string or number too) is a
    /// complete JSON document.
    ///
    /// Strings, integers, Booleans and finite doubles are written directly (every push writes a text per value, and
    /// `JSONSerialization` builds objects for each); the rest through `JSONSerialization`. Either way the text is
    /// JSON that any peer reads back to the same value.
    static func text(of value: StoreValue) throws -> String {
        switch value {
        case .string(let s):
            guard s.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                // One string made, not one per piece.
                var text = "[\""
                text.reserveCapacity(s.utf8.count + 4)
                text += s
                text += "\"]"
                return text
            }
            return "[" + jsonString(s) + "]"
        case .integer16(let v): return "[\(v)]"
        case .integer32(let v): return "[\(v)]"
        case .integer64(let v): return "[\(v)]"
        case .boolean(let v): return v ? "[true]" : "[false]"
        case .double(let v) where v.isFinite && !(v == 0 && v.sign == .minus): return "[\(v)]"
        case .null: return "[null]"
        default:
            let data = try JSONSerialization.data(withJSONObject: [value.jsonObject], options: [.fragmentsAllowed])
            return String(decoding: data, as: UTF8.self)
        }
    }

    /// A JSON string: quotes, backslashes and control characters escaped.
    private static func jsonString(_ s: String) -> String {
        guard s.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            return "\"" + s + "\""
        }
        var out: [UInt8] = [UInt8(ascii: "\"")]
        out.reserveCapacity(s.utf8.count + 16)
        let hex = Array("0123456789abcdef".utf8)
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), b]
            case UInt8(ascii: "\\"): out += [b, b]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20: out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(b >> 4)], hex[Int(b & 15)]]
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
        return String(decoding: out, as: UTF8.self)
    }

    /// Reads an attribute value written by ``text(of:)``; `nil` when the text is not a value of `type`. The forms
    /// ``text(of:)`` writes directly are read directly; anything else through `JSONSerialization`.
    static func value(of text: String, type: AttributeType) -> StoreValue? {
        if let v = directValue(of: text, type: type) { return v }
        guard let array = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) as? [Any],
              array.count == 1
        else { return nil }
        return StoreValue(json: array[0], type: type)
    }

    /// ``value(of:type:)`` of the text whose UTF-8 bytes are `text`: a pull reads values from the bytes of their
    /// change file, and makes a string of a text only for the forms not read directly. Bytes that are not UTF-8
    /// read as the string made of them would: only ASCII bytes decide a form, and a string value is made of its
    /// bytes as that string's would be.
    static func value(ofBytes text: UnsafeBufferPointer<UInt8>, type: AttributeType) -> StoreValue? {
        if let v = directValue(of: text, type: type) { return v }
        return value(of: String(decoding: text, as: UTF8.self), type: type)
    }

    /// The value of a text in one of the simple forms ``text(of:)`` writes directly: a string without escapes, a
    /// plain integer, `true` or `false`, a plain decimal number for a double, `null`. `nil` for any other text,
    /// which is then read through `JSONSerialization` (and refused there when it is not a value of `type`).
    private static func directValue(of text: String, type: AttributeType) -> StoreValue? {
        // A pull reads a text per value: its bytes are read in place where the string has them contiguous (any
        // native string), without a substring or a scan per check; a bridged string's bytes are copied first.
        if let read = text.utf8.withContiguousStorageIfAvailable({ directValue(of: $0, type: type) }) { return read }
        return Array(text.utf8).withUnsafeBufferPointer { directValue(of: $0, type: type) }
    }

    /// ``directValue(of:type:)`` of a text's UTF-8 bytes: the same forms read to the same values, and the same
    /// texts left to `JSONSerialization`.
    private static func directValue(of bytes: UnsafeBufferPointer<UInt8>, type: AttributeType) -> StoreValue? {
        guard bytes.count >= 3, bytes[0] == UInt8(ascii: "["), bytes[bytes.count - 1] == UInt8(ascii: "]") else { return nil }
        let inner = UnsafeBufferPointer(rebasing: bytes[1..<(bytes.count - 1)])
        // Compared byte by byte: the generic comparison with a string's bytes cost more than the rest of the check.
        if inner.count == 4, inner[0] == UInt8(ascii: "n"), inner[1] == UInt8(ascii: "u"), inner[2] == UInt8(ascii: "l"),
           inner[3] == UInt8(ascii: "l") { return .null }
        func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }
        switch type {
        case .string:
            guard inner.count >= 2, inner[0] == UInt8(ascii: "\""), inner[inner.count - 1] == UInt8(ascii: "\"") else { return nil }
            let body = UnsafeBufferPointer(rebasing: inner[1..<(inner.count - 1)])
            // Escapes, and bytes JSON does not allow raw, take the general path.
            for b in body where b < 0x20 || b == UInt8(ascii: "\\") || b == UInt8(ascii: "\"") { return nil }
            return .string(String(decoding: body, as: UTF8.self))
        case .integer16, .integer32, .integer64:
            // An optional minus and at least one digit (what Int64(_:) takes of digits and minus signs), within range.
            var i = 0
            let negative = inner[0] == UInt8(ascii: "-")
            if negative { i = 1 }
            guard i < inner.count else { return nil }
            var v: Int64 = 0
            while i < inner.count {
                let b = inner[i]
                guard isDigit(b) else { return nil }
                let d = Int64(b - UInt8(ascii: "0"))
                let (times, o1) = v.multipliedReportingOverflow(by: 10)
                let (next, o2) = negative ? times.subtractingReportingOverflow(d) : times.addingReportingOverflow(d)
                guard !o1, !o2 else { return nil }
                v = next
                i += 1
            }
            switch type {
            case .integer16: return Int16(exactly: v).map { .integer16($0) }
            case .integer32: return Int32(exactly: v).map { .integer32($0) }
            default: return .integer64(v)
            }
        case .boolean:
            if inner.elementsEqual("true".utf8) { return .boolean(true) }
            if inner.elementsEqual("false".utf8) { return .boolean(false) }
            return nil
        case .double:
            // JSON numbers only: Double(_:) would also take "nan", "inf" or hexadecimal forms.
            guard isDigit(inner[0]) || inner[0] == UInt8(ascii: "-"),
                  inner.allSatisfy({ isDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: ".")
                      || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }),
                  let d = Double(String(decoding: inner, as: UTF8.self)), d.isFinite, !(d == 0 && d.sign == .minus)
            else { return nil }
            return .double(d)
        default:
            return nil
        }
    }

    /// The text of an ordered to-many value: a JSON array of global IDs.
    static func text(ofOrdered ids: [UUID]) -> String {
        "[" + ids.map { "\"\($0.uuidString)\"" }.joined(separator: ",") + "]"
    }

    /// Reads ``text(ofOrdered:)``; `nil` when malformed.
    static func ordered(_ text: String) -> [UUID]? {
        guard let array = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String] else { return nil }
        let ids = array.compactMap(UUID.init(uuidString:))
        return ids.count == array.count ? ids : nil
    }
}
