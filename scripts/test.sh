#!/usr/bin/env bash
# Runs the whole test suite: system libraries, the package's tests, and a tiny-size benchmark smoke run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build --build-tests
swift test --skip-build --parallel --num-workers 2
if [ -d Examples/JSONStoreBackend ]; then
    (cd Examples/JSONStoreBackend && swift test)
fi
swift run storebench --smoke
