import StoreTestSupport

/// What kind of text (or not) an input is, so the mutator can also make the mistakes a person or a hostile file
/// would make in that syntax, not only random bit damage.
enum Dialect: Sendable {
    /// Binary files (SQLite and LMDB pages): byte-level mutations only, with word-sized "interesting" values.
    case binary
    /// XML documents: tags and elements duplicated, removed, renamed, nested deeply; entities and DTDs inserted.
    case xml
    /// JSON and NDJSON: values swapped for other kinds, huge numbers, deep nesting, lines duplicated or dropped.
    case json
    /// Predicate strings: tokens replaced by keywords, operators and placeholders; deep parentheses.
    case predicate
}

/// Deterministic mutations of corpus inputs: AFL-style byte operations (flips, interesting values, insertions,
/// deletions, truncation, splicing between corpus members) plus dialect-aware ones.
///
/// Every mutation keeps the input under ``maxSize`` bytes, so each run stays small and fast.
struct Mutator: Sendable {
    let dialect: Dialect
    let corpus: [[UInt8]]
    let maxSize: Int
    /// Mostly a single mutation per input: for formats where any one mistake rejects the whole input (NDJSON,
    /// metadata), so that enough inputs get past the first check to exercise the later ones.
    let gentle: Bool

    init(dialect: Dialect, corpus: [[UInt8]], maxSize: Int? = nil, gentle: Bool = false) {
        self.dialect = dialect
        self.corpus = corpus
        self.maxSize = maxSize ?? max(64 << 10, 2 * (corpus.map(\.count).max() ?? 0))
        self.gentle = gentle
    }

    /// A mutated copy of `input`: one to a handful of stacked mutations (sometimes many).
    func mutate(_ input: [UInt8], rng: inout SeededGenerator) -> [UInt8] {
        var data = input
        let rounds = gentle ? (rng.percent(80) ? 1 : 2) : rng.percent(10) ? rng.inRange(4...16) : rng.inRange(1...3)
        for _ in 0..<rounds {
            if dialect != .binary, rng.percent(60) {
                dialectMutation(&data, rng: &rng)
            } else {
                byteMutation(&data, rng: &rng)
            }
            if data.count > maxSize { data.removeLast(data.count - maxSize) }
        }
        return data
    }

    // MARK: Byte level

