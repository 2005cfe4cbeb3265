#!/usr/bin/env bash
# Builds storectl and storebench as storectl is distributed — the Swift runtime and Foundation linked in
# (--static-swift-stdlib), since conversions and copies are timed as whole storectl processes, start-up included —
# and runs the benchmarks with the given arguments (none: the full run at 10^4, 10^5 and 10^6 records).
set -euo pipefail
cd "$(dirname "$0")/.."
for product in storectl storebench; do
    swift build -c release --static-swift-stdlib --product "$product"
done
exec "$(swift build -c release --static-swift-stdlib --show-bin-path)/storebench" "$@"
