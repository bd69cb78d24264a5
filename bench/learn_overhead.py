#!/usr/bin/env python3
"""What learning the target's files costs the start it is learnt in.

`iolab startup` records, during the experiment's first start, every page
the target's tree brings into the page cache (the files each later start's
cold step is checked on). This compares that first start with learning
(the default) and without it (`--evict LIST` names the files, so nothing is
learnt; the cold step, drop_caches, is the same), one experiment of one
start each, alternating ABBA-wise for `--rounds` rounds, on a named lab:

- big: `cat` of one 64 MiB file (16 Ki pages, one file to name);
- small: `cat` of 2000 files of 32 KiB (16 Ki pages, 2000 files to name).

Reported per target: median first-start time of each mode and the median
over rounds of the within-round ratio learning/none. Every run's JSON is
kept under bench/results/learn-<timestamp>/.

    sudo bench/learn_overhead.py [--rounds 10] [--iolab target/release/iolab]
"""

import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path

from benchlib import Labs, log, run

REPO = Path(__file__).resolve().parent.parent


def first_start_s(iolab, lab, db, target, evict):
    args = [iolab, "startup", "--lab", lab, "--schedulers", "none", "--workloads", "idle",
            "--reps", "1", "--json", "--db", str(db)]
    if evict:
        args += ["--evict", evict]
    out = run(args + ["--", "sh", "-c", target], stdout=subprocess.PIPE).stdout
    e = json.loads(out)
    runs = [r for r in e["runs"] if r["outcome"] == "ok"]
    return runs[0]["duration_ns"] / 1e9, runs[0]["extra"].get("learnt_files")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--iolab", default=str(REPO / "target/release/iolab"))
    a = ap.parse_args()
    out = REPO / "bench/results" / time.strftime("learn-%Y%m%d-%H%M%S")
    out.mkdir(parents=True)
    labs = Labs(a.iolab)
    try:
        lab = labs.up("bench-learn", ["--size", "1GiB"])
        mnt = Path(lab["mountpoint"])
        (mnt / "big").write_bytes(os.urandom(64 << 20))
        (mnt / "small").mkdir()
        for i in range(2000):
            (mnt / "small" / f"f{i}").write_bytes(os.urandom(32 << 10))
        targets = {
            "big": (f"cat {mnt}/big > /dev/null", str(mnt / "big")),
            "small": (f"cat {mnt}/small/* > /dev/null", str(mnt / "small")),
        }
        rows = []
        for name, (target, evict) in targets.items():
            t = {"learn": [], "none": []}
            ratios = []
            for r in range(a.rounds):
                order = ["learn", "none"] if r % 2 == 0 else ["none", "learn"]
                got = {}
                for mode in order:
                    db = out / f"{name}-{r}-{mode}.db"
                    got[mode], learnt = first_start_s(a.iolab, "bench-learn", db, target,
                                                      None if mode == "learn" else evict)
                    if mode == "learn":
                        assert learnt, "the first start learnt no files"
                    t[mode].append(got[mode])
                ratios.append(got["learn"] / got["none"])
                log(f"{name} round {r + 1}: learn {got['learn']:.3f} s, none {got['none']:.3f} s")
            rows.append((name, statistics.median(t["learn"]), statistics.median(t["none"]),
                         statistics.median(ratios)))
        (out / "summary.json").write_text(json.dumps(rows))
        print("| target | first start, learning (median s) | without (median s) | ratio learning/without (median of rounds) |")
        print("|---|---:|---:|---:|")
        for name, l, n, ratio in rows:
            print(f"| {name} | {l:.3f} | {n:.3f} | {ratio:.3f} |")
    finally:
        labs.close()


if __name__ == "__main__":
    main()
