import Foundation
import Testing
@_spi(BackendKit) @testable import StoreAPI

struct ValuesExactISO8601Tests {
    private func roundTrips(_ t: Double) -> Bool {
        let text = ExactISO8601.string(from: Date(timeIntervalSinceReferenceDate: t))
        guard let back = ExactISO8601.date(from: text) else { return false }
        return back.timeIntervalSinceReferenceDate.bitPattern == t.bitPattern
            || (t.isNaN && back.timeIntervalSinceReferenceDate.isNaN)
    }

    @Test func knownInstantsFormatAsExpected() {
        let cases: [(Double, String)] = [
            (0, "2001-01-01T00:00:00Z"), (0.5, "2001-01-01T00:00:00.5Z"), (-0.5, "2000-12-31T23:59:59.5Z"),
            (-978_307_200, "1970-01-01T00:00:00Z"), (599_529_600, "2020-01-01T00:00:00Z"),
            // Foundation's distantPast is 0001-01-01 in the Julian calendar; ISO 8601 is proleptic Gregorian.
            (Date.distantPast.timeIntervalSinceReferenceDate, "+0000-12-30T00:00:00Z"),
            (Date.distantFuture.timeIntervalSinceReferenceDate, "4001-01-01T00:00:00Z"),
            (-63_145_526_400, "+0000-01-01T00:00:00Z"), (-64_527_667_200, "-0044-03-15T00:00:00Z"),
            (326_438_640_000, "+12345-06-07T00:00:00Z"), (-0.0, "-0.0"), (.infinity, "+inf"), (1e20, "1e+20"),
            (1e-9, "2001-01-01T00:00:00.000000001Z"), (-1e-9, "2000-12-31T23:59:59.999999999Z"),
        ]
        for (t, text) in cases {
            #expect(ExactISO8601.string(from: Date(timeIntervalSinceReferenceDate: t)) == text, "\(t)")
            #expect(ExactISO8601.date(from: text)?.timeIntervalSinceReferenceDate.bitPattern == t.bitPattern, "\(text)")
        }
    }

    @Test func randomInstantsRoundTripBitForBit() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            // Random bit patterns cover every exponent, including tiny and huge magnitudes.
            let t = Double(bitPattern: rng.next())
            #expect(roundTrips(t), "\(t) → \(ExactISO8601.string(from: Date(timeIntervalSinceReferenceDate: t)))")
        }
        for _ in 0..<20_000 {
            let t = Double.random(in: -2e11...2e11, using: &rng)
            #expect(roundTrips(t), "\(t)")
            #expect(roundTrips(t.rounded() + Double.random(in: -1e-6...1e-6, using: &rng)))
        }
    }

    @Test func foreignFormsParse() {
        let ref = ExactISO8601.date(from: "2019-05-01T12:00:00Z")
        #expect(ref != nil)
        #expect(ExactISO8601.date(from: "2019-05-01T14:00:00+02:00") == ref)
        #expect(ExactISO8601.date(from: "2019-05-01T07:30:00-04:30") == ref)
        #expect(ExactISO8601.date(from: "2019-05-01 12:00:00Z") == ref)
        #expect(ExactISO8601.date(from: "2019-05-01T12:00:00,000Z") == ref)
        #expect(ExactISO8601.date(from: "2019-05-01T12:00:00") == ref)
        #expect(ExactISO8601.date(from: "2019-05-01") == ExactISO8601.date(from: "2019-05-01T00:00:00Z"))
        #expect(ExactISO8601.date(from: "2020-02-29") != nil)
        #expect(ExactISO8601.date(from: "2000-02-29") != nil)
    }

    @Test func garbageIsRejected() {
        let bad = [
            "", "2019", "2019-13-01", "2019-00-10", "2019-02-29", "1900-02-29", "2019-04-31", "2019-05-01T24:00:00Z",
            "2019-05-01T12:60:00Z", "2019-05-01T12:00:00.Z", "2019-05-01T12:00:00ZZ", "2019-05-01T12:00:00+2:00",
            "2019-05-01T12:00:00+25:00", "--2019-05-01", "+-2019-05-01", "99999999999999999-01-01", "20x9-05-01",
            "2019-5-01", "2019-05-01T1:00:00Z", "٢٠١٩-05-01", "nan", "inf", "1e3", "12345",
        ]
        for text in bad { #expect(ExactISO8601.date(from: text) == nil, "\(text)") }
    }
}
