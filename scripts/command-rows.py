#!/usr/bin/env python3
"""Prints command-table rows (crates/amalgam-commands/src/table/rows/<family>.rs)
for the named commands, read from a running redis-server's COMMAND INFO and
COMMAND DOCS, so a new row states exactly what Redis states: arity, flags,
first/last/step, ACL categories, tips and key specifications.

Usage: scripts/command-rows.py PORT Variant:name [Variant:name ...]
   e.g. scripts/command-rows.py 6379 Lpush:lpush Blmpop:blmpop

Needs redis-py (pip install redis). The `acl` field lists only the
categories the row's flags do not imply (table.rs, `acl_categories`).
"""
import sys

import redis

# Categories table.rs derives from flags (acl_categories's `implied`).
IMPLIED = {"write": "write", "read": "readonly", "fast": "fast", "blocking": "blocking",
           "admin": "admin", "dangerous": "admin", "pubsub": "pubsub"}


def s(v):
    return v.decode() if isinstance(v, bytes) else v


def pairs(lst):
    return {s(lst[i]): lst[i + 1] for i in range(0, len(lst), 2)}


def rust_strs(items):
    return "&[" + ", ".join('"%s"' % s(i) for i in items) + "]"


def key_spec(spec):
    d = pairs(spec)
    flags = rust_strs(d["flags"])
    begin = pairs(d["begin_search"])
    bspec = pairs(begin["spec"])
    if s(begin["type"]) == "index":
        b = "Begin::Index(%d)" % bspec["index"]
    elif s(begin["type"]) == "unknown":
        b = "Begin::Unknown"
    else:
        b = 'Begin::Keyword("%s", %d)' % (s(bspec["keyword"]), bspec["startfrom"])
    find = pairs(d["find_keys"])
    fspec = pairs(find["spec"])
    if s(find["type"]) == "range":
        f = "Find::Range { lastkey: %d, keystep: %d, limit: %d }" % (fspec["lastkey"], fspec["keystep"], fspec["limit"])
    elif s(find["type"]) == "unknown":
        f = "Find::Unknown"
    else:
        f = "Find::Keynum { keynumidx: %d, firstkey: %d, keystep: %d }" % (
            fspec["keynumidx"], fspec["firstkey"], fspec["keystep"])
    notes = s(d.get("notes", b"")) or ""
    return 'KeySpec { notes: "%s", flags: %s, begin: %s, find: %s }' % (notes.replace('"', '\\"'), flags, b, f)


def main():
    port = int(sys.argv[1])
    conn = redis.Connection(port=port, protocol=2)

    def raw(*args):
        # The connection, not the client: no response callbacks reshape it.
        conn.send_command(*args)
        return conn.read_response()
    for arg in sys.argv[2:]:
        variant, name = arg.split(":")
        info = raw("COMMAND", "INFO", name)[0]
        docs = pairs(raw("COMMAND", "DOCS", name)[1])
        arity, flags, first, last, step = info[1], [s(f) for f in info[2]], info[3], info[4], info[5]
        cats = [s(c) for c in info[6]]
        tips = [s(t) for t in info[7]]
        specs = info[8]
        own = [c for c in cats if not (c[1:] in IMPLIED and IMPLIED[c[1:]] in flags) and c not in ("@slow", "@fast")]
        if "@fast" in cats and "fast" not in flags:
            own.append("@fast")
        print("    Spec {")
        if own:
            print("        acl: %s," % rust_strs(own))
        if tips:
            print("        tips: %s," % rust_strs(tips))
        if specs:
            print("        keys: &[%s]," % ", ".join(key_spec(k) for k in specs))
        print('        ..spec!(%s, "%s", %d, %s, (%d, %d, %d), "%s", "%s", "%s")' % (
            variant, name, arity, rust_strs(flags), first, last, step, s(docs["group"]), s(docs["since"]),
            s(docs["summary"]).replace('"', '\\"')))
        print("    },")


if __name__ == "__main__":
    main()
