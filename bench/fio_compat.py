#!/usr/bin/env python3
"""Runs every job file of fio's examples/ whose engine iolab implements
through `iolab load`, unchanged, with a short --size/--runtime added, and
writes the table of docs/FIO-COMPAT.md (file, result, reason).

  bench/fio_compat.py FIO_SOURCE_TREE [--iolab target/release/iolab] [--out docs/FIO-COMPAT.md]

Each file runs in a fresh scratch directory (its relative file names land
there). "runs" means exit 0; "refused" means exit 2 with a one-line reason;
anything else is "FAILED" (a bug). The environment variables some examples
expect (FIO_BS, FIO_RW, FIO_IODEPTH) are set, as their comments ask."""

import argparse, os, re, subprocess, sys, tempfile, time

FOOTER = """
## fio's output tools on iolab's output

`cargo test -p iolab --test fio_tools -- --nocapture` runs fio 3.33's own
output tools (scripts/fio-tools.sh fetches them) on iolab's and fio's
output of the same job and prints their table.

## Not like fio

- Clones (`numjobs`) are threads of one process, as with fio's `thread`;
  fio's default is a process per clone. Under BFQ the two are served
  differently (docs/PERFORMANCE.md, sweep --max against fio): compare with
  fio jobs that set `thread`.
- The normal output is iolab's table, not fio's layout; terse and JSON
  follow fio 3.33's. Submission latency (slat) is not measured: no
  `_slat` log, `slat_ns` zeros.
"""

ENGINES = {"sync", "psync", "pvsync", "pvsync2", "libaio", "io_uring",
           "posixaio", "mmap", "null", "cpuio"}


def engines(text):
    found = set(re.findall(r"^\s*ioengine\s*=\s*(\S+)", text, re.M))
    return found or {"psync"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fio_src")
    ap.add_argument("--iolab", default="target/release/iolab")
    ap.add_argument("--out", default="docs/FIO-COMPAT.md")
    ap.add_argument("--size", default="16m")
    ap.add_argument("--runtime", default="2")
    a = ap.parse_args()
    iolab = os.path.abspath(a.iolab)
    ex = os.path.join(a.fio_src, "examples")
    files = sorted(f for f in os.listdir(ex) if f.endswith(".fio"))
    env = dict(os.environ, FIO_BS="4k", FIO_RW="randread", FIO_IODEPTH="4")
    rows, counts = [], {"runs": 0, "refused": 0, "FAILED": 0}
    skipped = 0
    for f in files:
        text = open(os.path.join(ex, f), errors="replace").read()
        if not engines(text) <= ENGINES:
            skipped += 1
            continue
        with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
            cmd = [iolab, "load", os.path.join(ex, f), "--size", a.size,
                   "--runtime", a.runtime]
            t0 = time.time()
            try:
                p = subprocess.run(cmd, cwd=d, env=env, capture_output=True,
                                   text=True, timeout=300)
                rc, err = p.returncode, p.stderr
            except subprocess.TimeoutExpired:
                rc, err = -1, "timed out after 300 s"
            secs = time.time() - t0
        lines = [l for l in err.splitlines() if l.startswith("iolab:") and "note:" not in l]
        reason = lines[-1][len("iolab: "):] if lines else ""
        reason = reason.replace(ex + "/", "")
        result = "runs" if rc == 0 else "refused" if rc == 2 else "FAILED"
        if result == "runs":
            reason = ""
        elif result == "FAILED":
            reason = f"exit {rc}: {reason or err.strip()[-200:]}"
        counts[result] += 1
        rows.append((f, result, reason, secs))
        print(f"{f:40} {result:8} {reason[:110]}", file=sys.stderr)
    with open(a.out, "w") as o:
        o.write("# fio's example job files through `iolab load`\n\n")
        o.write("Produced by `bench/fio_compat.py FIO_SOURCE_TREE` (fio commit of the tree used\n"
                "is noted below); rerun it against any fio source tree. Each file runs unchanged\n"
                f"with `--size {a.size} --runtime {a.runtime}` added, in a fresh scratch directory, "
                "as root.\n\n")
        o.write(f"Of {len(files)} files, {len(files) - skipped} use only engines iolab implements "
                f"({', '.join(sorted(ENGINES))}); the other {skipped} name network, GPU, vendor or "
                "special-purpose engines and are refused by name (not listed).\n\n")
        o.write(f"**{counts['runs']} run, {counts['refused']} are refused with exit 2 and a reason, "
                f"{counts['FAILED']} fail.**\n\n")
        o.write("| file | result | reason |\n|---|---|---|\n")
        for f, r, why, _ in rows:
            o.write(f"| {f} | {r} | {why.replace('|', '/')} |\n")
        o.write(FOOTER)
    return 0 if counts["FAILED"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
