// swift-tools-version: 6.1
import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "StoreKitSwift",
    // macOS 15: the Synchronization module's Mutex, which the framework locks with.
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "StoreAPI", targets: ["StoreAPI"]),
        .library(name: "SQLiteBackend", targets: ["SQLiteBackend"]),
        .library(name: "LMDBBackend", targets: ["LMDBBackend"]),
        .library(name: "XMLBackend", targets: ["XMLBackend"]),
        .library(name: "CoreDataBackend", targets: ["CoreDataBackend"]),
        // A product of its own: only applications that use PostgreSQL link libpq.
        .library(name: "PostgresBackend", targets: ["PostgresBackend"]),
        .library(name: "StoreConformance", targets: ["StoreConformance"]),
        .library(name: "StoreModels", targets: ["StoreModels"]),
        .library(name: "StoreSync", targets: ["StoreSync"]),
        // A product of its own, like PostgresBackend: apps that sync through folders only never link libpq.
        .library(name: "StoreSyncPostgres", targets: ["StoreSyncPostgres"]),
        .executable(name: "storectl", targets: ["storectl"]),
    ],
    traits: [
        // storectl's PostgreSQL support (on by default). The static storectl build turns it off: libpq's static
        // link needs static OpenSSL, GSSAPI and LDAP libraries that Debian does not ship.
        .trait(name: "PostgreSQL", description: "storectl reads and writes stores on a PostgreSQL server (links libpq)"),
        .default(enabledTraits: ["PostgreSQL"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // The `@Model` macro of StoreModels only: the string-keyed StoreAPI and the backends never build it.
        .package(url: "https://github.com/swiftlang/swift-syntax", "603.0.1"..<"604.0.0"),
    ],
    targets: [
        // System-library shims: a module map and one header each, nothing else.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
        .systemLibrary(name: "CLMDB", pkgConfig: "lmdb", providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]),
        .systemLibrary(name: "CLibXML2", pkgConfig: "libxml-2.0", providers: [.apt(["libxml2-dev"]), .brew(["libxml2"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),

        // The framework: schema, records, descriptions, the backend protocols, coordinator, context and operations.
        // It depends on no backend and no C library; it logs through swift-log.
        .target(name: "StoreAPI", dependencies: [.product(name: "Logging", package: "swift-log")]),

        // One backend each, written against StoreAPI's public backend protocols and its backend kit
        // (`@_spi(BackendKit) import StoreAPI`) only.
        // A database file looked at through SQLite's own VFS, shared by the two backends that keep SQLite files.
        .target(name: "SQLiteFiles", dependencies: ["CSQLite"]),
        .target(name: "SQLiteBackend", dependencies: ["StoreAPI", "CSQLite", "SQLiteFiles", .product(name: "Logging", package: "swift-log")]),
        .target(name: "LMDBBackend", dependencies: ["StoreAPI", "CLMDB", .product(name: "Logging", package: "swift-log")]),
        .target(name: "XMLBackend", dependencies: ["StoreAPI", "CLibXML2"]),
        // Core Data's own SQLite stores (issue 23): zlib for the compressed model cache (`Z_MODELCACHE`); CSHA1 for
        // the SHA-1 of every record's derived global ID on processors with SHA instructions.
        .target(name: "CSHA1"),
        .target(name: "CoreDataBackend", dependencies: ["StoreAPI", "CSQLite", "CZlib", "SQLiteFiles", "CSHA1"]),
        // A store in a PostgreSQL schema (issue 26), through libpq: the backend protocols are synchronous and libpq
        // speaks the wire protocol (COPY included) without an event-loop framework in the build.
        .target(name: "PostgresBackend", dependencies: ["StoreAPI", "CLibPQ"]),

        // Typed models for apps (issue 27): the `@Model` macro's expansion (a compiler plug-in) and the runtime it
        // expands to — typed fetch and save, async read/write, observation — on StoreAPI's string-keyed context.
        .macro(
            name: "StoreModelsMacros",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),
        .target(name: "StoreModels", dependencies: ["StoreAPI", "StoreModelsMacros"]),
        // Sync between peers through a remote (issue 25): written against StoreAPI's public API only, so it works
        // with every backend.
        .target(name: "StoreSync", dependencies: ["StoreAPI", .product(name: "Logging", package: "swift-log")]),
        // The PostgreSQL remote (`postgres://` remote URLs): an append-only change log on the server, through libpq.
        .target(name: "StoreSyncPostgres", dependencies: ["StoreAPI", "StoreSync", "PostgresBackend", "CLibPQ"]),

        // The published conformance suite every backend runs (built-in and third-party).
        .target(name: "StoreConformance", dependencies: ["StoreAPI", "StoreModels"]),

        .executableTarget(
            name: "storectl",
            dependencies: [
                "StoreAPI", "SQLiteBackend", "LMDBBackend", "XMLBackend", "CoreDataBackend", "StoreSync",
                .target(name: "PostgresBackend", condition: .when(traits: ["PostgreSQL"])),
                .target(name: "StoreSyncPostgres", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),


        // The second process of the conformance suite's multiProcess group, for the built-in backends.
        .executableTarget(
            name: "conformance-worker",
            dependencies: ["StoreConformance", "SQLiteBackend", "LMDBBackend", "XMLBackend", "PostgresBackend"],
            path: "Tools/conformance-worker"
        ),

        // A small process the reliability tests drive and kill: loops context saves, writes concurrently, holds a
        // store open. Not a product; only the tests use it.
        .executableTarget(
            name: "storestress",
            dependencies: ["StoreAPI", "SQLiteBackend", "LMDBBackend", "XMLBackend"],
            path: "Tools/storestress"
        ),

        // What the test targets share: the seeded generator, temporary directories, record and schema builders,
        // child processes of the built tools, and raw liblmdb access. No backend, so StoreAPITests stays without one.
        .target(
            name: "StoreTestSupport",
            dependencies: ["StoreAPI", "CLMDB", .product(name: "Logging", package: "swift-log")],
            path: "Tests/StoreTestSupport"
        ),

        .testTarget(
            name: "StoreAPITests",
            dependencies: ["StoreAPI", "StoreConformance", "StoreTestSupport", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "SQLiteBackendTests",
            dependencies: [
                "StoreAPI", "SQLiteBackend", "StoreConformance", "CSQLite", "conformance-worker", "StoreTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "LMDBBackendTests",
            dependencies: ["StoreAPI", "LMDBBackend", "StoreConformance", "CLMDB", "conformance-worker", "StoreTestSupport"]
        ),
        // The typed model layer through its public API, on every built-in store type.
        .testTarget(
            name: "StoreModelsTests",
            dependencies: ["StoreModels", "StoreAPI", "StoreSync", "SQLiteBackend", "LMDBBackend", "XMLBackend", "CSQLite", "storectl", "StoreTestSupport"]
        ),
        .testTarget(name: "XMLBackendTests", dependencies: ["StoreAPI", "XMLBackend", "StoreConformance", "StoreTestSupport"]),
        .testTarget(
            name: "CoreDataBackendTests",
            dependencies: ["StoreAPI", "CoreDataBackend", "SQLiteBackend", "LMDBBackend", "XMLBackend", "CSQLite", "storectl", "StoreTestSupport", "StoreConformance"]
        ),
        // The PostgreSQL backend against a private server the tests start (StoreTestSupport's PostgresTestServer).
        .testTarget(
            name: "PostgresBackendTests",
            dependencies: [
                "StoreAPI", "PostgresBackend", "SQLiteBackend", "LMDBBackend", "StoreConformance", "CLibPQ", "storectl",
                "conformance-worker", "StoreTestSupport",
            ]
        ),
        // Every backend together: the operations matrix across types, NDJSON and the verifier on every type.
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["StoreAPI", "SQLiteBackend", "LMDBBackend", "XMLBackend", "StoreConformance", "StoreTestSupport"]
        ),
        // The storectl binary end to end.
        .testTarget(
            name: "StorectlTests",
            dependencies: ["StoreAPI", "SQLiteBackend", "LMDBBackend", "XMLBackend", "storectl", "StoreTestSupport"]
        ),
        // Crash-kill harness, resource failures, concurrent writers, destroy safety and path names, end to end.
        .testTarget(
            name: "ReliabilityTests",
            dependencies: ["StoreAPI", "SQLiteBackend", "LMDBBackend", "XMLBackend", "storectl", "storestress", "StoreTestSupport"]
        ),
        // Sync engine and remotes: scenarios, corner cases and random convergence across backends, and storectl sync.
        .testTarget(
            name: "StoreSyncTests",
            dependencies: [
                "StoreAPI", "StoreSync", "StoreSyncPostgres", "SQLiteBackend", "LMDBBackend", "XMLBackend", "storectl",
                "StoreTestSupport", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Seeded mutation fuzzing of every reader of untrusted input (a short deterministic run; longer by env var).
        .testTarget(
            name: "FuzzTests",
            dependencies: ["StoreAPI", "SQLiteBackend", "LMDBBackend", "XMLBackend", "CoreDataBackend", "PostgresBackend", "StoreTestSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
