// swift-tools-version: 6.1
import PackageDescription

// A third-party backend lives in its own package and depends on the framework like any user would: the `StoreAPI`
// product for the backend protocols and the backend kit (`@_spi(BackendKit) import StoreAPI`), and
// `StoreConformance` (tests only) for the published suite.
let package = Package(
    name: "JSONStoreBackend",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "JSONStoreBackend", targets: ["JSONStoreBackend"]),
    ],
    dependencies: [
        // The framework. A real third-party package would use `.package(url: …, from: …)` instead of a path.
        .package(name: "StoreKitSwift", path: "../.."),
    ],
    targets: [
        .target(
            name: "JSONStoreBackend",
            dependencies: [.product(name: "StoreAPI", package: "StoreKitSwift")]
        ),
        .testTarget(
            name: "JSONStoreBackendTests",
            dependencies: [
                "JSONStoreBackend",
                .product(name: "StoreAPI", package: "StoreKitSwift"),
                .product(name: "StoreConformance", package: "StoreKitSwift"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
