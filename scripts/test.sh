#!/usr/bin/env bash
# Runs the whole test suite: system libraries, the package's tests, and a tiny-size benchmark smoke run.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's end is stamped with the seconds since the start: the run has a time budget, and a log without times
# cannot say which step grew.
mark() { echo "=== test.sh: $1 done at ${SECONDS} s"; }
scripts/install-deps.sh
mark "system libraries"
# The PostgreSQL tests start a private server; here they fail rather than skip when its binaries are missing.
export STOREAPI_REQUIRE_POSTGRES=1
swift build --build-tests
mark "debug build"
# The log is kept so that a failure's details (printed early in a long run) are repeated at the end, where a CI
# log's tail shows them.
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! swift test --skip-build --parallel --num-workers 2 2>&1 | tee "$log"; then
    echo
    echo "=== failed tests and their issues (repeated from above) ==="
    grep -E -A6 "^✘ Test .*recorded an issue" "$log" | grep -v "^--$" | cut -c1-600 | head -150 || true
    exit 1
fi
mark "tests"
# The DocC catalogs cover every public symbol, and DocC resolves every link.
scripts/check-docs.sh
mark "documentation check"
if [ -d Examples/JSONStoreBackend ]; then
    (cd Examples/JSONStoreBackend && swift test)
    mark "JSON backend example"
fi
# The README's app on the typed API, as a user builds it: run twice in a row from nothing (the second run opens the
# store the first one migrated to LMDB).
(cd Examples/ReadingList && rm -rf ReadingListData && swift run ReadingList && swift run ReadingList && rm -rf ReadingListData)
mark "ReadingList example"
# The benchmarks are a package of their own (Benchmarks/, built in Benchmarks/.build: two packages sharing one build
# folder each reuse the other's stale build plan).
swift run --package-path Benchmarks storebench --smoke
mark "benchmark smoke run"
# storectl as it is distributed (one static executable on Linux) links, and runs the quickstart's round trip.
Samples/quickstart.sh "$(scripts/build-storectl.sh | tail -n 1)"
mark "static storectl and quick start"
