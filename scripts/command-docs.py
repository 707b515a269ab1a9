#!/usr/bin/env python3
"""Writes crates/amalgam-commands/src/table/docs.rs: the COMMAND DOCS
fields the command-table rows do not hold (complexity, doc_flags,
deprecated_since, replaced_by, history and the arguments tree), read from
a running redis-server 7.0's COMMAND DOCS for every command and subcommand
table/rows/*.rs names, so the reply is what Redis states, as command-rows.py's rows
are.

Usage: scripts/command-docs.py PORT [name ...]
   e.g. scripts/command-docs.py 6379   (every name in table/rows/*.rs)

Needs redis-py (pip install redis) and rustfmt. A name Redis does not
document (CLIENT SETINFO and NO-TOUCH, Redis 7.2's) is left out and keeps
the generic reply (command.rs). A row whose summary, since or group differ
from Redis's is reported on stderr: fix the row.
"""
import os
import re
import subprocess
import sys

import redis

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
ROWS = os.path.join(ROOT, "crates/amalgam-commands/src/table/rows")
OUT = os.path.join(ROOT, "crates/amalgam-commands/src/table/docs.rs")

# The fields as Redis 7.0 writes them (addReplyCommandDocs and
# addReplyCommandArgList), in that order; command.rs writes the same order.
DOC_FIELDS = ["summary", "since", "group", "complexity", "doc_flags", "deprecated_since", "replaced_by", "history",
              "arguments", "subcommands"]
ARG_FIELDS = ["name", "type", "key_spec_index", "token", "summary", "since", "deprecated_since", "flags", "arguments"]
ARG_FLAGS = ["optional", "multiple", "multiple_token"]
ARG_TYPES = {"string": "Str", "integer": "Integer", "double": "Double", "key": "Key", "pattern": "Pattern",
             "unix-time": "UnixTime", "pure-token": "PureToken", "oneof": "Oneof", "block": "Block"}


def s(v):
    return v.decode() if isinstance(v, bytes) else v


def fields(lst, order, what):
    """The map (a flat RESP2 list) as a dict, checking its keys against
    Redis's known fields and order."""
    keys = [s(lst[i]) for i in range(0, len(lst), 2)]
    unknown = [k for k in keys if k not in order]
    if unknown or keys != sorted(keys, key=order.index):
        sys.exit("%s: fields %s, expected a subsequence of %s" % (what, keys, order))
    return {keys[i // 2]: lst[i + 1] for i in range(0, len(lst), 2)}


def lit(v):
    out = '"'
    for ch in s(v):
        out += {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch, ch)
    return out + '"'


def arg(a, what, ind):
    """One argument, its own arguments one a line below it."""
    d = fields(a, ARG_FIELDS, what)
    name, kind = s(d["name"]), s(d["type"])
    out = "arg(%s, %s)" % (lit(name), ARG_TYPES[kind])
    if "key_spec_index" in d:
        out += ".key(%d)" % d["key_spec_index"]
    for f in ("token", "summary", "since", "deprecated_since"):
        if f in d:
            out += ".%s(%s)" % (f, lit(d[f]))
    for f in [s(f) for f in d.get("flags", [])]:
        if f not in ARG_FLAGS:
            sys.exit("%s: unknown argument flag %s" % (what, f))
        out += "." + f + "()"
    if kind in ("oneof", "block"):
        out += ".args(%s)" % args(d["arguments"], what + " " + name, ind)
    elif "arguments" in d:
        sys.exit("%s %s: arguments under a %s" % (what, name, kind))
    return out


def args(lst, what, ind):
    if not lst:
        return "&[]"
    pad = "    " * (ind + 1)
    return "&[\n" + "".join(pad + arg(a, what, ind + 1) + ",\n" for a in lst) + "    " * ind + "]"


def rows_source():
    """Every family's rows (table/rows/*.rs), in file-name order."""
    return "".join(open(os.path.join(ROWS, f)).read() for f in sorted(os.listdir(ROWS)) if f.endswith(".rs"))


def row_names():
    src = rows_source()
    return re.findall(r'spec!\(\s*\w+,\s*"([^"]+)"', src)


def row_fields():
    """name -> (group, since, summary) of every row."""
    src = rows_source()
    pat = r'spec!\(\s*\w+,\s*"([^"]+)",\s*-?\d+,\s*&\[[^\]]*\],\s*\([^)]*\),\s*"([^"]*)",\s*"([^"]*)",\s*"((?:[^"\\]|\\.)*)"'
    return {m[0]: (m[1], m[2], m[3].replace('\\"', '"')) for m in re.findall(pat, src)}


def main():
    port = int(sys.argv[1])
    names = sys.argv[2:] or row_names()
    rows = row_fields()
    conn = redis.Connection(port=port, protocol=2)

    def raw(*a):
        # The connection, not the client: no response callbacks reshape it.
        conn.send_command(*a)
        return conn.read_response()
    version = s(raw("INFO", "server")).split("redis_version:")[1].split()[0]
    entries = []
    for name in sorted(set(names)):
        reply = raw("COMMAND", "DOCS", name)
        if not reply:
            print("%s: not documented by Redis %s, left out" % (name, version), file=sys.stderr)
            continue
        d = fields(reply[1], DOC_FIELDS, name)
        own = (s(d["group"]), s(d["since"]), s(d["summary"]))
        if name in rows and rows[name] != own:
            print("%s: the row has %r, Redis %s %r" % (name, rows[name], version, own), file=sys.stderr)
        parts = []
        if "doc_flags" in d:
            parts.append("doc_flags: &[%s]" % ", ".join(lit(f) for f in d["doc_flags"]))
        for f in ("deprecated_since", "replaced_by"):
            if f in d:
                parts.append("%s: Some(%s)" % (f, lit(d[f])))
        if "history" in d:
            parts.append("history: &[\n%s        ]" % "".join(
                "            (%s, %s),\n" % (lit(v), lit(t)) for v, t in d["history"]))
        if "arguments" in d:
            parts.append("arguments: %s" % args(d["arguments"], name, 2))
        cx = "Some(%s)" % lit(d["complexity"]) if "complexity" in d else "None"
        core = "doc(%s, %s)" % (lit(name), cx)
        if parts:
            entries.append("    Doc {\n%s        ..%s\n    }," % ("".join("        %s,\n" % p for p in parts), core))
        else:
            entries.append("    %s," % core)
    regen = "scripts/command-docs.py PORT" + ("" if len(sys.argv) == 2 else " " + " ".join(sys.argv[2:]))
    text = """// @generated by `%s` from redis-server %s's COMMAND DOCS
// (PORT: a running redis-server 7.0). Do not edit; regenerate.

//! What COMMAND DOCS says of each command beyond its row's summary, since
//! and group: complexity, doc flags, deprecation, history and arguments,
//! as Redis %s documents them, sorted by name (`container|sub` for a
//! subcommand) for [`super::docs_of`].

use super::ArgType::*;
use super::{arg, doc, Doc};

pub(super) static DOCS: [Doc; %d] = [
%s
];
""" % (regen, version, version, len(entries), "\n".join(entries))
    with open(OUT, "w") as f:
        f.write(text)
    subprocess.run(["rustfmt", "--edition", "2021", OUT], check=True)
    print("%s: %d commands" % (os.path.relpath(OUT, ROOT), len(entries)), file=sys.stderr)


if __name__ == "__main__":
    main()
