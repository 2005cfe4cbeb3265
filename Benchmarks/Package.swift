// swift-tools-version: 6.1
import PackageDescription

// The benchmarks are a package of their own so that what only they need (the engines' C libraries called directly
// as references, and libraries a user might pick instead, measured beside ours) is never resolved or built by an
// application that depends on StoreKitSwift. Run them with scripts/bench.sh (release) or, from this folder,
// `swift run storebench --smoke`.
let package = Package(
    name: "StoreKitSwiftBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "StoreKitSwift", path: ".."),
        // The library an app developer would pick instead of the typed models: measured beside them, never a
        // dependency of the library itself.
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ],
    targets: [
        // The engines' C APIs, for the references storebench measures ours against. Named apart from the library's
        // own shims (CSQLite, CLMDB, CLibXML2, CLibPQ), which are not products.
        .systemLibrary(name: "BenchSQLite", path: "Shims/BenchSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
        .systemLibrary(name: "BenchLMDB", path: "Shims/BenchLMDB", pkgConfig: "lmdb", providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]),
        .systemLibrary(name: "BenchLibPQ", path: "Shims/BenchLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
        .systemLibrary(name: "BenchLibXML2", path: "Shims/BenchLibXML2", pkgConfig: "libxml-2.0", providers: [.apt(["libxml2-dev"]), .brew(["libxml2"])]),
        .executableTarget(
            name: "storebench",
            dependencies: [
                .product(name: "StoreAPI", package: "StoreKitSwift"),
                .product(name: "SQLiteBackend", package: "StoreKitSwift"),
                .product(name: "LMDBBackend", package: "StoreKitSwift"),
                .product(name: "XMLBackend", package: "StoreKitSwift"),
                .product(name: "CoreDataBackend", package: "StoreKitSwift"),
                .product(name: "PostgresBackend", package: "StoreKitSwift"),
                .product(name: "StoreModels", package: "StoreKitSwift"),
                .product(name: "StoreSync", package: "StoreKitSwift"),
                .product(name: "StoreSyncPostgres", package: "StoreKitSwift"),
                .product(name: "GRDB", package: "GRDB.swift"),
                "BenchSQLite", "BenchLMDB", "BenchLibXML2", "BenchLibPQ",
            ],
            path: "storebench"
        ),
    ]
)
