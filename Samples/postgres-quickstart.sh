#!/usr/bin/env bash
# The sample store on a PostgreSQL server: starts a throwaway local server (a cluster in a temporary directory on a
# Unix socket, as the `postgres` user when run as root), converts the sample store sqlite → postgres → lmdb, shows
# it, diffs every step, then stops the server and removes everything.
#
#   Samples/postgres-quickstart.sh [STORECTL]
#
# Without STORECTL it installs what a fresh machine lacks (scripts/install-deps.sh: libpq and the PostgreSQL server
# among them) and builds storectl with PostgreSQL (`swift build --product storectl`; the static build leaves it out).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
storectl="${1:-}"
if [[ -z "$storectl" ]]; then
    "$here/../scripts/install-deps.sh"
    echo "postgres-quickstart: building storectl (swift build --product storectl)"
    (cd "$here/.." && swift build --product storectl >/dev/null)
    storectl="$(cd "$here/.." && swift build --show-bin-path)/storectl"
fi
if [[ ! -x "$storectl" ]]; then
    echo "postgres-quickstart: storectl not found at '$storectl'" >&2
    exit 2
fi
storectl="$(cd "$(dirname "$storectl")" && pwd)/$(basename "$storectl")"
bin="${STOREAPI_PG_BINDIR:-$(pg_config --bindir 2>/dev/null || true)}"
if [[ ! -x "$bin/initdb" ]]; then
    bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
fi
if [[ ! -x "$bin/initdb" ]]; then
    echo "postgres-quickstart: PostgreSQL server binaries not found (install postgresql)" >&2
    exit 2
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/storectl-pg.XXXXXX")"
chmod 755 "$work"
as=()
if [[ "$(id -u)" -eq 0 ]]; then as=(runuser -u postgres --); chown postgres: "$work"; fi
stop() {
    "${as[@]}" "$bin/pg_ctl" -D "$work/data" -m fast stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap stop EXIT
"${as[@]}" "$bin/initdb" -D "$work/data" -A trust -U postgres -E UTF8 --locale=C --no-sync >/dev/null
"${as[@]}" "$bin/pg_ctl" -D "$work/data" -l "$work/server.log" -w \
    -o "-k $work -c listen_addresses='' -c fsync=off" start >/dev/null
echo "postgres-quickstart: a PostgreSQL server on the socket in $work"

cd "$work"
pg="postgres:///postgres?host=$work&user=postgres&schema=library"
step() {
    echo
    echo "\$ storectl $*"
    "$storectl" "$@"
}
step create library.sqlite --model "$here/Library.xcdatamodeld" --import "$here/library.ndjson"
step convert library.sqlite "$pg"
step info "$pg"
step convert "$pg" library.lmdb
step diff library.sqlite "$pg"
step diff library.sqlite library.lmdb
step destroy "$pg"

echo
echo "postgres-quickstart: OK — the sample store went sqlite → postgres → lmdb unchanged"
