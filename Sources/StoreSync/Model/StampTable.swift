/// The clock stamps a change file or a state-log frame names, numbered in order of first use: the file or frame
/// writes ``stamps`` as a table at its top and each line names a stamp by its number.
struct StampTable {
    /// The stamps, in number order.
    private(set) var stamps: [HybridLogicalClock] = []
    private var numbers: [HybridLogicalClock: Int] = [:]
    /// The values of one push share one stamp: the last one is checked before the table is.
    private var last: (stamp: HybridLogicalClock, number: Int)?

    /// The number of `stamp`, given it the first time it is asked for.
    mutating func number(_ stamp: HybridLogicalClock) -> Int {
        if let last, last.stamp == stamp { return last.number }
        let n: Int
        if let known = numbers[stamp] {
            n = known
        } else {
            n = stamps.count
            numbers[stamp] = n
            stamps.append(stamp)
        }
        last = (stamp, n)
        return n
    }
}
