/// Counts the attributes of every start tag in XML bytes as they stream past, so a reader can stop a document
/// with absurdly many attributes on one element before the parser sees it.
///
/// Why: libxml2 2.9 (Debian 12) checks each new attribute name against every earlier one of the same element, so
/// its time grows with the square of the attributes on one element: a small hostile file with tens of thousands
/// of them takes it minutes. No store or model has more than a handful of attributes per element; ``limit`` is
/// far above that and far below the sizes that hurt.
///
/// The scanner follows just enough XML to know when it is inside a start tag: comments, CDATA sections,
/// processing instructions, end tags, and declarations (including a DOCTYPE's internal subset, with its own
/// comments and quoted strings). It never fails on malformed XML — the parser reports that — it only counts.
@_spi(BackendKit) public struct XMLAttributeGuard: Sendable {
    /// The most attributes one element may have.
    public static let limit = 256

    private enum State: UInt8 {
        case text, open, bang, bangDash, comment, cdata, pi, endTag, startTag, quoted, declaration, declarationQuoted

        /// The states ``scanMarkup(_:_:_:_:_:_:)`` runs through; the others take a byte at a time.
        var isMarkup: Bool {
            switch self {
            case .text, .open, .startTag, .quoted, .endTag: true
            default: false
            }
        }
    }

    private var state = State.text
    /// Where a comment or processing instruction returns to: text, or a declaration's internal subset.
    private var returnState = State.text
    private var quote: UInt8 = 0
    private var attributes = 0
    private var declarationDepth = 0
    /// The last bytes seen, newest in the low byte, to find `-->`, `]]>` and `?>` across buffer boundaries.
    private var recent: UInt32 = 0
    /// The 1-based line the scan has reached (after a refusal: the line of the attribute that broke the limit).
    public private(set) var line = 1
    /// Set once an element has more than ``limit`` attributes; the line is where that element's attribute was.
    public private(set) var tooManyAttributes = false

    /// A guard at the start of a document.
    public init() {}

    /// Scans the next bytes. Returns `false` (and stays failed) once an element has too many attributes.
    public mutating func scan(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !tooManyAttributes else { return false }
        // The scanner's fields live in locals for the loop (written back at the end): the loop runs over every byte
        // of every document loaded, and kept in registers it costs a few instructions per byte, not a few dozen.
        var state = self.state, returnState = self.returnState, quote = self.quote
        var attributes = self.attributes, declarationDepth = self.declarationDepth, recent = self.recent
        // Lines are counted in a separate pass over the buffer (eight bytes at a time), not byte by byte.
        var lines = 0
        defer {
            self.state = state
            self.returnState = returnState
            self.quote = quote
            self.attributes = attributes
            self.declarationDepth = declarationDepth
            self.recent = recent
            self.line += lines
        }
        guard let p = bytes.baseAddress else { return true }
        let n = bytes.count
        var i = 0
        while i < n {
            if state.isMarkup {
                guard Self.scanMarkup(p, n, &i, &state, &quote, &attributes) else {
                    tooManyAttributes = true
                    lines = Self.newlines(in: UnsafeBufferPointer(rebasing: bytes[0..<i]))
                    return false
                }
                if !state.isMarkup {
                    // Stopped just after "<!" or "<?" (at the top level, so a comment or processing instruction
                    // returns to text): the byte-at-a-time states below match their patterns from here on.
                    recent = 0x3C00 | UInt32(p[i - 1])
                    returnState = .text
                }
                continue
            }
            let b = p[i]
            i += 1
            recent = recent << 8 | UInt32(b)
            switch state {
            case .bang:
                switch b {
                case UInt8(ascii: "-"): state = .bangDash
                case UInt8(ascii: "["): state = .cdata
                case UInt8(ascii: ">"): state = .text
                default: state = .declaration; declarationDepth = 0
                }
            case .bangDash:
                state = b == UInt8(ascii: "-") ? .comment : .declaration
            case .comment:
                if recent & 0xFF_FFFF == 0x2D2D3E { state = returnState }  // -->
            case .cdata:
                if recent & 0xFF_FFFF == 0x5D5D3E { state = .text }  // ]]>
            case .pi:
                if recent & 0xFFFF == 0x3F3E { state = returnState }  // ?>
            case .declaration:
                switch b {
                case UInt8(ascii: "\""), UInt8(ascii: "'"): quote = b; state = .declarationQuoted
                case UInt8(ascii: "["): declarationDepth += 1
                case UInt8(ascii: "]"): declarationDepth -= 1
                case UInt8(ascii: ">"): if declarationDepth <= 0 { state = .text }
                case UInt8(ascii: "-") where recent == 0x3C21_2D2D:  // <!-- inside the subset
                    returnState = .declaration; state = .comment
                case UInt8(ascii: "?") where recent & 0xFFFF == 0x3C3F:  // <? inside the subset
                    returnState = .declaration; state = .pi
                default: break
                }
            case .declarationQuoted:
                if b == quote { state = .declaration }
            case .text, .open, .startTag, .quoted, .endTag:
                break  // taken by scanMarkup above
            }
        }
        lines = Self.newlines(in: bytes)
        return true
    }

