import Foundation
import StoreAPI
import Testing

extension ConformanceSuite {
    func checkSniffing(_ h: Harness) throws {
        let url = h.storeURL()
        #expect(backend.sniff(url) == .none, "a missing path is not a store")
        try #require(FileManager.default.createFile(atPath: url.path, contents: Data()))
        #expect(backend.sniff(url) == .none, "an empty file is not a store")
        try FileManager.default.removeItem(at: url)
        let text = h.directory.appendingPathComponent("notes.txt")
        try Data("just some text\n".utf8).write(to: text)
        #expect(backend.sniff(text) == .none)
        #expect(backend.sniff(h.directory) != .store, "a plain directory is not a store")

        let listing = h.listing()
        let (c, _) = try h.coordinator(url)
        try h.close(c)
        #expect(backend.sniff(url) == .store)
        #expect(try registry.detectBackend(at: url).typeIdentifier == backend.typeIdentifier, "the registry finds the backend by sniffing")
        #expect(h.listing().count > listing.count)

        // Sniffing never writes: the directory listing and the store's bytes stay as they are.
        let before = Self.fingerprint(backend, url)
        let names = h.listing()
        for _ in 0..<3 { _ = backend.sniff(url); _ = backend.sniff(text) }
        #expect(h.listing() == names && Self.fingerprint(backend, url) == before)

        // Other backends do not claim this one's stores, and this one does not claim theirs.
        for peer in peers where peer.capabilities.contains(.persistent) {
            #expect(peer.sniff(url) != .store, "\(peer.typeIdentifier) must not claim a \(backend.typeIdentifier) store")
            let peerURL = h.directory.appendingPathComponent("peer." + (peer.fileExtensions.first ?? "store"))
            let c2 = StoreCoordinator(schema: h.schema, registry: registry)
            try c2.addStore(StoreDescription(url: peerURL, type: peer.typeIdentifier))
            for s in c2.stores { try c2.removeStore(s) }
            #expect(backend.sniff(peerURL) != .store, "\(backend.typeIdentifier) must not claim a \(peer.typeIdentifier) store")
            #expect(throws: StoreError.self) { try backend.destroyStore(at: peerURL) }
            #expect(peer.sniff(peerURL) == .store, "a refused destroy must leave the other store intact")
        }
    }

    func checkOwnedFilesAndDestroy(_ h: Harness) throws {
        let before = h.listing()
        let url = h.storeURL()
        let (c, _) = try h.coordinator(url, options: StoreOptions(historyTracking: true))
        let ctx = c.newContext()
        for i in 0..<50 { try ctx.insert("Tag", ["name": .string("tag \(i)")]) }
        try ctx.save()
        let whileOpen = backend.ownedFiles(ofStoreAt: url)
        #expect(!whileOpen.isEmpty)
        for f in whileOpen { #expect(FileManager.default.fileExists(atPath: f.path), "owned file \(f.lastPathComponent) must exist") }
        try h.close(c)
        let owned = backend.ownedFiles(ofStoreAt: url)
        #expect(!owned.isEmpty)
        // Every new entry in the directory belongs to the store.
        let ownedNames = Set(owned.map(\.lastPathComponent))
        for name in h.listing() where !before.contains(name) {
            #expect(ownedNames.contains(name), "\(name) appeared next to the store but is not listed as owned")
        }
        // An unrelated file next to the store must survive destroy.
        let neighbour = h.directory.appendingPathComponent(url.lastPathComponent + ".notes")
        try Data("mine".utf8).write(to: neighbour)
        try backend.destroyStore(at: url)
        for f in owned { #expect(!FileManager.default.fileExists(atPath: f.path), "destroy left \(f.lastPathComponent) behind") }
        #expect(FileManager.default.contents(atPath: neighbour.path) == Data("mine".utf8), "destroy must not touch other files")
        try FileManager.default.removeItem(at: neighbour)
        #expect(h.listing() == before, "destroy leaves the directory exactly as it was before the store was created")
        #expect(backend.sniff(url) == .none)
        #expect(throws: StoreError.self, "destroying a missing store is an error") { try backend.destroyStore(at: url) }
    }
}
