@testable import CoreDataBackend
import Testing

/// The positions a bulk load keeps by member key, in chunks made as keys reach them.
@Suite struct CoreDataWaitingPositionsTests {
    static let spacing = CoreDataRowWriter.orderSpacing

    @Test func positionsOnEitherSideOfAChunkBoundaryComeBackOnce() {
        var waiting = CoreDataWaitingPositions()
        let keys: [Int64] = [1, 65_535, 65_536, 65_537, 200_000, CoreDataWaitingPositions.defaultKeyLimit]
        func set(_ position: Int64, _ key: Int64) -> Bool {
            waiting.set(position, member: key, table: "ZREVIEW", order: "Z_FOK_BOOK")
        }
        func take(_ key: Int64, order: String = "Z_FOK_BOOK") -> Int64? {
            waiting.take(member: key, table: "ZREVIEW", order: order)
        }
        for (i, key) in keys.enumerated() {
            let kept = set(Int64(i + 1) * Self.spacing, key)
            #expect(kept, "key \(key)")
        }
        // Beyond the key limit, or not a multiple of the spacing: kept elsewhere.
        let beyondLimit = set(Self.spacing, CoreDataWaitingPositions.defaultKeyLimit + 1)
        let offSpacing = set(Self.spacing + 1, 2)
        #expect(!beyondLimit && !offSpacing)

        // Keys nobody kept: in a chunk that exists, in one never made, in another column, far beyond any.
        let unknown = [take(2), take(3_000_000), take(1, order: "Z_FOK_OTHER"), take(.max)]
        #expect(unknown == [nil, nil, nil, nil])

        for (i, key) in keys.enumerated().reversed() {
            let position = take(key)
            #expect(position == Int64(i + 1) * Self.spacing, "key \(key)")
        }
        for key in keys {
            let again = take(key)
            #expect(again == nil, "key \(key) taken twice")
        }
    }

    @Test func aLaterPositionForTheSameMemberWins() {
        var waiting = CoreDataWaitingPositions()
        let first = waiting.set(3 * Self.spacing, member: 70_000, table: "ZREVIEW", order: "Z_FOK_BOOK")
        let second = waiting.set(5 * Self.spacing, member: 70_000, table: "ZREVIEW", order: "Z_FOK_BOOK")
        let position = waiting.take(member: 70_000, table: "ZREVIEW", order: "Z_FOK_BOOK")
        #expect(first && second)
        #expect(position == 5 * Self.spacing)
    }
}