    func byteMutation(_ d: inout [UInt8], rng: inout SeededGenerator) {
        if d.isEmpty {
            d = rng.percent(50) ? Array(FuzzValues.randomBytes(rng.inRange(1...16), rng: &rng)) : rng.pick(corpus)
            return
        }
        switch rng.below(16) {
        case 0:  // flip a bit
            let i = rng.below(d.count)
            d[i] ^= 1 << UInt8(rng.below(8))
        case 1:  // a random byte
            d[rng.below(d.count)] = UInt8(truncatingIfNeeded: rng.next())
        case 2, 3:  // an interesting value, 1/2/4/8 bytes, either byte order
            let width = rng.pick([1, 2, 4, 8])
            guard d.count >= width else { return }
            let at = rng.below(d.count - width + 1)
            let v = rng.pick(FuzzValues.interestingIntegers)
            for k in 0..<width {
                let shift = rng.percent(50) ? k : width - 1 - k
                d[at + k] = UInt8(truncatingIfNeeded: v >> UInt64(8 * shift))
            }
        case 4:  // small arithmetic on a byte
            let i = rng.below(d.count)
            let delta = UInt8(rng.inRange(1...35))
            d[i] = rng.percent(50) ? d[i] &+ delta : d[i] &- delta
        case 5:  // delete a range
            let n = rng.length(max: d.count)
            let at = rng.below(d.count - n + 1)
            d.removeSubrange(at..<(at + n))
        case 6:  // insert random bytes
            d.insert(contentsOf: FuzzValues.randomBytes(rng.length(max: 32), rng: &rng), at: rng.below(d.count + 1))
        case 7:  // duplicate a range somewhere else
            let n = rng.length(max: d.count)
            let from = rng.below(d.count - n + 1)
            d.insert(contentsOf: d[from..<(from + n)], at: rng.below(d.count + 1))
        case 8:  // overwrite a range with another part of the input
            let n = rng.length(max: d.count)
            let from = rng.below(d.count - n + 1)
            let to = rng.below(d.count - n + 1)
            let chunk = Array(d[from..<(from + n)])
            d.replaceSubrange(to..<(to + n), with: chunk)
        case 9:  // truncate
            d.removeLast(d.count - rng.below(d.count))
        case 10:  // splice: this input's head, another corpus member's tail
            let other = rng.pick(corpus)
            let head = rng.below(d.count + 1)
            let tail = other.isEmpty ? 0 : rng.below(other.count)
            d = Array(d.prefix(head)) + Array(other.suffix(from: tail))
        case 11:  // insert a chunk of another corpus member
            let other = rng.pick(corpus)
            guard !other.isEmpty else { return }
            let n = rng.length(max: other.count)
            let from = rng.below(other.count - n + 1)
            d.insert(contentsOf: other[from..<(from + n)], at: rng.below(d.count + 1))
        case 12:  // invalid UTF-8 (overlong forms, surrogates, stray continuation bytes, 0xFF)
            d.insert(contentsOf: rng.pick(FuzzValues.invalidUTF8), at: rng.below(d.count + 1))
        case 13:  // a NUL or control character
            d.insert(rng.pick([0x00, 0x01, 0x0B, 0x1B, 0x7F, 0x0D]), at: rng.below(d.count + 1))
        case 14:  // a chunk repeated many times
            let n = min(rng.length(max: 16), d.count)
            let from = rng.below(d.count - n + 1)
            let chunk = Array(d[from..<(from + n)])
            let times = rng.pick([2, 10, 100, 1000, 5000])
            var repeated: [UInt8] = []
            repeated.reserveCapacity(min(n * times, maxSize))
            for _ in 0..<times where repeated.count + n <= maxSize { repeated += chunk }
            d.insert(contentsOf: repeated, at: from)
        default:  // a run of ASCII digits replaced by an interesting number
            guard let run = FuzzText.randomRun(in: d, rng: &rng, where: { $0 >= 0x30 && $0 <= 0x39 }) else { return }
            d.replaceSubrange(run, with: Array(rng.pick(FuzzValues.numbers).utf8))
        }
    }

    // MARK: Dialects

    private func dialectMutation(_ d: inout [UInt8], rng: inout SeededGenerator) {
        switch dialect {
        case .binary: byteMutation(&d, rng: &rng)
        case .xml: XMLMutations.apply(&d, rng: &rng, maxSize: maxSize)
        case .json: JSONMutations.apply(&d, rng: &rng, maxSize: maxSize)
        case .predicate: PredicateMutations.apply(&d, rng: &rng, maxSize: maxSize)
        }
    }
}

/// Helpers for finding things in byte arrays.
enum FuzzText {
    /// A maximal run of bytes matching `predicate` that contains a random position, if one is near it.
    static func randomRun(in d: [UInt8], rng: inout SeededGenerator, where predicate: (UInt8) -> Bool) -> Range<Int>? {
        guard !d.isEmpty else { return nil }
        var i = rng.below(d.count)
        var scanned = 0
        while !predicate(d[i]) {
            i = (i + 1) % d.count
            scanned += 1
            if scanned >= d.count { return nil }
        }
        var lo = i
        var hi = i + 1
        while lo > 0, predicate(d[lo - 1]) { lo -= 1 }
        while hi < d.count, predicate(d[hi]) { hi += 1 }
        return lo..<hi
    }

    /// The positions of `byte` in `d`.
    static func positions(of byte: UInt8, in d: [UInt8]) -> [Int] {
        var out: [Int] = []
        for (i, b) in d.enumerated() where b == byte { out.append(i) }
        return out
    }

    /// The first occurrence of `needle` in `d` at or after `from`.
    static func find(_ needle: [UInt8], in d: [UInt8], from: Int = 0) -> Int? {
        guard !needle.isEmpty, d.count >= needle.count, from <= d.count - needle.count else { return nil }
        var i = from
        while i <= d.count - needle.count {
            if d[i] == needle[0], d[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}
