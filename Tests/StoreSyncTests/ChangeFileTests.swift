import Foundation
@testable import StoreSync
import Testing

/// Change files are written and read directly, as the same JSON document `Codable` makes of them, so files of
/// either writer read the same.
@Suite("Change files")
struct ChangeFileTests {
    @Test func theDirectCodecAndCodableAgree() throws {
        let peer = UUID()
        let clock = HybridLogicalClock(wall: 1_764_000_000_123, counter: 7, peer: peer)
        let later = HybridLogicalClock(wall: 1_764_000_000_124, counter: 0, peer: UUID())
        var change = RecordChange(entity: "Bóok \"quoted\"", id: UUID())
        change.values["title"] = StampedValue(clock: clock, text: "\"tab\there\", new\nline, back\\slash, bell \u{07}, é ✓")
        change.values["pages"] = StampedValue(clock: later, text: "42")
        change.members["tags"] = [MemberChange(target: UUID(), present: true, clock: clock),
                                  MemberChange(target: UUID(), present: false, clock: later, observed: clock)]
        let deleted = RecordChange(entity: "", id: UUID(), deleted: later)
        let batch = ChangeBatch(peer: peer, sequence: 12, changes: [change, deleted])

        let direct = batch.encoded()
        #expect(ChangeBatch.decode(direct) == batch)
        #expect(try JSONDecoder().decode(ChangeBatch.self, from: direct) == batch)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let viaCodable = try encoder.encode(batch)
        #expect(ChangeBatch.decode(viaCodable) == batch)
        // Not change files of this layout: ignored, never misread.
        #expect(ChangeBatch.decode(Data("{}".utf8)) == nil)
        #expect(ChangeBatch.decode(Data(String(decoding: direct, as: UTF8.self).replacingOccurrences(of: #""format":1"#, with: #""format":2"#).utf8)) == nil)
        #expect(ChangeBatch.decode(direct.prefix(direct.count / 2)) == nil)
    }
}
