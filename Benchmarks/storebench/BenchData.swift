import Foundation
import StoreAPI

/// The flat record shape the context benchmarks use: 8 mixed columns, like the reference measurements in
/// `reference/build-and-limits.md` (integers, a real, a ~40-character text, a 64-byte blob, a date, a flag, a UUID).
enum BenchData {
    static func schema() throws -> Schema {
        try Schema(entities: [
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "number", type: .integer64),
                AttributeDescription(name: "code", type: .integer32),
                AttributeDescription(name: "price", type: .double),
                AttributeDescription(name: "title", type: .string),
                AttributeDescription(name: "payload", type: .binary),
                AttributeDescription(name: "created", type: .date),
                AttributeDescription(name: "active", type: .boolean),
                AttributeDescription(name: "ref", type: .uuid),
            ]),
        ])
    }

    /// The i-th row's values, deterministic.
    static func title(_ i: Int) -> String { "item number \(i) with a forty-char title…".padding(toLength: 40, withPad: "x", startingAt: 0) }
    static let payload = Data((0..<64).map { UInt8($0) })

    /// The inputs that cost Foundation work to make (titles, UUIDs), made before any clock starts so that both
    /// our side and the reference time only storing them.
    struct Inputs {
        let titles: [String]
        let refs: [UUID]
        init(count: Int) {
            titles = (0..<count).map(BenchData.title)
            refs = (0..<count).map { _ in UUID() }
        }
    }

    /// The i-th row as the values an app would hand to `insert`.
    static func values(_ i: Int, _ inputs: Inputs) -> [String: StoreValue] {
        [
            "number": .integer64(Int64(i)), "code": .integer32(Int32(truncatingIfNeeded: i &* 7)), "price": .double(Double(i) * 0.25),
            "title": .string(inputs.titles[i]), "payload": .binary(payload),
            "created": .date(Date(timeIntervalSinceReferenceDate: Double(i))), "active": .boolean(i % 2 == 0),
            "ref": .uuid(inputs.refs[i]),
        ]
    }

    /// The i-th row's values (those of ``values(_:_:)``), set on a batch row.
    static func set(_ i: Int, _ inputs: Inputs, into row: inout BatchInsertRow) throws {
        try row.set("number", .integer64(Int64(i)))
        try row.set("code", .integer32(Int32(truncatingIfNeeded: i &* 7)))
        try row.set("price", .double(Double(i) * 0.25))
        try row.set("title", .string(inputs.titles[i]))
        try row.set("payload", .binary(payload))
        try row.set("created", .date(Date(timeIntervalSinceReferenceDate: Double(i))))
        try row.set("active", .boolean(i % 2 == 0))
        try row.set("ref", .uuid(inputs.refs[i]))
    }
}
