#!/usr/bin/env python3
"""Generates Samples/library.ndjson, the sample data for Samples/Library.xcdatamodeld.

Deterministic (fixed seed): running it again produces the same file byte for byte.

    python3 Samples/generate_library.py > Samples/library.ndjson

The file exercises every relationship kind of the model, given from different sides on purpose, so an import has
to fill in the inverses: books name their publisher and tags (to-one and many-to-many from the book side), authors
list their books (an ordered to-many, in a deliberate non-sorted order) and mentees name their mentor (a
self-referential to-one). Books come before the authors, publishers and tags they refer to. A few magazines have no
"id" (the importer generates one).
"""
import base64
import json
import random
import uuid

rng = random.Random(20240501)


def new_id():
    return str(uuid.UUID(int=rng.getrandbits(128), version=4)).upper()


def date(year_from, year_to, fraction=False):
    y = rng.randint(year_from, year_to)
    m = rng.randint(1, 12)
    d = rng.randint(1, 28)
    text = f"{y:04d}-{m:02d}-{d:02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
    if fraction:
        text += "." + str(rng.randint(1, 999)).rjust(3, "0").rstrip("0")
    return text + "Z"


WORDS = ("shadow river glass winter garden silent empire paper moon harbor clock orchard iron letter island "
         "north lantern salt velvet echo mirror forest signal ember tide").split()
FIRST = "Ada Boris Chiara Dmitri Elif Farid Greta Hiro Ines Jonas Kemal Lena Mateo Nadia Oskar Priya Quentin Rosa Sven Tove".split()
LAST = "Abe Brandt Costa Dubois Eriksen Fischer Garcia Horvat Ivanova Jensen Kowalski Laine Moreau Novak Okafor Petrov".split()
NATIONS = ["NZ", "DE", "JP", "BR", "FR", "IT", "PL", "NG", None]

def title():
    n = rng.randint(1, 4)
    t = " ".join(rng.choice(WORDS) for _ in range(n)).title()
    r = rng.random()
    if r < 0.02:
        t += " — “Special” Édition ✨"
    elif r < 0.03:
        t += ' "Annotated"\n2nd printing'
    return t


publishers = [{"id": new_id(), "name": f"{rng.choice(WORDS).title()} {rng.choice(['Press', 'Books', 'House', 'Verlag'])} {i}",
               "founded": date(1800, 2010), "website": f"https://publisher{i}.example.com/",
               "revenue": rng.randint(0, 9_000_000_000_000)} for i in range(20)]
tags = [{"id": new_id(), "name": w} for w in sorted(set(WORDS))] + \
       [{"id": new_id(), "name": f"{a}-{b}"} for a, b in zip(WORDS[:35], reversed(WORDS))]
authors = [{"id": new_id(), "name": f"{rng.choice(FIRST)} {rng.choice(LAST)} {i}", "born": date(1850, 1995),
            "nationality": rng.choice(NATIONS)} for i in range(300)]
for i, a in enumerate(authors):
    if i >= 30 and rng.random() < 0.4:
        a["mentor"] = authors[rng.randrange(0, 30)]["id"]

books = []
for i in range(2000):
    b = {"id": new_id(), "title": title(), "uid": str(uuid.UUID(int=rng.getrandbits(128), version=4)).upper(),
         "published": date(1900, 2024, fraction=rng.random() < 0.3),
         "price": f"{rng.randint(1, 199)}.{rng.randint(0, 99):02d}", "pages": rng.randint(40, 1400),
         "rating": round(rng.uniform(0, 5), rng.choice([1, 2, 7])), "available": rng.random() < 0.85,
         "isbn": f"978{rng.randrange(10**9, 10**10)}" if rng.random() < 0.9 else None,
         "edition": rng.randint(1, 12), "weight": round(rng.uniform(90, 2400), 1),
         "publisher": rng.choice(publishers)["id"] if rng.random() < 0.95 else None,
         "tags": [t["id"] for t in rng.sample(tags, rng.randint(0, 5))]}
    if rng.random() < 0.2:
        b["cover"] = base64.b64encode(bytes(rng.getrandbits(8) for _ in range(rng.randint(8, 48)))).decode()
    books.append(b)
# ISBNs are unique (a uniqueness constraint); drop accidental repeats.
seen = set()
for b in books:
    if b["isbn"] in seen:
        b["isbn"] = None
    seen.add(b["isbn"])

magazines = []
for i in range(400):
    m = {"id": new_id() if i >= 8 else None, "title": title(), "uid": str(uuid.UUID(int=rng.getrandbits(128), version=4)).upper(),
         "published": date(1950, 2024), "price": f"{rng.randint(2, 15)}.{rng.choice(['00', '50', '95'])}",
         "issue": rng.randint(1, 600), "frequency": rng.choice(["weekly", "monthly", "quarterly", None]),
         "available": rng.random() < 0.7, "publisher": rng.choice(publishers)["id"],
         "tags": [t["id"] for t in rng.sample(tags, rng.randint(0, 3))]}
    magazines.append(m)

# Authors' ordered book lists: every book with an author, in a deliberately shuffled order.
works = [b for b in books if rng.random() < 0.97] + [m for m in magazines if m["id"] and rng.random() < 0.3]
author_books = {a["id"]: [] for a in authors}
for w in works:
    author_books[rng.choice(authors)["id"]].append(w["id"])
for ids in author_books.values():
    rng.shuffle(ids)


def line(entity, id_, attributes, relationships):
    obj = {"entity": entity}
    if id_:
        obj["id"] = id_
    obj["attributes"] = {k: v for k, v in attributes.items()}
    if relationships:
        obj["relationships"] = relationships
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


out = []
for b in books:
    attrs = {k: b[k] for k in ("title", "uid", "published", "price", "pages", "rating", "available", "isbn", "edition", "weight")}
    if "cover" in b:
        attrs["cover"] = b["cover"]
    out.append(line("Book", b["id"], attrs, {"publisher": b["publisher"], "tags": b["tags"]}))
for m in magazines:
    attrs = {k: m[k] for k in ("title", "uid", "published", "price", "issue", "frequency", "available")}
    out.append(line("Magazine", m["id"], attrs, {"publisher": m["publisher"], "tags": m["tags"]}))
for a in authors:
    rels = {"books": author_books[a["id"]]}
    if "mentor" in a:
        rels["mentor"] = a["mentor"]
    out.append(line("Author", a["id"], {"name": a["name"], "born": a["born"], "nationality": a["nationality"]}, rels))
for p in publishers:
    out.append(line("Publisher", p["id"], {k: p[k] for k in ("name", "founded", "website", "revenue")}, None))
for t in tags:
    out.append(line("Tag", t["id"], {"name": t["name"]}, None))
print("\n".join(out))
