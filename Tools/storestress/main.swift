// storestress: a small process the reliability tests start, race and kill.
//
//   storestress saves <store> [--writer NAME] [--count N] [--timeout S] [--history] [--wait-for FILE]
//       Loops context saves on an existing store (its schema is read from the store; it must have the Author, Book
//       and Publisher entities of Samples/Library.xcdatamodeld). Save k inserts the author "NAME-k" with the two
//       books "NAME-k-a" and "NAME-k-b", and sets the revenue of the publisher "counter-NAME" to k — so a torn save
//       is visible as an author without both books or a counter that disagrees with the authors. Prints
//       "saved k" (unbuffered) after each committed save; continues from the counter when run again on the same
//       store. --count N stops once the counter reaches N; 0 (the default) loops until killed. --wait-for prints
//       "ready" once the store is open and waits until FILE exists before the first save (to start writers together).
//   storestress hold <store> [--read-only]
//       Opens the store, prints "holding", and sleeps until killed.
//   storestress limit-fsize <bytes> <program> [arguments…]
//       Runs a program with RLIMIT_FSIZE set to <bytes> and SIGXFSZ ignored, so writes past the limit fail with
//       EFBIG instead of killing the process.
//
// Errors go to standard error as "storestress: error: …" with exit status 1.

import Foundation
import LMDBBackend
import SQLiteBackend
import StoreAPI
import XMLBackend
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct UsageError: Error, CustomStringConvertible {
    let description: String
}

func registry() -> BackendRegistry {
    let registry = BackendRegistry(backends: [InMemoryBackend()])
    registry.register(SQLiteStoreBackend())
    registry.register(LMDBStoreBackend())
    registry.register(XMLStoreBackend())
    return registry
}

/// Command-line arguments after the mode: positional values and `--name value` / `--flag` options.
struct Arguments {
    var positional: [String] = []
    var options: [String: String] = [:]
    var flags: Set<String> = []

    init(_ raw: ArraySlice<String>, flags known: Set<String>) throws {
        var rest = raw[...]
        while let first = rest.popFirst() {
            if first.hasPrefix("--") {
                let name = String(first.dropFirst(2))
                if known.contains(name) {
                    flags.insert(name)
                } else {
                    guard let value = rest.popFirst() else { throw UsageError(description: "\(first) needs a value") }
                    options[name] = value
                }
            } else {
                positional.append(first)
            }
        }
    }

    func number(_ name: String, default value: Double) throws -> Double {
        guard let text = options[name] else { return value }
        guard let n = Double(text) else { throw UsageError(description: "--\(name): not a number: \(text)") }
        return n
    }
}

/// Writes a line to standard output at once (unbuffered), so a reader sees it even if the process is killed next.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

// MARK: saves

func runSaves(_ arguments: Arguments) throws {
    guard let path = arguments.positional.first else { throw UsageError(description: "saves: which store?") }
    let url = URL(fileURLWithPath: path)
    let writer = arguments.options["writer"] ?? "w"
    let count = Int(try arguments.number("count", default: 0))
    let registry = registry()
    let backend = try registry.detectBackend(at: url)
    let schema = try backend.readMetadata(at: url).schema
    let coordinator = StoreCoordinator(schema: schema, registry: registry)
    var description = StoreDescription(url: url, type: backend.typeIdentifier)
    description.options = StoreOptions(historyTracking: arguments.flags.contains("history"), createIfMissing: false,
                                       timeout: try arguments.number("timeout", default: 30))
    try coordinator.addStore(description)
    let context = coordinator.newContext()
    context.author = writer

    let counterName = "counter-\(writer)"
    var counter = try context.fetch("Publisher", where: "name == %@", .string(counterName)).first
    var k = Int64(try counter?.value(forKey: "revenue").integerValue ?? 0)
    if let start = arguments.options["wait-for"] {
        // Several writers start together: each opens its store, says so, then waits for the go file.
        say("ready")
        while !FileManager.default.fileExists(atPath: start) { usleep(2_000) }
    }
    while count == 0 || k < count {
        k += 1
        let author = try context.insert("Author", ["name": .string("\(writer)-\(k)")])
        for suffix in ["a", "b"] {
            let book = try context.insert("Book", ["title": .string("\(writer)-\(k)-\(suffix)"), "uid": .uuid(UUID()),
                                                   "pages": .integer32(Int32(truncatingIfNeeded: k))])
            try book.setObject(author, forKey: "author")
        }
        if let counter {
            try counter.setValue(.integer64(k), forKey: "revenue")
        } else {
            counter = try context.insert("Publisher", ["name": .string(counterName), "revenue": .integer64(k)])
        }
        try context.save()
        say("saved \(k)")
    }
    for store in coordinator.stores { try coordinator.removeStore(store) }
}

extension StoreValue {
    /// The value as an integer, for any integer attribute type.
    var integerValue: Int64? {
        switch self {
        case .integer16(let v): Int64(v)
        case .integer32(let v): Int64(v)
        case .integer64(let v): v
        default: nil
        }
    }
}

// MARK: hold

func runHold(_ arguments: Arguments) throws -> Never {
    guard let path = arguments.positional.first else { throw UsageError(description: "hold: which store?") }
    let url = URL(fileURLWithPath: path)
    let backend = try registry().detectBackend(at: url)
    let options = StoreOptions(isReadOnly: arguments.flags.contains("read-only"), createIfMissing: false, timeout: 0)
    let store = try backend.open(at: url, options: options, creating: nil)
    // Touch the records, as an application would, so every lock a reader takes is held.
    _ = try StoreTransfer.countRecords(store)
    say("holding")
    while true {
        sleep(3600)
        _ = store.metadata
    }
}

// MARK: limit-fsize

func runLimited(_ raw: ArraySlice<String>) throws -> Never {
    guard raw.count >= 2, let bytes = rlim_t(raw[raw.startIndex]) else {
        throw UsageError(description: "limit-fsize <bytes> <program> [arguments…]")
    }
    let program = raw[raw.startIndex + 1]
    var limit = rlimit(rlim_cur: bytes, rlim_max: bytes)
    #if canImport(Glibc)
    let resource = __rlimit_resource_t(RLIMIT_FSIZE.rawValue)
    #else
    let resource = RLIMIT_FSIZE
    #endif
    guard setrlimit(resource, &limit) == 0 else {
        throw UsageError(description: "setrlimit(RLIMIT_FSIZE): \(String(cString: strerror(errno)))")
    }
    signal(SIGXFSZ, SIG_IGN)
    let argv: [UnsafeMutablePointer<CChar>?] = raw.dropFirst().map { strdup($0) } + [nil]
    execv(program, argv)
    throw UsageError(description: "exec \(program): \(String(cString: strerror(errno)))")
}

// MARK: main

let commandLine = CommandLine.arguments
do {
    guard commandLine.count >= 2 else {
        throw UsageError(description: "usage: storestress saves|hold|limit-fsize …")
    }
    let rest = commandLine.dropFirst(2)
    switch commandLine[1] {
    case "saves": try runSaves(Arguments(rest, flags: ["history"]))
    case "hold": try runHold(Arguments(rest, flags: ["read-only"]))
    case "limit-fsize": try runLimited(rest)
    default: throw UsageError(description: "unknown mode \(commandLine[1]); use saves, hold or limit-fsize")
    }
} catch {
    let text = (error as? StoreError)?.description ?? (error as? UsageError)?.description ?? "\(error)"
    FileHandle.standardError.write(Data("storestress: error: \(text)\n".utf8))
    exit(1)
}
