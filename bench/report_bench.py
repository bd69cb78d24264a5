#!/usr/bin/env python3
"""Size and generation time of an experiment's HTML report, beside the
JSON export of the same experiment (the cost of the charts, flame graphs
and embedded data over the raw numbers), then the browser check.

    python3 bench/report_bench.py --db DB --id ID [--iolab PATH] [--runs 7]

Each command runs --runs times alternately (ABAB); medians and the ratio
report/export are printed, ready for docs/PERFORMANCE.md.
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


def timed(cmd):
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t0, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--id", required=True)
    ap.add_argument("--iolab", default="target/release/iolab")
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="iolab-report-bench-")
    html = os.path.join(tmp, "r.html")
    rep, exp, internal = [], [], []
    for _ in range(a.runs):
        t, out = timed([a.iolab, "report", a.id, "--db", a.db, "-o", html, "--json"])
        rep.append(t)
        internal.append(json.loads(out.stdout)["generation_ms"])
        t, out = timed([a.iolab, "results", "export", a.id, "--db", a.db,
                        "--format", "json", "-o", os.path.join(tmp, "r.json")])
        exp.append(t)
    size = os.path.getsize(html)
    jsize = os.path.getsize(os.path.join(tmp, "r.json"))
    med = statistics.median
    print(f"report: {size} bytes ({size / 2**20:.2f} MiB); JSON export {jsize} bytes")
    print(f"iolab report (whole command): median {med(rep) * 1e3:.0f} ms "
          f"(min {min(rep) * 1e3:.0f}, max {max(rep) * 1e3:.0f}); rendering alone "
          f"median {med(internal):.0f} ms")
    print(f"results export --format json: median {med(exp) * 1e3:.0f} ms")
    print(f"ratio report/export: {med(rep) / med(exp):.2f}x (n={a.runs} each, ABAB)")
    check = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__),
                            "report_check.py"), html], capture_output=True, text=True)
    print(check.stdout.strip())
    shutil.rmtree(tmp, ignore_errors=True)
    return check.returncode


if __name__ == "__main__":
    sys.exit(main())
