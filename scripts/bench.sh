#!/usr/bin/env bash
# Builds storectl as it is distributed (scripts/build-storectl.sh: one static executable on Linux), since
# conversions and copies are timed as whole storectl processes, start-up included, and storebench (release, the
# Swift runtime linked in), then runs the benchmarks with the given arguments (none: the full run at 10^4, 10^5 and
# 10^6 records).
set -euo pipefail
cd "$(dirname "$0")/.."
storectl=$(scripts/build-storectl.sh | tail -n 1)
# storebench is a package of its own (Benchmarks/), with its own build folder: two packages sharing one would
# each reuse the other's stale build plan.
bench=(--package-path Benchmarks -c release --static-swift-stdlib)
swift build "${bench[@]}" --product storebench
exec "$(swift build "${bench[@]}" --show-bin-path)/storebench" --storectl "$storectl" "$@"
