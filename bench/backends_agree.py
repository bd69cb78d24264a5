#!/usr/bin/env python3
"""Do the two stand-ins for `--bw` (the blkio throttle and the device
model's `rate` profile) give the same start-up answer, and what did the
read-ahead a loop device inherits from the host's disk do to it?

One `iolab startup` matrix per backend: a cold `cat` of an 8 MiB file on a
`--bw 20MiB/s` lab, idle and under 1w and 1r1w, mq-deadline and BFQ,
alternated throttle/model/model/throttle (ABBA) so drift hits both alike.
A third arm runs the throttle with `--read-ahead-kb 2560` (applied per
cell; the stored place shows the lab as made, with 128): the read-ahead
this VM's loop device inherits from its virtio disk (read_ahead_kb 8192)
when the lab does not set it, as every throttle lab had before
2026-11-30 (those were rotational too; this arm is not).

Every number is the stored mean of the cell's starts (`--json`), the
loaded cell's ratio to the idle cell of the same run, and model/throttle
per cell. Needs root.

    sudo bench/backends_agree.py [--iolab target/release/iolab] [--reps 3] [--rounds 1]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PREPARE = "dd if=/dev/urandom of={dir}/f bs=1M count=8 status=none"
SCHEDULERS = ["mq-deadline", "bfq"]
WORKLOADS = ["1w", "1r1w"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def startup(iolab, backend, reps, db, extra):
    cmd = [iolab, "startup", "--backend", backend, "--bw", "20MiB/s",
           "--lab-size", "256MiB", "--reps", str(reps), "--warmup", "0.5",
           "--load-option", "size=32M", "--timeout", "20",
           "--schedulers", ",".join(SCHEDULERS), "--workloads", ",".join(WORKLOADS),
           "--prepare", PREPARE, "--json", "--db", db, *extra, "--", "cat", "{dir}/f"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    cells = {}
    for c in report["cells"]:
        cells[(c["scheduler"], c["workload"])] = (c["mean"], c["censored"])
    return report["experiment"]["config"]["place"], cells


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iolab", default=os.path.join(HERE, "..", "target", "release", "iolab"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1)
    a = ap.parse_args()
    arms = {"throttle": ("throttle", []), "model": ("model", []),
            "throttle, read-ahead 2560": ("throttle", ["--read-ahead-kb", "2560"])}
    order = []
    for _ in range(a.rounds):
        order += ["throttle", "model", "throttle, read-ahead 2560",
                  "throttle, read-ahead 2560", "model", "throttle"]
    means = {arm: {} for arm in arms}
    places = {}
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        for i, arm in enumerate(order):
            backend, extra = arms[arm]
            log(f"[{i + 1}/{len(order)}] {arm}")
            place, cells = startup(a.iolab, backend, a.reps, os.path.join(tmp, f"r{i}.db"), extra)
            places[arm] = place
            for k, v in cells.items():
                means[arm].setdefault(k, []).append(v)
    print("| arm | scheduler | workload | mean start, s | × idle | censored |")
    print("|---|---|---|---:|---:|---:|")
    summary = {}
    for arm in arms:
        for sched in SCHEDULERS:
            idle = statistics.mean(m for m, _ in means[arm][(sched, "idle")])
            for w in ["idle", *WORKLOADS]:
                vals = means[arm][(sched, w)]
                m = statistics.mean(v for v, _ in vals)
                cens = sum(c for _, c in vals)
                summary[(arm, sched, w)] = m
                print(f"| {arm} | {sched} | {w} | {m:.2f} | {m / idle:.1f} | {cens} |")
    print()
    print("| scheduler | workload | model / throttle | throttle 2560 / throttle |")
    print("|---|---|---:|---:|")
    for sched in SCHEDULERS:
        for w in ["idle", *WORKLOADS]:
            t = summary[("throttle", sched, w)]
            print(f"| {sched} | {w} | {summary[('model', sched, w)] / t:.2f} "
                  f"| {summary[('throttle, read-ahead 2560', sched, w)] / t:.2f} |")
    print()
    for arm, place in places.items():
        print(f"- {arm}: {place}")


if __name__ == "__main__":
    main()
