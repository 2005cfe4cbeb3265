"""Every top-level public symbol of a module must be linked (``Name``) from its DocC catalog.

Usage: check-docs.py SYMBOL_GRAPH_DIR MODULE... (one folder per module, as check-docs.sh extracts them).
       check-docs.py --cross-module SYMBOL_GRAPH_DIR MODULE < docc-warnings
         prints the warnings of MODULE's DocC run except unresolved links to a StoreAPI symbol or article (each
         module is converted alone, so those cannot resolve), and any link to a StoreAPI name that does not exist."""
import json
import pathlib
import re
import sys


def top_level(root, module):
    graph = json.loads((root / module / f"{module}.symbols.json").read_text())
    # A function or macro is named with its parameters (`Model(_:)`); a ``Model(_:)`` link names it too.
    return {s["pathComponents"][0].split("(")[0] for s in graph["symbols"] if len(s["pathComponents"]) == 1}


if sys.argv[1] == "--cross-module":
    root, module = pathlib.Path(sys.argv[2]), sys.argv[3]
    shared = top_level(root, "StoreAPI") | {"StoreAPI"}
    articles = {p.stem for p in (pathlib.Path("Sources/StoreAPI/StoreAPI.docc")).glob("*.md")}
    for line in sys.stdin:
        found = re.search(r"'([^']+)' doesn't exist at", line)
        if module != "StoreAPI" and found and found.group(1) in shared:
            continue
        print(line, end="")
    # <doc:StoreAPI/Name> links must name a StoreAPI article.
    catalog = pathlib.Path("Sources") / module / f"{module}.docc"
    for page in catalog.glob("*.md"):
        for name in re.findall(r"<doc:StoreAPI/([A-Za-z]+)>", page.read_text()):
            if name not in articles:
                print(f"error: {page} links <doc:StoreAPI/{name}>, which is no StoreAPI article")
    sys.exit(0)

root, modules = pathlib.Path(sys.argv[1]), sys.argv[2:]
missing = []
for module in modules:
    names = top_level(root, module)
    catalog = pathlib.Path("Sources") / module / f"{module}.docc"
    text = "\n".join(p.read_text() for p in sorted(catalog.glob("*.md")))
    linked = set(re.findall(r"``([A-Za-z_][A-Za-z0-9_]*)", text))
    missing += [f"{module}: {name} is public but not in {catalog}" for name in sorted(names - linked)]
    if names <= linked:
        print(f"{module}: {len(names)} top-level public symbols, all in its catalog")
if missing:
    print("\n".join(missing))
    sys.exit(1)
