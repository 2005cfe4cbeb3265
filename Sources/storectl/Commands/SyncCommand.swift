import ArgumentParser
import Foundation
import Logging
import StoreAPI
import StoreSync
#if PostgreSQL
import StoreSyncPostgres
#endif

struct SyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Sync a store with its remote: push its changes, pull and apply the others'.",
        discussion: """
            The first time, --remote attaches the store: the remote and container are stored with the store, the \
            records it already holds are pushed once (only those the remote does not have yet) and the changes of \
            other peers are pulled. Later, `storectl sync STORE` syncs with the stored options. A remote is a \
            file:// URL of a directory (a network share or a synced folder; each container is a sub-directory) or a \
            postgres:// URL of a PostgreSQL server (postgres://user@host/db?schema=NAME: the remote's tables live in \
            that schema, storesync by default; each container is a dataset there). The remote URL is stored with \
            the store: give a server's password through PGPASSWORD or ~/.pgpass rather than in the URL. STORE may \
            be a path or a postgres:// store URL.

            Records are matched by global ID, never by primary key: two stores that hold the same records (a \
            backup restored on another machine) never duplicate them. A copy of a synced store becomes a new peer \
            on its first sync. Sync moves records, not schemas: a new peer is created first, empty, with the \
            schema of a store that syncs already (storectl create NEW --model PEER, or, with PEER on another \
            machine, storectl schema PEER --json > schema.json there and --model schema.json here). Sync waits at most --timeout seconds for each answer of the remote, and a failed \
            sync changes nothing.

            Examples:
              storectl sync laptop.sqlite --remote file:///mnt/share/sync --container library
              storectl sync desktop.lmdb --remote file:///mnt/share/sync --container library
              storectl sync laptop.sqlite --remote 'postgres://sync@db.example/app?schema=storesync' --container library
              storectl sync 'postgres://app@db.example/app?schema=library' --remote 'postgres://sync@db.example/app'
              storectl sync laptop.sqlite --json
              storectl sync laptop.sqlite --status
              storectl sync laptop.sqlite --detach
            """
    )

    @Argument(help: "The store to sync: a path or a postgres:// store URL.")
    var store: String

    @Option(name: .long, help: ArgumentHelp("The remote: a file:// or postgres:// URL, or a path of a directory (first sync only).", valueName: "url"))
    var remote: String?

    @Option(name: .long, help: ArgumentHelp("The container on the remote (default: default).", valueName: "id"))
    var container: String?

    @Option(name: .long, help: ArgumentHelp("The store's type, when detection cannot tell.", valueName: "type"))
    var type: String?

    @Option(name: .long, help: ArgumentHelp("Seconds to wait for each answer of the remote before giving up.", valueName: "seconds"))
    var timeout: Double = 60

    @Flag(name: .long, help: "Print where the store stands (peer, remote, changes not pushed yet) without syncing.")
    var status = false

    @Flag(name: .long, help: "Forget the store's sync state and stored remote; its records stay.")
    var detach = false

    @Flag(name: .long, help: "Print the result as JSON.")
    var json = false

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard !(status && detach) else { throw ValidationError("--status and --detach exclude each other") }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
    }

    func run() throws {
        try runCommand("sync", logLevel: common.logLevel) {
            Remotes.register()
            let url = StoreArgument.url(store)
            let backend: any StoreBackend
            do {
                backend = try Backends.existing(url, type: type)
            } catch StoreError.storeNotFound(let missing) where !detach && !status {
                // Sync moves records, not schemas: a new peer starts as an empty store with its peers' schema.
                throw CommandFailure("\(StoreError.storeNotFound(missing)); create the new peer first, with the "
                    + "schema of a store that syncs already: storectl create \(store) --model PEER (or, with PEER on "
                    + "another machine, storectl schema PEER --json > schema.json there, then --model schema.json)")
            }
            if detach || status {
                let opened = try backend.open(at: url, options: StoreOptions(isReadOnly: status, createIfMissing: false), creating: nil)
                defer { try? opened.close() }
                if detach {
                    try SyncEngine.detach(opened)
                    try opened.close()
                    if json { try JSONOutput.print(["detached": url.displayName]) } else { Console.note("\(url.displayName): detached from its remote", quiet: common.quiet) }
                } else {
                    let s = try SyncEngine.status(of: opened, options: nil)
                    if json { try JSONOutput.print(Self.withoutPassword(s)) } else { print(Self.text(s, url: url)) }
                }
                return
            }
            let metadata = try backend.readMetadata(at: url)
            let options = try syncOptions(stored: metadata.syncOptions, url: url)
            let coordinator = StoreCoordinator(schema: metadata.schema, registry: Backends.registry)
            var description = StoreDescription(url: url, type: backend.typeIdentifier, configuration: metadata.configuration,
                                               syncOptions: options)
            description.options.historyTracking = true
            description.options.createIfMissing = false
            let loaded = try coordinator.addStore(description)
            defer { try? coordinator.removeStore(loaded) }
            let logger = try CommandLogging.logger(command: "sync", level: common.logLevel)
            let engine = try SyncEngine(store: loaded, coordinator: coordinator, timeout: timeout, logger: logger)
            let report = try BlockingTask.run { try await engine.sync() }
            try coordinator.removeStore(loaded)
            if json { try JSONOutput.print(report) } else { Console.note(Self.text(report, url: url), quiet: common.quiet) }
        }
    }

    /// The options to sync with: the stored ones, or those given the first time. Options that differ from the
    /// stored ones are refused: merging a store into another dataset must be asked for by detaching first.
    private func syncOptions(stored: SyncOptions?, url: URL) throws -> SyncOptions {
        guard let remote else {
            guard let stored else {
                throw CommandFailure("\(url.displayName): the store has no remote yet; attach it with --remote file:///DIR or postgres://… [--container ID]")
            }
            if let container, container != stored.containerIdentifier {
                throw CommandFailure("\(url.displayName): syncs with container '\(stored.containerIdentifier)', not '\(container)'; --detach it first to change")
            }
            return stored
        }
        let remoteURL: URL
        if remote.contains("://") {
            guard let u = URL(string: remote), u.scheme != nil else { throw CommandFailure("\(remote): not a URL") }
            remoteURL = u
        } else {
            remoteURL = URL(fileURLWithPath: remote, isDirectory: true)
        }
        let given = SyncOptions(remote: remoteURL, containerIdentifier: container ?? stored?.containerIdentifier ?? "default")
        if let stored, !Self.sameRemote(stored.remote, given.remote) || stored.containerIdentifier != given.containerIdentifier {
            throw CommandFailure("\(url.displayName): already syncs with \(SyncRemotes.displayName(of: stored.remote)) (container "
                + "'\(stored.containerIdentifier)'); --detach it first to sync it with another remote")
        }
        return given
    }

    /// The status as printed: its remote URL without a password.
    static func withoutPassword(_ s: SyncStatus) -> SyncStatus {
        var shown = s
        if let remote = s.remote, remote.password != nil, var c = URLComponents(url: remote, resolvingAgainstBaseURL: false) {
            c.password = nil
            shown.remote = c.url
        }
        return shown
    }

    /// Whether two remote URLs name the same remote: the same directory, or the same server URL.
    static func sameRemote(_ a: URL, _ b: URL) -> Bool {
        guard a.scheme?.lowercased() == b.scheme?.lowercased() else { return false }
        return a.isFileURL ? a.standardizedFileURL.path == b.standardizedFileURL.path : a.absoluteString == b.absoluteString
    }

    static func text(_ r: SyncReport, url: URL) -> String {
        var line = "\(url.displayName): \(r.attached ? "attached to" : "synced with") \(r.remote): pushed "
            + "\(Console.count(r.pushedRecords, "record change")) in \(Console.count(r.pushedFiles, "file")); pulled "
            + "\(Console.count(r.pulledFiles, "file")): \(Console.count(r.insertedRecords)) inserted, "
            + "\(Console.count(r.updatedRecords)) updated, \(Console.count(r.deletedRecords)) deleted"
        if r.mergedDuplicates > 0 { line += ", \(Console.count(r.mergedDuplicates, "duplicate")) merged" }
        if r.ignoredFiles > 0 { line += "; \(Console.count(r.ignoredFiles, "foreign file")) ignored" }
        if r.becameNewPeer { line += "; the store is a copy and became a new peer" }
        return line
    }

    static func text(_ s: SyncStatus, url: URL) -> String {
        guard let remote = s.remote else { return "\(url.displayName): not syncing (no remote)" }
        var lines = ["\(url.displayName): syncs with \(SyncRemotes.displayName(of: remote)), container '\(s.container ?? "")'"]
        if let peer = s.peer {
            lines.append("  peer:            \(peer.uuidString)")
            lines.append("  files pushed:    \(s.pushedFiles)")
            // Syncs that move nothing leave the state untouched (so they cost no save): this is the last exchange.
            lines.append("  last exchange:   \(s.lastSync.map { ISO8601DateFormatter().string(from: $0) } ?? "none yet")")
        } else {
            lines.append("  not attached yet: the next sync pushes the records it holds")
        }
        lines.append("  unpushed saves:  \(s.pendingTransactions)")
        return lines.joined(separator: "\n")
    }
}

/// The remotes storectl syncs through besides folders.
enum Remotes {
    private static let registered: Void = {
        #if PostgreSQL
        PostgresRemote.register()
        #endif
    }()

    /// Registers them, once.
    static func register() { registered }
}

/// Runs async work to completion from synchronous code (a command's `run`), on the global executor.
enum BlockingTask {
    private final class Box<T: Sendable>: @unchecked Sendable {
        var result: Result<T, any Error>?
    }

    static func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let box = Box<T>()
        let done = DispatchSemaphore(value: 0)
        Task {
            do { box.result = .success(try await body()) } catch { box.result = .failure(error) }
            done.signal()
        }
        done.wait()
        guard let result = box.result else { throw CommandFailure("the sync task ended without a result") }
        return try result.get()
    }
}
