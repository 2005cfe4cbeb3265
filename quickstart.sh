#!/usr/bin/env bash
# Sets up a fresh machine and runs the main job: build storectl, create a store from the bundled sample model and
# NDJSON data, convert it sqlite → lmdb → xml → sqlite, and show with `storectl diff` that nothing changed.
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
echo "== building storectl (release)"
swift build -c release --product storectl
exec Samples/quickstart.sh "$(swift build -c release --show-bin-path)/storectl"
