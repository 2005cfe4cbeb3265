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

    /// Lengths on either side of the block boundaries, where the padding takes a second block or the message
    /// fills one exactly (expected digests from an independent implementation, Python's hashlib).
    @Test("SHA-256 around block boundaries", arguments: [
        (55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"),
        (56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"),
        (63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"),
        (64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"),
        (65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"),
        (119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"),
        (120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"),
    ])
    func blockBoundaries(_ count: Int, _ hex: String) {
        #expect(StoreDigest.sha256Hex([UInt8](repeating: UInt8(ascii: "a"), count: count)) == hex)
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

    /// SHA-512 computes Core Data's model digest (`NSStoreModelVersionHashesDigest`). The first three are FIPS
    /// 180-4's examples; the 111- and 112-byte messages sit on either side of the point where the padding needs a
    /// second block, and 1000 bytes spans several blocks.
    @Test("FIPS 180-4 SHA-512 test vectors", arguments: [
        ("", "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"),
        ("abc", "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"),
        ("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu", "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909"),
        (String(repeating: "a", count: 111), "fa9121c7b32b9e01733d034cfc78cbf67f926c7ed83e82200ef86818196921760b4beff48404df811b953828274461673c68d04e297b0eb7b2b4d60fc6b566a2"),
        (String(repeating: "a", count: 112), "c01d080efd492776a1c43bd23dd99d0a2e626d481e16782e75d54c2503b5dc32bd05f0f1ba33e568b88fd2d970929b719ecbb152f58f130a407c8830604b70ca"),
        (String(repeating: "a", count: 1000), "67ba5535a46e3f86dbfbed8cbbaf0125c76ed549ff8b0b9e03e0c88cf90fa634fa7b12b47d77b694de488ace8d9a65967dc96df599727d3292a8d9d447709c97"),
    ])
    func sha512Vectors(_ message: String, _ hex: String) {
        let digest = StoreDigest.sha512(Array(message.utf8))
        #expect(digest.count == 64)
        #expect(digest.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined() == hex)
    }

    /// The legacy hash of the benchmark dataset's `Tag` entity, as stores written before version hashes became
    /// Core Data's carry it: the legacy algorithm must never move, or those stores stop opening.
    @Test func legacyVersionHashesOfAFixedEntityDoNotChange() throws {
        let schema = try Schema(entities: [
            EntityDescription(name: "Tag", attributes: [
                AttributeDescription(name: "name", type: .string),
                AttributeDescription(name: "weight", type: .double),
                AttributeDescription(name: "code", type: .integer16),
            ], relationships: [RelationshipDescription(name: "books", destination: "Book", inverse: "tags", isToMany: true)]),
            EntityDescription(name: "Book", attributes: [AttributeDescription(name: "title", type: .string)],
                              relationships: [RelationshipDescription(name: "tags", destination: "Tag", inverse: "books", isToMany: true)]),
        ])
        #expect(schema.legacyVersionHashes["Tag"] == "2682c00b9997c4e72e1b49a50fa71244171478bcc98ebc9fc237d76306f408ff")
        #expect(schema.versionHashes["Tag"] != schema.legacyVersionHashes["Tag"])
    }
}
