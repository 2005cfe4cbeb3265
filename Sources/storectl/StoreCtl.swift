import ArgumentParser
import Foundation

/// `storectl`: inspect, convert, copy, import and export persistent stores of every registered type.
@main
struct StoreCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storectl",
        abstract: "Create, inspect, convert, copy, verify, upgrade, sync and compare persistent stores (SQLite, LMDB, XML, Core Data's own SQLite stores and PostgreSQL).",
        discussion: """
            Store types are detected from the files themselves; a new store's type comes from its file extension \
            (.sqlite/.sqlite3/.db → sqlite, .lmdb/.mdb → lmdb, .xml/.storexml → xml) unless --type/--to says otherwise. \
            A Core Data SQLite store (type coredata) is recognised by its Z_METADATA and Z_PRIMARYKEY tables; \
            reading one (info, schema, export, verify, diff, convert from it) never changes its files. Its model \
            comes from the store's model cache, or is inferred from its tables for stores without one (before 2012; \
            names and exact types are then guesses), or from the app's model given with --model PATH (.xcdatamodel, \
            .xcdatamodeld or .mom), which must match the store's version hashes. \
            `convert app.lmdb App.sqlite --to coredata` creates a Core Data store (a new .sqlite is otherwise the \
            sqlite type), and commands that write (import, convert into it) save into an existing one, unless it \
            has CloudKit tables. A store on a PostgreSQL server (type postgres) is a URL in place of a path, \
            postgres://[user[:password]@]host[:port]/database?schema=NAME, in every command (not in the static \
            build, which has no libpq); passwords never appear in output.

            Every command that writes a store stages it beside the destination and moves it into place only when it \
            is complete: a failed or interrupted command leaves the source untouched and no partial destination. \
            An existing destination is never overwritten without --force, and then it is replaced atomically.

            A progress bar is drawn on standard error when it is a terminal; --quiet silences it and the summaries.

            Exit codes:
              0    success (diff: identical stores; verify: no problems)
              1    diff: the stores differ; verify: problems were found
              2    the command failed; standard error says why (missing file,
                   not a store, existing destination, bad input line, ...)
              64   invalid command-line usage
              130  interrupted (Ctrl-C); nothing partial is left behind

            Examples:
              storectl create lib.sqlite --model Library.xcdatamodeld \\
                  --import library.ndjson
              storectl convert lib.sqlite lib.lmdb
              storectl info lib.lmdb
              storectl diff lib.sqlite lib.lmdb
              storectl upgrade lib.sqlite --model Library.xcdatamodeld --dry-run

            Shell completion scripts (bash, zsh, fish):
              storectl --generate-completion-script bash > storectl.bash
            """,
        version: "1.0.0",
        subcommands: [
            CreateCommand.self, ImportCommand.self, ExportCommand.self, InfoCommand.self, SchemaCommand.self,
            ConvertCommand.self, CopyCommand.self, ReplaceCommand.self, RelocateCommand.self, DestroyCommand.self,
            VerifyCommand.self, DiffCommand.self, UpgradeCommand.self, SyncCommand.self,
        ]
    )
}
