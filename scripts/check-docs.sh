#!/usr/bin/env bash
# Checks the DocC catalogs against the code: every top-level public symbol of each library module (the backend kit's
# SPI symbols included) is listed in its module's catalog, and DocC resolves every symbol and article link.
# Needs a debug build (swift build). Usage: scripts/check-docs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
modules=(StoreAPI SQLiteBackend LMDBBackend XMLBackend CoreDataBackend PostgresBackend StoreConformance StoreModels StoreSync StoreSyncPostgres)
bin="$(dirname "$(command -v swift)")"
triple="$(swift -print-target-info | python3 -c 'import json, sys; print(json.load(sys.stdin)["target"]["triple"])')"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
includes=(-I .build/debug/Modules -I Sources/CSQLite -I Sources/CLMDB -I Sources/CLibXML2 -I Sources/CZlib -I Sources/CLibPQ -I Sources/CSHA1/include)
for flag in $(pkg-config --cflags-only-I libxml-2.0 sqlite3 lmdb zlib libpq); do includes+=(-Xcc "$flag"); done
for module in "${modules[@]}"; do
    mkdir -p "$work/$module"
    "$bin/swift-symbolgraph-extract" -module-name "$module" -target "$triple" "${includes[@]}" \
        -minimum-access-level public -include-spi-symbols -skip-inherited-docs -output-dir "$work/$module" >/dev/null
done
python3 scripts/check-docs.py "$work" "${modules[@]}"
# DocC itself: a link it cannot resolve is an error here.
failed=0
for module in "${modules[@]}"; do
    out="$("$bin/docc" convert "Sources/$module/$module.docc" --additional-symbol-graph-dir "$work/$module" \
        --output-path "$work/$module.doccarchive" --fallback-display-name "$module" \
        --fallback-bundle-identifier "org.storekitswift.$module" --analyze 2>&1 || true)"
    # Each module is converted on its own, so its links to StoreAPI (``StoreError``, <doc:StoreAPI/BackendKit>)
    # cannot resolve here; the script checks that they name a StoreAPI symbol or article instead.
    problems="$(grep -E "(warning|error):" <<<"$out" | python3 scripts/check-docs.py --cross-module "$work" "$module" || true)"
    if [ -n "$problems" ]; then
        echo "DocC, $module:"; echo "$problems"; failed=1
    fi
done
[ "$failed" -eq 0 ] && echo "docs: every public symbol is in its catalog; DocC resolved every link"
exit "$failed"
