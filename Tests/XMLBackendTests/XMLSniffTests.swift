import Foundation
import StoreAPI
import StoreTestSupport
import Testing
import XMLBackend

/// `sniff` tells stores, other XML and everything else apart from the first few kilobytes, without throwing.
@Suite struct XMLSniffTests {
    @Test func sniffClassifiesPaths() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let backend = XMLStoreBackend()
        #expect(backend.sniff(dir.path("missing.xml")) == .none)
        #expect(backend.sniff(dir.url) == .none, "a directory")
        #expect(backend.sniff(try dir.write("", to: "empty.xml")) == .none)
        #expect(backend.sniff(try dir.write("hello, world", to: "text.xml")) == .none)
        #expect(backend.sniff(try dir.write("<unclosed", to: "broken.xml")) == .none)
        let binary = dir.path("binary.sqlite")
        try Data("SQLite format 3\u{0}".utf8 + (0..<4000).map { UInt8(truncatingIfNeeded: $0) }).write(to: binary)
        #expect(backend.sniff(binary) == .none)
        #expect(backend.sniff(try dir.write("<?xml version=\"1.0\"?>\n<plist><dict/></plist>", to: "plist.xml"))
                == .foreign("XML document, but not a store"))
        #expect(backend.sniff(try dir.write(coreDataDocument(""), to: "coredata.xml")) == .store)
        // Only the beginning is read: a store whose tail is damaged still sniffs as a store (opening reports it).
        let big = coreDataDocument(String(repeating: "<object type=\"A\" id=\"z1\"></object>\n", count: 2000))
        let truncated = try dir.write(String(big.prefix(big.count / 2)), to: "truncated.xml")
        #expect(backend.sniff(truncated) == .store)
        // A long prologue (comments) before the root still fits the sniff window.
        let commented = try dir.write("<!-- \(String(repeating: "x", count: 2000)) -->\n<database/>", to: "commented.xml")
        #expect(backend.sniff(commented) == .store)
        // A UTF-16 document with a byte-order mark.
        let utf16 = dir.path("utf16.xml")
        var bytes: [UInt8] = [0xFF, 0xFE]
        for unit in "<?xml version=\"1.0\" encoding=\"UTF-16\"?><database></database>".utf16 {
            bytes.append(UInt8(unit & 0xFF)); bytes.append(UInt8(unit >> 8))
        }
        try Data(bytes).write(to: utf16)
        #expect(backend.sniff(utf16) == .store)
    }

    @Test func ownStoresSniffAsStores() throws {
        let dir = try TemporaryDirectory("xmlstore-tests")
        let url = dir.path("own.xml")
        let store = try openStore(url, creating: Fixture.metadata(try Fixture.schema()))
        try store.close()
        #expect(XMLStoreBackend().sniff(url) == .store)
        // Opening a foreign XML file is refused without touching it.
        let other = try dir.write("<html><body/></html>", to: "page.xml")
        #expect {
            _ = try openStore(other)
        } throws: { error in
            guard case StoreError.wrongStoreType = error else { return false }
            return true
        }
        #expect(try String(contentsOf: other, encoding: .utf8) == "<html><body/></html>")
        #expect(!FileManager.default.fileExists(atPath: other.path + ".lock"))
    }

    @Test func backendDeclaresItsType() {
        let b = XMLStoreBackend()
        #expect(b.typeIdentifier == "xml")
        #expect(b.fileExtensions == ["xml", "storexml"])
        #expect(b.capabilities == [.persistent, .transactions, .history, .orderedRelationships, .fastCopy, .atomic])
    }
}
