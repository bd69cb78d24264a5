#!/usr/bin/env python3
"""Cost of recording scheduler events: iolab sched record (tracefs, every
event to a file) against iolab sched record --tracer bpf (delays summed in
the kernel) against perf sched record, on a context-switch-bound load.

Workload: `perf bench sched pipe -l LOOPS` (two tasks ping-ponging a pipe:
every operation is two wakeups and two switches, the worst case for a
scheduler tracer). Each tracer is started on its own (system-wide, for
longer than the load), the load is run beside it, and we keep:
  - ops/s of the load, and its ratio to the untraced runs of the same
    round (these machines are noisy: only ratios within a run count);
  - the tracer's own CPU (user + system, from wait4; perf's `sleep` child
    is negligible), per 1000 load operations;
  - events the tracer reported, and lost.
Modes run ROUNDS times, rotated each round.

Needs root, perf (linux-perf) and a release build of iolab.

    sudo bench/sched_overhead.py                  # builds, ~2 minutes
    sudo bench/sched_overhead.py --rounds 5 --loops 200000 --no-build
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODES = ["none", "iolab-tracefs", "iolab-bpf", "perf-sched"]


def load(loops):
    out = subprocess.run(["perf", "bench", "sched", "pipe", "-l", str(loops)],
                         check=True, capture_output=True, text=True).stdout
    return float(re.search(r"(\d+)\s+ops/sec", out).group(1))


def tracer(mode, iolab, out_dir, seconds):
    if mode == "iolab-tracefs":
        return [iolab, "sched", "record", "--json", "--duration", str(seconds), "-o", str(out_dir / "t.trace")]
    if mode == "iolab-bpf":
        return [iolab, "sched", "record", "--json", "--tracer", "bpf", "--duration", str(seconds),
                "-o", str(out_dir / "b.json")]
    if mode == "perf-sched":
        return ["perf", "sched", "record", "-k", "CLOCK_MONOTONIC", "-o", str(out_dir / "perf.data"),
                "--", "sleep", str(seconds)]
    return None


def run(mode, iolab, out_dir, loops, seconds):
    argv = tracer(mode, iolab, out_dir, seconds)
    if argv is None:
        return dict(ops=load(loops), cpu_s=0.0, events=0, lost=0)
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.0)  # attached
    ops = load(loops)
    _, status, ru = os.wait4(p.pid, 0)
    stdout = p.stdout.read().decode()
    stderr = p.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{mode} failed: {stderr}")
    events = lost = 0
    if mode.startswith("iolab"):
        v = json.loads(stdout)
        events, lost = v["events"], v["lost_events"]
    else:
        m = re.search(r"\((\d+) samples\)", stderr)
        events = int(m.group(1)) if m else 0
    return dict(ops=ops, cpu_s=ru.ru_utime + ru.ru_stime, events=events, lost=lost)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--loops", type=int, default=100000)
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root")
    if not a.no_build:
        subprocess.run(["cargo", "build", "--release", "-p", "iolab"], cwd=REPO, check=True)
    iolab = str(REPO / "target/release/iolab")
    # Long enough to outlast the load (measured untraced first).
    t0 = time.monotonic()
    load(a.loops)
    seconds = max(3, int((time.monotonic() - t0) * 4) + 2)
    results = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory() as d:
        for r in range(a.rounds):
            order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
            for m in order:
                results[m].append(run(m, iolab, Path(d), a.loops, seconds))
                print(f"round {r + 1} {m}: {results[m][-1]}", file=sys.stderr)
    base = statistics.median(x["ops"] for x in results["none"])
    print(f"perf bench sched pipe -l {a.loops}, {a.rounds} rounds; untraced median {base:.0f} ops/s\n")
    print("| tracer | ops/s kept (median) | tracer CPU ms per 1000 ops | events | lost |")
    print("|---|---|---|---|---|")
    for m in MODES[1:]:
        kept = statistics.median(x["ops"] / base for x in results[m])
        cpu = statistics.median(x["cpu_s"] * 1e3 / (a.loops / 1000) for x in results[m])
        ev = statistics.median(x["events"] for x in results[m])
        lost = max(x["lost"] for x in results[m])
        print(f"| {m} | {kept:.2f} | {cpu:.2f} | {ev:.0f} | {lost} |")


if __name__ == "__main__":
    main()
