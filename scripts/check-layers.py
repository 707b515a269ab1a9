#!/usr/bin/env python3
"""The house rules of docs/architecture.md, checked (scripts/test.sh runs it):

1. Crates in a straight line: a crate depends (its Cargo.toml's path
   dependencies) only on crates of lower layers (LAYERS below).
2. No file of hand-written Rust over FILE_LINES_MAX lines (crates/*/src,
   crates/*/tests, fuzz*/): a generated file says "@generated" in its first
   lines and is data.
3. No crate over CRATE_LINES_MAX hand-written lines (its src/).
4. No circle of more than CIRCLE_FILES_MAX files importing each other
   inside one crate: the modules of a crate's src/ and the `crate::` /
   `super::` / `self::` paths between them, strongly connected components
   by Tarjan's algorithm. A module naming its own child by bare name
   (`mod rows; pub use rows::COMMANDS;`) is structure, not an import, and
   is not counted, nor are a file's unit tests (its `#[cfg(test)] mod`,
   whose `super::` is the file itself).

A place that still breaks a rule is listed in RATCHET with the figure it
has today: the check fails if it grows, and says so when it shrinks, so
the ceiling can come down with it (issue 33 is splitting amalgam-server).

Usage: scripts/check-layers.py [--report]   (--report: every crate's figures)
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

FILE_LINES_MAX = 1500
CRATE_LINES_MAX = 15000
CIRCLE_FILES_MAX = 10

# Lowest first: a crate may depend on crates of earlier layers only.
LAYERS = [
    ["amalgam-engine", "amalgam-protocol"],
    ["amalgam-types"],
    ["amalgam-persist"],
    ["amalgam-net", "amalgam-commands", "amalgam-script"],
    ["amalgam-memcache", "amalgam-acl", "amalgam-config", "amalgam-metrics", "amalgam-derived", "amalgam-repl", "amalgam-cluster"],
    ["amalgam-resp"],
    ["amalgam-server"],
    ["amalgam-bench"],
]

# Today's figures of what still breaks a rule: (kind, place) -> ceiling.
RATCHET = {}


def rust_files(top):
    for d, _, fs in os.walk(top):
        if "/target" in d:
            continue
        for f in sorted(fs):
            if f.endswith(".rs"):
                yield os.path.join(d, f)


def generated(path):
    with open(path, encoding="utf-8") as f:
        head = "".join(f.readline() for _ in range(3))
    return "@generated" in head


def lines(path):
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


def strip(src):
    """Rust source without comments, strings and char literals."""
    src = re.sub(r"//[^\n]*", "", src)
    src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    src = re.sub(r'r(#+)".*?"\1', '""', src, flags=re.S)
    src = re.sub(r"'(?:\\[^']{1,10}|[^'\\])'", "' '", src)
    return re.sub(r'"(\\.|[^"\\])*"', '""', src, flags=re.S)


def use_paths(s, i, prefix, out, depth=0):
    """Parses the use-tree at s[i:] (after a `::`) into paths; returns the end."""
    if depth > 16:
        return i
    while i < len(s) and s[i].isspace():
        i += 1
    if i < len(s) and s[i] == "{":
        i += 1
        for _ in range(len(s)):
            while i < len(s) and s[i] in " \n\t,":
                i += 1
            if i >= len(s) or s[i] == "}":
                return i + 1
            i = use_paths(s, i, prefix, out, depth + 1)
        return i
    m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", s[i:])
    if not m:
        out.append(prefix)
        return i + 1
    path = prefix + [m.group(0)]
    i += len(m.group(0))
    if s[i : i + 2] == "::":
        return use_paths(s, i + 2, path, out, depth + 1)
    out.append(path)
    return i


def module_graph(src_dir):
    """Module (a tuple of names; () the crate root) -> the modules it names."""
    files = {}
    for p in rust_files(src_dir):
        parts = os.path.relpath(p, src_dir)[:-3].split(os.sep)
        if parts == ["main"] or parts[0] == "bin":
            continue
        if parts[-1] in ("lib", "mod"):
            parts = parts[:-1]
        files[tuple(parts)] = p
    edges = {m: set() for m in files}
    for mod, p in files.items():
        with open(p, encoding="utf-8") as f:
            src = strip(f.read())
        # A file's unit tests (`#[cfg(test)] mod tests { use super::*; … }`,
        # last in the file by the house style) import the file itself.
        src = re.split(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", src, maxsplit=1)[0]
        is_mod_file = p.endswith(("mod.rs", "lib.rs"))
        here = list(mod) if is_mod_file else list(mod[:-1])
        for m in re.finditer(r"\b(crate|super|self)::", src):
            out = []
            use_paths(src, m.end(), [], out)
            for path in out:
                if m.group(1) == "crate":
                    full = list(path)
                elif m.group(1) == "self":
                    full = list(mod) + list(path)
                else:
                    base = list(here)
                    while path and path[0] == "super":
                        base, path = base[:-1], path[1:]
                    full = base + list(path)
                for n in range(len(full), -1, -1):
                    t = tuple(full[:n])
                    if t in files:
                        if t != mod:
                            edges[mod].add(t)
                        break
    return edges


def largest_circle(edges):
    """The largest strongly connected component (Tarjan, iterative)."""
    index, low, on, stack, best = {}, {}, set(), [], []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > len(best):
                    best = comp
    return sorted("/".join(m) or "<root>" for m in best)


def path_deps(cargo_toml):
    with open(cargo_toml, encoding="utf-8") as f:
        text = f.read()
    deps = text.split("[dependencies]", 1)[-1].split("\n[", 1)[0]
    return re.findall(r'^(amalgam-[a-z-]+)\s*=\s*\{[^}]*path\s*=', deps, flags=re.M)


def main():
    report = "--report" in sys.argv
    problems, notes = [], []
    layer_of = {c: i for i, layer in enumerate(LAYERS) for c in layer}
    crates_dir = os.path.join(ROOT, "crates")

    def judge(kind, place, figure, limit, what):
        ceiling = RATCHET.get((kind, place))
        if ceiling is None:
            if figure > limit:
                problems.append(f"{place}: {what} {figure} (at most {limit})")
        elif figure > ceiling:
            problems.append(f"{place}: {what} {figure}, past its ratchet {ceiling} (the rule is {limit})")
        elif figure < ceiling:
            notes.append(f"{place}: {what} {figure}, below its ratchet {ceiling}: lower RATCHET in {__file__}")

    for crate in sorted(os.listdir(crates_dir)):
        cdir = os.path.join(crates_dir, crate)
        if not os.path.isfile(os.path.join(cdir, "Cargo.toml")):
            continue
        if crate not in layer_of:
            problems.append(f"{crate}: not in LAYERS (scripts/check-layers.py): give it its layer")
            continue
        for dep in path_deps(os.path.join(cdir, "Cargo.toml")):
            if dep not in layer_of or layer_of[dep] >= layer_of[crate]:
                problems.append(f"{crate} depends on {dep}, which is not below it (docs/architecture.md)")
        src = os.path.join(cdir, "src")
        total = sum(lines(p) for p in rust_files(src) if not generated(p))
        judge("crate_lines", crate, total, CRATE_LINES_MAX, "hand-written lines")
        circle = largest_circle(module_graph(src))
        judge("circle", crate, len(circle), CIRCLE_FILES_MAX, "files in one import circle")
        if report:
            print(f"{crate}: {total} hand-written lines; largest import circle {len(circle)}"
                  + (f": {' '.join(circle)}" if len(circle) > 1 else ""))
    tops = [os.path.join(crates_dir, c, d) for c in sorted(os.listdir(crates_dir)) for d in ("src", "tests")]
    tops += [os.path.join(ROOT, d) for d in sorted(os.listdir(ROOT)) if d.startswith("fuzz")]
    for top in tops:
        for p in rust_files(top):
            if not generated(p):
                judge("file_lines", os.path.relpath(p, ROOT), lines(p), FILE_LINES_MAX, "lines")
    for n in notes:
        print("note: " + n)
    for p in problems:
        print("layers: " + p, file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"layers: ok (crates in line; files <= {FILE_LINES_MAX} lines, crates <= {CRATE_LINES_MAX}, "
          f"circles <= {CIRCLE_FILES_MAX} files; ratcheted: {', '.join(p for _, p in RATCHET) or 'none'})")


if __name__ == "__main__":
    main()
