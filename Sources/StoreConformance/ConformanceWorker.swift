import Foundation
import StoreAPI

/// The second process of the ``ConformanceGroup/multiProcess`` group.
///
/// A backend that declares ``BackendCapabilities/multiProcess`` proves it by running the group against a second
/// process that uses the same store at the same time. That process must know the backend, so the backend's author
/// provides it: a tiny executable target whose whole `main.swift` is
///
/// ```swift
/// import StoreConformance
/// ConformanceWorker.main(backends: [MyBackend()])
/// ```
///
/// Make the test target depend on the executable (so it is built beside the tests), and pass its location:
///
/// ```swift
/// static let suite = ConformanceSuite(backend: MyBackend(), worker: ConformanceWorker.executable(named: "my-worker"))
/// ```
///
/// The worker understands two commands, and exits 0 on success and 1 (with the error on standard error) otherwise:
/// - `insert TYPE URL PREFIX COUNT PER_SAVE` inserts `COUNT` `Tag` records named `PREFIX-0`… through a context,
///   saving every `PER_SAVE` records, into the existing store of ``ConformanceSchema``;
/// - `count TYPE URL ENTITY` prints how many records of `ENTITY` the store holds.
public enum ConformanceWorker {
    /// Runs the worker command in `CommandLine.arguments` with `backends` registered, then exits.
    public static func main(backends: [any StoreBackend]) -> Never {
        let registry = BackendRegistry(backends: [InMemoryBackend()] + backends)
        do {
            try run(Array(CommandLine.arguments.dropFirst()), registry: registry)
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("conformance worker: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run(_ args: [String], registry: BackendRegistry) throws {
        guard args.count >= 3 else { throw StoreError.unsupported("usage: insert|count TYPE URL …") }
        let type = args[1]
        // A path, or a server store's URL (`postgres://…`).
        let url = args[2].contains("://") ? URL(string: args[2]) ?? URL(fileURLWithPath: args[2]) : URL(fileURLWithPath: args[2])
        let coordinator = StoreCoordinator(schema: try ConformanceSchema.make(), registry: registry)
        var options = StoreOptions(createIfMissing: false)
        options.timeout = 30
        try coordinator.addStore(StoreDescription(url: url, type: type, options: options))
        defer { for s in coordinator.stores { try? coordinator.removeStore(s) } }
        let context = coordinator.newContext()
        switch (args[0], args.count) {
        case ("insert", 6):
            guard let count = Int(args[4]), let perSave = Int(args[5]), perSave > 0 else {
                throw StoreError.unsupported("insert needs COUNT and PER_SAVE as numbers")
            }
            for i in 0..<count {
                try context.insert("Tag", ["name": .string("\(args[3])-\(i)")])
                if (i + 1) % perSave == 0 { try context.save() }
            }
            try context.save()
        case ("count", 4):
            print(try context.count(FetchRequest(entity: args[3])))
        default:
            throw StoreError.unsupported("unknown worker command \(args.joined(separator: " "))")
        }
    }

    /// The executable named `name` built beside the running test bundle (SwiftPM puts every product of a package
    /// in one directory), or `nil` when there is none.
    public static func executable(named name: String) -> URL? {
        let fm = FileManager.default
        var candidates: [URL] = []
        for bundle in Bundle.allBundles {
            candidates.append(bundle.bundleURL.deletingLastPathComponent().appendingPathComponent(name))
        }
        if let first = CommandLine.arguments.first {
            let exe = URL(fileURLWithPath: first).resolvingSymlinksInPath()
            candidates.append(exe.deletingLastPathComponent().appendingPathComponent(name))
            // macOS: …/debug/Package.xctest/Contents/MacOS/Package
            candidates.append(exe.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent(name))
        }
        return candidates.first { fm.isExecutableFile(atPath: $0.path) }
    }
}
