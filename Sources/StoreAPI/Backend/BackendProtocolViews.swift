import Foundation

// The answers to `StoreBackend.asAtomicStoreBackend` and `asServerStoreBackend`: `nil` from the base protocol's
// extension, `self` from the refining protocols' (the more specific extension is a conforming type's witness).
// They replace casts to those protocols on the paths every store operation takes, where most casts fail: the first
// cast of a type to a protocol searches every conformance record of the process, a fixed cost paid again for each
// pair of type and protocol.

extension StoreBackend {
    /// `nil`: this backend is not an ``AtomicStoreBackend`` (that protocol's extension answers for those that are).
    public var asAtomicStoreBackend: (any AtomicStoreBackend)? { nil }
    /// `nil`: this backend is not a ``ServerStoreBackend`` (that protocol's extension answers for those that are).
    public var asServerStoreBackend: (any ServerStoreBackend)? { nil }
}

extension AtomicStoreBackend {
    /// This backend.
    public var asAtomicStoreBackend: (any AtomicStoreBackend)? { self }
}

extension ServerStoreBackend {
    /// This backend.
    public var asServerStoreBackend: (any ServerStoreBackend)? { self }
}
