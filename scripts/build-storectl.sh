#!/usr/bin/env bash
# Builds storectl as it is distributed and prints the path of the binary.
#
# On Linux that is one static executable: the Swift runtime, Foundation, SQLite, LMDB and libxml2 (with the ICU,
# zlib and liblzma it needs) linked in, nothing loaded at start. Linked against the shared libraries, every run
# first had the dynamic loader map them and apply their relocations, which cost more than many short commands'
# work (the README's Benchmarks section has the figures).
# Elsewhere (macOS, where static executables are not supported) the release build with the runtime linked in.
#
# Usage: scripts/build-storectl.sh [extra swift build options]   — the binary's path is the last line printed.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(uname -s)" = Linux ]; then
    # The C libraries' own dependencies for a static link, as their pkg-config files list them.
    linker=()
    for lib in $(pkg-config --static --libs-only-l libxml-2.0 sqlite3 lmdb); do linker+=(-Xlinker "$lib"); done
    # Without the PostgreSQL trait: libpq's static link needs static OpenSSL, GSSAPI and LDAP libraries Debian does
    # not ship. This storectl says so when given a postgres:// URL; `swift build --product storectl` has it.
    flags=(-c release --build-path .build/dist -Xswiftc -static-executable --disable-default-traits "${linker[@]}" "$@")
    echo "build-storectl: the static storectl leaves out the PostgreSQL backend (libpq has no static link here)" >&2
else
    flags=(-c release --build-path .build/dist --static-swift-stdlib "$@")
fi
# The static link warns about glibc functions that load NSS modules or shared objects (user and host name lookups,
# dlopen) from code storectl never calls — Foundation's, SQLite's extension loading, libxml2's network client (our
# reader opens files with XML_PARSE_NONET) — and about FoundationEssentials' mktemp; those lines are left out.
swift build "${flags[@]}" --product storectl 2>&1 \
    | { grep -v -e "in statically linked applications requires at runtime" -e "the use of \`mktemp' is dangerous" || true; } >&2
echo "$(swift build "${flags[@]}" --show-bin-path)/storectl"
