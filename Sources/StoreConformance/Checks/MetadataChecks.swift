import Foundation
import StoreAPI
import Testing

extension ConformanceSuite {
    func checkMetadata(_ h: Harness) throws {
        let url = h.storeURL()
        let (c, store) = try h.coordinator(url)
        let uuid = store.identifier
        let written = store.store.metadata
        #expect(written.storeType == backend.typeIdentifier)
        #expect(written.schema == h.schema)
        #expect(written.versionHashes == h.schema.versionHashes)
        try h.close(c)

        var m = try backend.readMetadata(at: url)
        #expect(m.storeUUID == uuid, "readMetadata must return the UUID the store was created with")
        #expect(m.schema == h.schema)
        m.custom["app.version"] = .string("1.2 ü")
        m.custom["count"] = .integer(-42)
        m.custom["ratio"] = .double(0.25)
        m.custom["nested"] = .dictionary(["list": .array([.bool(true), .null, .string("x")])])
        try backend.writeMetadata(m, at: url)
        let again = try backend.readMetadata(at: url)
        #expect(again.custom == m.custom)
        #expect(again.storeUUID == uuid)

        let (c2, s2) = try h.coordinator(url)
        #expect(s2.identifier == uuid)
        #expect(s2.store.metadata.custom == m.custom, "custom metadata must survive an open")
        try h.close(c2)

        #expect(throws: StoreError.self) { _ = try backend.readMetadata(at: h.storeURL("missing")) }
    }
}
