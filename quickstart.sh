#!/usr/bin/env bash
# Sets up a fresh machine and runs the main job: build storectl, create a store from the bundled sample model and
# NDJSON data, convert it sqlite → lmdb → xml → sqlite, and show with `storectl diff` that nothing changed.
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
echo "== building storectl as it is distributed (scripts/build-storectl.sh: release, one static executable)"
storectl=$(scripts/build-storectl.sh | tail -n 1)
exec Samples/quickstart.sh "$storectl"
