#!/usr/bin/env bash
# Installs the system libraries the package links (SQLite, LMDB, libxml2) and their command-line tools, which the
# benchmarks use as references, strace (the crash tests kill processes at chosen system calls), and the static
# libraries libxml2 needs for the static storectl (scripts/build-storectl.sh: ICU comes with libxml2-dev, zlib and
# liblzma do not), and PostgreSQL: libpq-dev for the postgres backend and the server the PostgreSQL tests start.
# Does nothing when they are already there.
set -euo pipefail
need=()
for pkg in libsqlite3-dev liblmdb-dev libxml2-dev zlib1g-dev liblzma-dev sqlite3 lmdb-utils libxml2-utils pkg-config strace libpq-dev postgresql; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
