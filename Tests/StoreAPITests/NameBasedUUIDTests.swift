import Foundation
@_spi(BackendKit) import StoreAPI
import Testing

@Suite struct NameBasedUUIDTests {
    /// The DNS namespace of RFC 4122 appendix C.
    static let dns = UUID(uuidString: "6BA7B810-9DAD-11D1-80B4-00C04FD430C8")

    /// Python's `uuid.uuid5(uuid.NAMESPACE_DNS, "www.example.com")`, the usual published vector.
    @Test func matchesTheReferenceVector() throws {
        let namespace = try #require(Self.dns)
        #expect(NameBasedUUID.make(namespace: namespace, name: "www.example.com").uuidString
            == "2ED6657D-E927-568B-95E1-2665A8AEA6A2")
    }

    /// A name-based UUID is version 5 and of the RFC 4122 variant, stable, and differs by name and by namespace.
    @Test func isStableVersion5AndSeparatesNamesAndNamespaces() throws {
        let a = UUID(), b = UUID()
        let id = NameBasedUUID.make(namespace: a, name: "Book/p7")
        #expect(id == NameBasedUUID.make(namespace: a, name: "Book/p7"))
        #expect(id != NameBasedUUID.make(namespace: a, name: "Book/p8"))
        #expect(id != NameBasedUUID.make(namespace: b, name: "Book/p7"))
        #expect(id.uuid.6 >> 4 == 5)
        #expect(id.uuid.8 >> 6 == 0b10)
    }
}
