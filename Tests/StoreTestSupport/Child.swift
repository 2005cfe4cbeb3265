import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The package's executables the tests run (`storectl`, `storestress`), built beside the test bundle.
public enum BuiltTools {
    /// `storectl`: `STORECTL` from the environment, or the built one.
    public static let storectl = find("storectl", environment: "STORECTL")
    /// `storestress`: `STORESTRESS` from the environment, or the built one.
    public static let storestress = find("storestress", environment: "STORESTRESS")

    /// The executable `name`: the path in the environment variable `key` when it is executable, else the first
    /// executable of that name beside the test bundle or in `.build/debug`.
    static func find(_ name: String, environment key: String) -> URL? {
        let fm = FileManager.default
        if let explicit = ProcessInfo.processInfo.environment[key], fm.isExecutableFile(atPath: explicit) {
            return URL(fileURLWithPath: explicit)
        }
        var candidates: [URL] = []
        let bundle = Bundle.main.bundleURL
        candidates += [bundle.appendingPathComponent(name), bundle.deletingLastPathComponent().appendingPathComponent(name)]
        for b in Bundle.allBundles {
            candidates.append(b.bundleURL.deletingLastPathComponent().appendingPathComponent(name))
        }
        if let first = CommandLine.arguments.first {
            let exe = URL(fileURLWithPath: first).resolvingSymlinksInPath()
            candidates.append(exe.deletingLastPathComponent().appendingPathComponent(name))
            // macOS: …/debug/Package.xctest/Contents/MacOS/Package
            candidates.append(exe.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent(name))
        }
        candidates.append(PackagePaths.root.appendingPathComponent(".build/debug/\(name)"))
        return candidates.first { fm.isExecutableFile(atPath: $0.path) }
    }

    /// `tool`, or a test issue saying how to provide the executable `name`.
    public static func require(_ tool: URL?, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> URL {
        try #require(tool, "\(name) not found next to the test bundle; build it (swift build) or set \(name.uppercased())",
                     sourceLocation: sourceLocation)
    }
}

/// A child process with its output captured in files, which a test can wait for, read while it runs, and kill.
public final class Child {
    public let process = Process()
    /// The command line, for messages.
    public let name: String
    private let outURL: URL
    private let errURL: URL

    /// Starts `executable` with `arguments` in `directory`; standard input from `stdin`, else empty. The output files
    /// live outside `directory`, so listings of it stay clean.
    public init(_ executable: URL, _ arguments: [String], directory: URL? = nil, stdin: URL? = nil) throws {
        name = ([executable.lastPathComponent] + arguments).joined(separator: " ")
        let tag = UUID().uuidString
        outURL = FileManager.default.temporaryDirectory.appendingPathComponent("child-out-\(tag)")
        errURL = FileManager.default.temporaryDirectory.appendingPathComponent("child-err-\(tag)")
        FileManager.default.createFile(atPath: outURL.path, contents: nil)
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        process.executableURL = executable
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        process.standardInput = try stdin.map { try FileHandle(forReadingFrom: $0) } ?? FileHandle.nullDevice
        try process.run()
    }

    /// Runs `storectl` in `directory` (standard input from `stdin`) and, unless `waiting` is false, to its end.
    @discardableResult
    public static func storectl(_ arguments: [String], in directory: TemporaryDirectory? = nil, stdin: URL? = nil,
                                waiting: Bool = true) throws -> Child {
        let child = try Child(try BuiltTools.require(BuiltTools.storectl, "storectl"), arguments, directory: directory?.url, stdin: stdin)
        if waiting { child.wait() }
        return child
    }

    /// Starts `storestress`.
    public static func storestress(_ arguments: [String]) throws -> Child {
        try Child(try BuiltTools.require(BuiltTools.storestress, "storestress"), arguments)
    }

    deinit {
        if process.isRunning { killProcess(process.processIdentifier); process.waitUntilExit() }
        try? FileManager.default.removeItem(at: outURL)
        try? FileManager.default.removeItem(at: errURL)
    }

    public var isRunning: Bool { process.isRunning }
    public var stdout: String { (try? String(contentsOf: outURL, encoding: .utf8)) ?? "" }
    public var stderr: String { (try? String(contentsOf: errURL, encoding: .utf8)) ?? "" }
    /// The exit status (meaningful after ``wait()`` when not ``killedBySignal``).
    public var status: Int32 { process.terminationStatus }
    /// Whether a signal ended the process.
    public var killedBySignal: Bool { process.terminationReason == .uncaughtSignal }

    /// Waits until the process ends.
    public func wait() { process.waitUntilExit() }

    /// Waits up to `timeout` seconds; returns whether the process ended.
    public func waitUntilExit(timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > deadline { return false }
            usleep(10_000)
        }
        process.waitUntilExit()
        return true
    }

    /// Sends SIGKILL if the process still runs, and reaps it. Returns whether the signal killed it (`false`: it
    /// had already finished on its own).
    @discardableResult
    public func kill() -> Bool {
        if process.isRunning { killProcess(process.processIdentifier) }
        process.waitUntilExit()
        return killedBySignal
    }

    /// Waits until standard output contains `text` (true) or the process ends or `timeout` passes (false).
    public func waitForOutput(_ text: String, timeout: Double = 60) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if stdout.contains(text) { return true }
            if !process.isRunning { return stdout.contains(text) }
            usleep(5_000)
        }
        return false
    }

    /// A description for failure messages.
    public var summary: String {
        "\(name): \(killedBySignal ? "killed" : "exit \(status)")\n  stdout: \(stdout.suffix(400))\n  stderr: \(stderr.suffix(800))"
    }
}

/// Sends SIGKILL to `pid` (`kill` alone is shadowed by ``Child/kill()`` inside the class).
func killProcess(_ pid: Int32) {
    #if canImport(Glibc)
    _ = Glibc.kill(pid, SIGKILL)
    #else
    _ = Darwin.kill(pid, SIGKILL)
    #endif
}

/// Whether a process with this id exists.
public func processExists(_ pid: Int32) -> Bool {
    #if canImport(Glibc)
    return Glibc.kill(pid, 0) == 0
    #else
    return Darwin.kill(pid, 0) == 0
    #endif
}
