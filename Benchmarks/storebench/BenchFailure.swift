/// A benchmark's own failure (a reference that cannot run, a peer without what a row needs), with what went wrong.
struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
