// swift-tools-version: 6.1
import PackageDescription

// The reading-list app of the README and the "Getting started with typed models" article, as a user would write it:
// its own package, depending on the framework's products.
let package = Package(
    name: "ReadingList",
    platforms: [.macOS(.v15)],
    dependencies: [
        // The framework. A real app would use `.package(url: …, from: …)` instead of a path.
        .package(name: "StoreKitSwift", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "ReadingList",
            dependencies: [
                .product(name: "StoreModels", package: "StoreKitSwift"),
                .product(name: "StoreAPI", package: "StoreKitSwift"),
                .product(name: "SQLiteBackend", package: "StoreKitSwift"),
                .product(name: "LMDBBackend", package: "StoreKitSwift"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
