#!/bin/sh
# Fuzzing beyond the short deterministic run that `swift test` does (Tests/FuzzTests).
#
#   scripts/fuzz.sh long [ITERATIONS] [SEED]
#       The seeded mutation harness, ITERATIONS inputs per target (default 100000), in a release build:
#       XML store reader, .xcdatamodel loader and .xccurrentversion, NDJSON importer, predicate parser (checked
#       against every backend), metadata / schema / history JSON, SQLite files and WALs, LMDB files (in a
#       storectl child process each, so the LMDB target is slower: its count defaults to ITERATIONS/20; set
#       STORE_FUZZ_ITERATIONS_LMDB_FILE to change it). A new SEED (any text or number) explores new inputs;
#       the same SEED replays the same ones. Every target prints one line of counts. Failing inputs are kept in
#       $TMPDIR/storeapi-fuzz/failures with the command that replays them; the input being tried when the
#       process died is in $TMPDIR/storeapi-fuzz/current/<target>.input.
#
#   scripts/fuzz.sh replay SEED INDEX [TEST]
#       Runs input INDEX of SEED again (TEST narrows the run, e.g. XMLStoreFuzzTests).
#
#   scripts/fuzz.sh libfuzzer predicate|xcdatamodel|ndjson [libFuzzer options...]
#       Coverage-guided fuzzing with libFuzzer (swiftc -sanitize=fuzzer,address): StoreAPI's sources are compiled
#       with a small entry point into one instrumented binary under .build-libfuzzer/, then run with the corpus
#       in .build-libfuzzer/corpus-<target>/ (seeded from the repository). Stops at the first crash and writes
#       the crashing input to crash-*; e.g. `scripts/fuzz.sh libfuzzer predicate -max_total_time=600`.
#
# Environment: STORE_FUZZ_HANG_SECONDS (default 120: an input running longer aborts the run, naming it),
# STORE_FUZZ_MEMORY_MB (default 1024: the most one input may add to the peak memory), STORE_FUZZ_DIR.
set -eu
cd "$(dirname "$0")/.."

mode="${1:-long}"
case "$mode" in
long)
    iterations="${2:-100000}"
    seed="${3:-0x5EED$(date +%s)}"
    mkdir -p .build-fuzz
    echo "fuzz: $iterations inputs per target, seed $seed (replay with: scripts/fuzz.sh replay $seed INDEX)"
    STORE_FUZZ_ITERATIONS="$iterations" \
    STORE_FUZZ_ITERATIONS_LMDB_FILE="${STORE_FUZZ_ITERATIONS_LMDB_FILE:-$((iterations / 20))}" \
    STORE_FUZZ_SEED="$seed" \
        swift test -c release --scratch-path .build-fuzz --filter 'FuzzTests\.(.*FuzzTests)' 2>&1 | tee .build-fuzz/fuzz-long.log |
        grep -E '^fuzz |recorded an issue|FUZZ HANG|passed after|failed after|crashed'
    ;;
replay)
    seed="$2"; index="$3"; filter="${4:-FuzzTests}"
    STORE_FUZZ_SEED="$seed" STORE_FUZZ_START="$index" STORE_FUZZ_ITERATIONS=1 \
        swift test --scratch-path .build-fuzz --filter "$filter"
    ;;
libfuzzer)
    target="${2:?predicate, xcdatamodel or ndjson}"
    shift 2
    dir=.build-libfuzzer
    mkdir -p "$dir/corpus-$target"
    case "$target" in
    predicate)
        cat > "$dir/entry.swift" <<'EOF'
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let p = try? FetchPredicate(text, arguments: []) {
        guard (try? FetchPredicate(p.description, arguments: [])) == p else { fatalError("description round trip: \(text)") }
    }
    return 0
}
EOF
        printf '%s' "title == 'x' AND pages > 3" > "$dir/corpus-$target/seed1"
        printf '%s' "ANY tags.name BEGINSWITH[cd] %@ OR NOT (a IN {1, 2.5, nil})" > "$dir/corpus-$target/seed2"
        ;;
    xcdatamodel)
        cat > "$dir/entry.swift" <<'EOF'
import Foundation
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    if let parsed = try? XcodeModelParser(file: "contents").parse(Data(bytes: data, count: size)) {
        _ = try? Schema(entities: parsed.entities, configurations: parsed.configurations)
    }
    return 0
}
EOF
        find Samples ../shared/corpus/models -name contents 2>/dev/null | while read -r f; do
            cp "$f" "$dir/corpus-$target/$(printf '%s' "$f" | cksum | cut -d' ' -f1)"
        done
        ;;
    ndjson)
        cat > "$dir/entry.swift" <<'EOF'
import Foundation
let librarySchema: Schema? = try? Schema(xcodeModelAt: URL(fileURLWithPath: "Samples/Library.xcdatamodeld"))
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let schema = librarySchema else { fatalError("run from the package root (Samples/Library.xcdatamodeld)") }
    let store = MemoryStore(url: nil, metadata: StoreMetadata(storeType: "memory", schema: schema))
    _ = try? NDJSONImporter().importRecords(from: Data(bytes: data, count: size), into: store)
    return 0
}
EOF
        head -c 4000 Samples/library.ndjson > "$dir/corpus-$target/head"
        tail -c 4000 Samples/library.ndjson | tail -n +2 > "$dir/corpus-$target/tail"
        ;;
    *) echo "unknown libFuzzer target '$target' (predicate, xcdatamodel, ndjson)" >&2; exit 2 ;;
    esac
    echo "building $dir/fuzz-$target (StoreAPI + entry point, -sanitize=fuzzer,address)…"
    # shellcheck disable=SC2046
    swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name StoreAPI -package-name storeapi \
        $(find Sources/StoreAPI -name '*.swift' | sort) "$dir/entry.swift" -o "$dir/fuzz-$target" 2>&1 |
        grep -v 'Cannot export local symbol' || true
    "$dir/fuzz-$target" "$dir/corpus-$target" "$@"
    ;;
*)
    echo "usage: scripts/fuzz.sh long [ITERATIONS] [SEED] | replay SEED INDEX [TEST] | libfuzzer TARGET [options]" >&2
    exit 2
    ;;
esac
