import Testing
@_spi(BackendKit) @testable import StoreAPI

/// Version hashes are SHA-256 digests stored in every store's metadata: a change to the digest or its hex form
/// would make every existing store look incompatible with its own schema.
struct StoreDigestTests {
    @Test("FIPS 180-4 test vectors", arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        (String(repeating: "a", count: 1000), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"),
    ])
    func vectors(_ message: String, _ hex: String) {
        #expect(StoreDigest.sha256Hex(Array(message.utf8)) == hex)
        #expect(StoreDigest.sha256(Array(message.utf8)).count == 32)
    }

    /// SHA-1 shares the padding with SHA-256; XML stores read from Core Data derive their global IDs from it.
    @Test("FIPS 180-4 SHA-1 test vectors", arguments: [
        ("", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        ("abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
    ])
    func sha1Vectors(_ message: String, _ hex: String) {
        let digest = StoreDigest.sha1(Array(message.utf8))
        #expect(digest.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined() == hex)
    }

    /// The hash of the benchmark dataset's `Tag` entity, as stores written before this test existed carry it.
    @Test func versionHashesOfAFixedEntityDoNotChange() throws {
        let schema = try Schema(entities: [
            EntityDescription(name: "Tag", attributes: [
                AttributeDescription(name: "name", type: .string),
                AttributeDescription(name: "weight", type: .double),
                AttributeDescription(name: "code", type: .integer16),
            ], relationships: [RelationshipDescription(name: "books", destination: "Book", inverse: "tags", isToMany: true)]),
            EntityDescription(name: "Book", attributes: [AttributeDescription(name: "title", type: .string)],
                              relationships: [RelationshipDescription(name: "tags", destination: "Tag", inverse: "books", isToMany: true)]),
        ])
        #expect(schema.versionHashes["Tag"] == "2682c00b9997c4e72e1b49a50fa71244171478bcc98ebc9fc237d76306f408ff")
    }
}
