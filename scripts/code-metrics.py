#!/usr/bin/env python3
"""The code's shape, measured the same way before and after a change.

Per crate: product files and lines (a file's inline `#[cfg(test)]` module
and everything under tests/ or named tests.rs are left out), the largest
file and function, `unwrap_or_default()` and `unwrap_or(` counts, and the
circles of `use crate::`/`super::` imports between a crate's files (Tarjan's
strongly connected components). Across crates: a dependency on a crate of a
higher layer (ARCHITECTURE.md's floors) is an upward arrow.

    python3 scripts/code-metrics.py            # a table
    python3 scripts/code-metrics.py --json     # the same as JSON
"""

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRATES = ROOT / "crates"

# ARCHITECTURE.md's layers, lowest first: a crate may depend only on crates
# of a lower layer.
LAYERS = [
    ["sys", "stats", "testkit"],
    ["guard", "model", "remote", "spawn", "results"],
    ["lab", "cache", "trace", "store"],
    ["bio", "sched", "record", "explain"],
    ["collect", "report"],
    ["load"],
    ["experiment"],
    ["iolab"],
]


def layer_of(name):
    for i, names in enumerate(LAYERS):
        if name in names:
            return i
    return None


def product_files(crate):
    src = crate / "src"
    for p in sorted(src.rglob("*.rs")):
        rel = p.relative_to(src)
        if "tests" in rel.parts[:-1] or p.name == "tests.rs" or p.name == "testutil.rs":
            continue
        yield p


def product_text(path):
    """The file without its inline test module (the repo keeps it last)."""
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("#[cfg(test)]"):
            return lines[:i]
    return lines


FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")


def functions(lines):
    """(name, length) of each function, by brace depth from its `fn` line."""
    out = []
    i = 0
    while i < len(lines):
        m = FN.match(lines[i])
        if not m:
            i += 1
            continue
        depth, opened, j = 0, False, i
        while j < len(lines):
            code = re.sub(r'"(\\.|[^"\\])*"', '""', lines[j].split("//")[0])
            code = re.sub(r"'(\\.|[^'\\])'", "''", code)
            depth += code.count("{") - code.count("}")
            opened = opened or "{" in code
            if opened and depth <= 0:
                break
            if not opened and code.rstrip().endswith(";"):
                break
            j += 1
        if opened:
            out.append((m.group(6), j - i + 1))
        i += 1
    return out


def module_of(src, path):
    rel = path.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


USE = re.compile(r"\b(crate|super)((::\w+)+)")


def imports(src, path, lines, modules):
    """Modules of the same crate this file names through crate:: or super::."""
    me = module_of(src, path)
    is_mod_file = path.name in ("mod.rs", "lib.rs", "main.rs")
    here = me if is_mod_file else me[:-1]
    found = set()
    for line in lines:
        for m in USE.finditer(line):
            segs = m.group(2).strip(":").split("::")
            if m.group(1) == "crate":
                base = []
            else:
                base = list(here)
                while segs and segs[0] == "super":
                    segs = segs[1:]
                    base = base[:-1]
                base = base[:-1] if False else base
            # super:: in a non-mod file means the parent module.
            full = tuple(base + segs)
            for k in range(len(full), 0, -1):
                if full[:k] in modules:
                    if full[:k] != me:
                        found.add(full[:k])
                    break
    return found


def circles(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted("/".join(c) or "lib" for c in comp))

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            strong(v)
    return out


def deps(crate):
    text = (crate / "Cargo.toml").read_text()
    section = text.split("[dependencies]", 1)[-1].split("\n[", 1)[0]
    return sorted(set(re.findall(r"^iolab-(\w+)", section, re.M)))


def crate_metrics(crate):
    src = crate / "src"
    files = list(product_files(crate))
    texts = {p: product_text(p) for p in files}
    modules = {module_of(src, p) for p in files}
    graph = {module_of(src, p): imports(src, p, t, modules) for p, t in texts.items()}
    fns = [(f"{p.relative_to(crate)}:{n}", length) for p, t in texts.items() for n, length in functions(t)]
    biggest_file = max(texts.items(), key=lambda kv: len(kv[1]))
    biggest_fn = max(fns, key=lambda f: f[1]) if fns else ("-", 0)
    joined = {p: "\n".join(t) for p, t in texts.items()}
    return {
        "crate": crate.name,
        "files": len(files),
        "lines": sum(len(t) for t in texts.values()),
        "largest_file": [str(biggest_file[0].relative_to(crate)), len(biggest_file[1])],
        "largest_function": list(biggest_fn),
        "files_over_800": sorted(str(p.relative_to(crate)) for p, t in texts.items() if len(t) > 800),
        "unwrap_or_default": sum(t.count("unwrap_or_default()") for t in joined.values()),
        "unwrap_or": sum(t.count("unwrap_or(") for t in joined.values()),
        "circles": circles(graph),
        "depends_on": deps(crate),
    }


def main():
    rows = [crate_metrics(c) for c in sorted(CRATES.iterdir()) if (c / "Cargo.toml").exists()]
    upward = []
    for r in rows:
        mine = layer_of(r["crate"])
        for d in r["depends_on"]:
            theirs = layer_of(d)
            if mine is not None and theirs is not None and theirs >= mine:
                upward.append(f"{r['crate']} -> {d}")
    total = {
        "files": sum(r["files"] for r in rows),
        "lines": sum(r["lines"] for r in rows),
        "unwrap_or_default": sum(r["unwrap_or_default"] for r in rows),
        "unwrap_or": sum(r["unwrap_or"] for r in rows),
        "circles": sum(len(r["circles"]) for r in rows),
        "upward_arrows": upward,
        "files_over_800": [f"{r['crate']}/{f}" for r in rows for f in r["files_over_800"]],
    }
    if "--json" in sys.argv:
        print(json.dumps({"crates": rows, "total": total}, indent=1))
        return
    print(f"{'crate':<11}{'files':>6}{'lines':>7}  {'largest file':<38}{'largest function':<58}{'u_o_d':>6}{'u_o(':>6}{'circ':>5}")
    for r in rows:
        lf = f"{r['largest_file'][0]} {r['largest_file'][1]}"
        fn = f"{r['largest_function'][0]} {r['largest_function'][1]}"
        print(f"{r['crate']:<11}{r['files']:>6}{r['lines']:>7}  {lf:<38}{fn:<58}{r['unwrap_or_default']:>6}{r['unwrap_or']:>6}{len(r['circles']):>5}")
    print(
        f"total: {total['files']} files, {total['lines']} lines, unwrap_or_default() {total['unwrap_or_default']}, "
        f"unwrap_or( {total['unwrap_or']}, circles {total['circles']}, upward arrows {len(upward)} {upward}, "
        f"product files over 800 lines: {total['files_over_800'] or 'none'}"
    )
    if "--circles" in sys.argv:
        for r in rows:
            for c in r["circles"]:
                print(f"circle in {r['crate']}: {', '.join(c)}")


if __name__ == "__main__":
    main()
