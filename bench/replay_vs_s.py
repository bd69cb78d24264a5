#!/usr/bin/env python3
"""`iolab app --replay` against S's own replayer, on one lab, side by side.

    python3 bench/replay_vs_s.py --s-dir S/comm_startup_lat [--rounds 3]
        [--traces xterm,gnometerm,lowriter] [--iolab target/release/iolab]

S's `replay-startup-io.cc` (from a clone of the S suite, e.g. fetched from
github.com/Algodev-github/S) is compiled with g++ and libaio (installed
with apt-get when missing). Both replayers read the same per-thread files
(S's names and size; made once by `iolab app --replay --prepare`) on one
1 GiB ext4 lab (`--scheduler none`). Every run starts with the page cache
dropped, and `iolab trace bio` on the lab counts its block requests and
bytes and gives its span: from the first request's insertion to the last
completion.

Three replayers, in rotating order each round:
- `S`: `replay-startup-io TRACE DIR` (as fast as it can; its sleep is
  `#if 0`'d out in S's source);
- `iolab-nodelay`: `iolab app --replay TRACE --dir DIR --no-delays`, S's
  semantics;
- `iolab`: the default, which keeps the trace's inter-arrival delays.

Prints, per trace, the median of each measure and the ratio to S. The trace's
own request count, bytes and summed delays are the outside truth.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import Labs, log, run  # noqa: E402


def trace_truth(path):
    """Requests, bytes and summed delays the trace lists (`COMM-PID DELTA
    SECTORS ...`; the first line's delta is its start, not a delay)."""
    reqs, nbytes, span = 0, 0, 0.0
    for i, line in enumerate(l for l in open(path) if l.strip()):
        f = line.split()
        reqs += 1
        span += float(f[1]) if i else 0.0
        nbytes += int(f[2]) * 512
    return reqs, nbytes, span


def compile_s(src, out):
    for tool, pkg in (("g++", "g++"), (None, "libaio-dev")):
        have = shutil.which(tool) if tool else os.path.exists("/usr/include/libaio.h")
        if not have:
            log(f"installing {pkg}")
            run(["apt-get", "install", "-y", "-qq", pkg], stdout=subprocess.DEVNULL)
    run(["g++", "-std=c++11", "-O2", "-pthread", "-Wall", src, "-o", out, "-laio"])


def traced(iolab, lab, cmd):
    """Runs cmd under `iolab trace bio` with the cache dropped first."""
    run(["sync"])
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")
    t0 = time.monotonic()
    out = run([iolab, "trace", "bio", "--json", "-d", lab, "--", *cmd],
              stdout=subprocess.PIPE).stdout
    wall = time.monotonic() - t0
    lines = [json.loads(l) for l in out.splitlines() if l.strip()]
    counters, reqs = lines[-1], lines[:-1]
    assert counters.get("lost_events", 0) == 0, counters
    starts = [r["time_s"] - (r["que_ms"] + r["lat_ms"]) / 1e3 for r in reqs]
    ends = [r["time_s"] for r in reqs]
    return {
        "requests": len(reqs),
        "bytes": sum(r["bytes"] for r in reqs),
        "span_s": max(ends) - min(starts) if reqs else 0.0,
        "wall_s": wall,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--s-dir", required=True, help="S's comm_startup_lat directory")
    ap.add_argument("--iolab", default="target/release/iolab")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--traces", default="xterm,gnometerm,lowriter")
    a = ap.parse_args()
    iolab = os.path.abspath(a.iolab)
    tmp = tempfile.mkdtemp(prefix="replay-vs-s-")
    labs = Labs(iolab)
    try:
        s_bin = os.path.join(tmp, "replay-startup-io")
        compile_s(os.path.join(a.s_dir, "replay-startup-io.cc"), s_bin)
        lab = labs.up("bench-replay", ["--size", "1GiB", "--fs", "ext4",
                                       "--scheduler", "none"])
        results = {}
        for name in a.traces.split(","):
            trace = os.path.join(a.s_dir, f"{name}.trace")
            d = os.path.join(lab["mountpoint"], name)
            run([iolab, "app", "--replay", trace, "--prepare", "--dir", d],
                stdout=subprocess.DEVNULL)
            tools = {
                "S": [s_bin, trace, d],
                "iolab-nodelay": [iolab, "app", "--replay", trace, "--dir", d,
                                  "--no-delays"],
                "iolab": [iolab, "app", "--replay", trace, "--dir", d],
            }
            order = list(tools)
            got = {t: [] for t in tools}
            for r in range(a.rounds):
                for t in order[r % 3:] + order[:r % 3]:
                    got[t].append(traced(iolab, lab["name"], tools[t]))
                    log(f"{name} round {r + 1} {t}: {got[t][-1]}")
            results[name] = (trace_truth(trace), got)
        report(results)
    finally:
        labs.close()
        shutil.rmtree(tmp, ignore_errors=True)


def report(results):
    print("| trace | replayer | requests | bytes | span s (median) | span / S | wall s |")
    print("|---|---|---|---|---|---|---|")
    for name, ((treqs, tbytes, tspan), got) in results.items():
        print(f"| {name} | the trace | {treqs} | {tbytes} | {tspan:.3f} (summed delays) | | |")
        s_span = statistics.median(x["span_s"] for x in got["S"])
        for t, runs in got.items():
            span = statistics.median(x["span_s"] for x in runs)
            reqs = sorted({x["requests"] for x in runs})
            nbytes = sorted({x["bytes"] for x in runs})
            wall = statistics.median(x["wall_s"] for x in runs)
            print(f"| {name} | {t} | {'/'.join(map(str, reqs))} | "
                  f"{'/'.join(map(str, nbytes))} | {span:.3f} | {span / s_span:.2f} | {wall:.2f} |")


if __name__ == "__main__":
    main()
