#!/usr/bin/env bash
# Quick start: build a store from the sample model and data, convert it sqlite → lmdb → xml → sqlite, show it, and
# check that the last store is the same logical store as the first.
#
#   swift build && Samples/quickstart.sh .build/debug/storectl
#
# Exits non-zero as soon as any step fails. Works in a temporary directory that it removes afterwards.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
storectl="${1:-$here/../.build/debug/storectl}"
if [[ ! -x "$storectl" ]]; then
    echo "quickstart: storectl not found at '$storectl'; build it (swift build) and pass its path" >&2
    exit 2
fi
storectl="$(cd "$(dirname "$storectl")" && pwd)/$(basename "$storectl")"

work="$(mktemp -d "${TMPDIR:-/tmp}/storectl-quickstart.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"
echo "quickstart: working in $work"

step() {
    echo
    echo "\$ storectl $*"
    "$storectl" "$@"
}

step create library.sqlite --model "$here/Library.xcdatamodeld" --import "$here/library.ndjson"
step convert library.sqlite library.lmdb
step convert library.lmdb library.xml
step convert library.xml library-roundtrip.sqlite
step verify library-roundtrip.sqlite
step info library-roundtrip.sqlite
step diff library.sqlite library-roundtrip.sqlite

echo
echo "quickstart: OK — library.sqlite and library-roundtrip.sqlite are the same store after sqlite → lmdb → xml → sqlite"