    /// Runs through text, start tags (counting their attributes), attribute values and end tags — nearly every
    /// byte of a document — in straight-line loops that look at the state once per call. (A jump on the state at
    /// every token was an indirect branch the processor mispredicted about half the time.)
    ///
    /// Returns at the buffer's end (`i == n`, `state` says where to resume), or just after `<!` or `<?` with
    /// `state` set to `.bang` or `.pi`; `false` once a tag has too many attributes (`i` just after the `=` that
    /// broke the limit).
    @inline(__always)
    private static func scanMarkup(_ p: UnsafePointer<UInt8>, _ n: Int, _ i: inout Int, _ state: inout State,
                                   _ quote: inout UInt8, _ attributes: inout Int) -> Bool {
        // First finish what the last buffer ended in.
        switch state {
        case .quoted:
            i = index(of: quote, in: p, from: i, to: n)
            if i == n { return true }
            i += 1
            state = .startTag
            guard scanStartTag(p, n, &i, &state, &quote, &attributes) else { return false }
        case .startTag:
            guard scanStartTag(p, n, &i, &state, &quote, &attributes) else { return false }
        case .endTag:
            i = index(of: UInt8(ascii: ">"), in: p, from: i, to: n)
            if i == n { return true }
            i += 1
            state = .text
        default:
            break
        }
        while i < n {
            if state == .text {
                i = index(of: UInt8(ascii: "<"), in: p, from: i, to: n)
                if i == n { return true }
                i += 1
                state = .open
                if i == n { return true }
            }
            // Just after "<".
            let b = p[i]
            i += 1
            switch b {
            case UInt8(ascii: "/"):
                i = index(of: UInt8(ascii: ">"), in: p, from: i, to: n)
                if i == n { state = .endTag; return true }
                i += 1
                state = .text
            case UInt8(ascii: "!"):
                state = .bang
                return true
            case UInt8(ascii: "?"):
                state = .pi
                return true
            case UInt8(ascii: ">"):
                state = .text
            default:
                attributes = 0
                state = .startTag
                guard scanStartTag(p, n, &i, &state, &quote, &attributes) else { return false }
            }
        }
        return true
    }

    /// Inside a start tag: names and spaces to the next quote, `=` (an attribute, counted) or `>`; a quoted value
    /// is skipped whole. Leaves `state` at `.text` after the tag's `>`, or `.startTag` / `.quoted` at the buffer's
    /// end; `false` once the tag has more than ``limit`` attributes.
    @inline(__always)
    private static func scanStartTag(_ p: UnsafePointer<UInt8>, _ n: Int, _ i: inout Int, _ state: inout State,
                                     _ quote: inout UInt8, _ attributes: inout Int) -> Bool {
        while true {
            // The four bytes that end a name or a space are all below 64: one bit test each, and letters (64 and
            // above) fail the first comparison.
            let stops: UInt64 = 1 << 0x22 | 1 << 0x27 | 1 << 0x3D | 1 << 0x3E  // " ' = >
            while i < n {
                let c = p[i]
                if c < 64 && (stops >> c) & 1 != 0 { break }
                i += 1
            }
            if i == n { return true }
            let c = p[i]
            i += 1
            if c == UInt8(ascii: ">") {
                state = .text
                return true
            }
            if c == UInt8(ascii: "=") {
                attributes += 1
                if attributes > limit { return false }
                continue
            }
            quote = c
            i = index(of: c, in: p, from: i, to: n)
            if i == n {
                state = .quoted
                return true
            }
            i += 1
        }
    }

    /// Line feeds in `bytes`, eight bytes at a time.
    private static func newlines(in bytes: UnsafeBufferPointer<UInt8>) -> Int {
        guard let p = bytes.baseAddress else { return 0 }
        var n = 0
        var i = 0
        #if _endian(little)
        let lineFeeds: UInt64 = 0x0A0A_0A0A_0A0A_0A0A, lows: UInt64 = 0x7F7F_7F7F_7F7F_7F7F, highs: UInt64 = 0x8080_8080_8080_8080
        let count = bytes.count
        while i &+ 8 <= count {
            let w = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self) ^ lineFeeds
            // A byte's high bit ends up set exactly when the byte is not zero (no carry crosses bytes).
            let nonZero = ((w & lows) &+ lows) | w
            n &+= (~nonZero & highs).nonzeroBitCount
            i &+= 8
        }
        #endif
        while i < bytes.count {
            n &+= p[i] == 0x0A ? 1 : 0
            i += 1
        }
        return n
    }

    /// The index of the first `byte` in `p[from..<to]`, or `to`; eight bytes at a time where eight remain.
    @inline(__always)
    private static func index(of byte: UInt8, in p: UnsafePointer<UInt8>, from: Int, to n: Int) -> Int {
        var i = from
        #if _endian(little)
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let pattern = UInt64(byte) &* ones
        while i &+ 8 <= n {
            let w = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self) ^ pattern
            // The lowest flagged lane is the first zero lane (a borrow may flag lanes above it, never below).
            let found = (w &- ones) & ~w & highs
            if found != 0 { return i &+ found.trailingZeroBitCount &>> 3 }
            i &+= 8
        }
        #endif
        while i < n, p[i] != byte { i += 1 }
        return i
    }

    /// Scans a whole document in memory; `false` if an element has too many attributes.
    public static func allows(_ bytes: some Collection<UInt8>) -> (allowed: Bool, line: Int) {
        var scanner = XMLAttributeGuard()
        let ok = bytes.withContiguousStorageIfAvailable { scanner.scan($0) }
            ?? Array(bytes).withUnsafeBufferPointer { scanner.scan($0) }
        return (ok, scanner.line)
    }
}
