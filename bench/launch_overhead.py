#!/usr/bin/env python3
"""The launch path's own cost, two builds side by side in one run.

Every `startup` first launches `true` ten times through the exact launch
path and prints the median as "harness overhead". This runs that for two
iolab binaries (e.g. the commit before a change and after it), alternating
which goes first in each round, for the bare launch and for the demo's
observers (`--explain --trace bio --cpu`, read_ahead_kb 128) and, with
`--demo`, the demo itself (its harness overhead is measured once its lab,
prefetch list and observers are set up), and prints
each round's medians and the after/before ratio: these machines are
noisy, so only the ratio within a round is trusted.

    python3 bench/launch_overhead.py --before OLD/iolab --after target/release/iolab --rounds 4
"""

import argparse
import os
import re
import subprocess
import tempfile

from benchlib import log

CONFIGS = {
    "bare": [],
    "demo observers": ["--explain", "--trace", "bio", "--cpu", "--read-ahead-kb", "128"],
}

LINE = re.compile(r"harness overhead .*: ([0-9.]+) ms median, ([0-9.]+)–([0-9.]+) ms")


def overhead(iolab, extra, db):
    """The harness overhead one `startup` (or the demo) printed: (median,
    min, max) ms."""
    if os.path.exists(db):
        os.remove(db)
    if extra == ["demo"]:
        cmd = [iolab, "demo", "--reps", "1", "--db", db]
    else:
        cmd = [iolab, "startup", "--lab-size", "64MiB", "--reps", "1", "--schedulers", "none",
               "--workloads", "idle", *extra, "--db", db, "--", "true"]
    out = subprocess.run(cmd, text=True, capture_output=True, check=True)
    m = LINE.search(out.stdout + out.stderr)
    if not m:
        raise SystemExit(f"no harness overhead line from {' '.join(cmd)}:\n{out.stderr}")
    return tuple(float(x) for x in m.groups())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--demo", action="store_true",
                    help="also `iolab demo --reps 1` itself (minutes per run)")
    a = ap.parse_args()
    if a.demo:
        CONFIGS["the demo itself"] = ["demo"]
    rows = []
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "r.db")
        for r in range(1, a.rounds + 1):
            order = [("before", a.before), ("after", a.after)]
            if r % 2 == 0:
                order.reverse()
            for name, extra in CONFIGS.items():
                got = {}
                for which, binary in order:
                    got[which] = overhead(binary, extra, db)
                    log(f"round {r} {name} {which}: {got[which][0]:.2f} ms")
                rows.append((r, name, got["before"], got["after"]))
    print("| round | launch | before: median (range), ms | after: median (range), ms | after / before |")
    print("|---|---|---|---|---|")
    for r, name, b, f in rows:
        print(f"| {r} | {name} | {b[0]:.2f} ({b[1]:.2f}–{b[2]:.2f}) | "
              f"{f[0]:.2f} ({f[1]:.2f}–{f[2]:.2f}) | {f[0] / b[0]:.2f} |")
    for name in CONFIGS:
        after = sorted(f[0] for _, n, _, f in rows if n == name)
        before = sorted(b[0] for _, n, b, _ in rows if n == name)
        mid = len(after) // 2
        print(f"\n{name}: median of round medians, before {before[mid]:.2f} ms, after {after[mid]:.2f} ms")


if __name__ == "__main__":
    main()
