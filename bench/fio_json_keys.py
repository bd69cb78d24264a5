#!/usr/bin/env python3
"""fio's JSON and iolab's, key for key, for one job of each engine.

Runs the same command line through the installed fio and `iolab load`
(json+ output), then lists every key path fio writes that iolab does not
(and the reverse), and puts the main numbers side by side with a second fio
run, so a difference can be judged against fio's own run-to-run noise.

    bench/fio_json_keys.py [--iolab target/release/iolab] [--dir /var/tmp/fjk]

Exit status 1 when a key fio writes is missing from iolab's document.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ENGINES = ["psync", "sync", "pvsync", "pvsync2", "libaio", "io_uring", "posixaio", "mmap", "null"]
SKIP = {"percentile", "bins"}  # values, not layout; checked by presence on clat_ns below


def keys(v, p=""):
    out = set()
    if isinstance(v, dict):
        for k, x in v.items():
            q = f"{p}/{k}"
            out.add(q)
            if k not in SKIP:
                out |= keys(x, q)
    elif isinstance(v, list) and v:
        out |= keys(v[0], p + "[]")
    return out


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout[r.stdout.index("{"):])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = Path(__file__).resolve().parent.parent
    ap.add_argument("--iolab", default=str(here / "target" / "release" / "iolab"))
    ap.add_argument("--fio", default=shutil.which("fio") or "fio")
    ap.add_argument("--dir", default="/var/tmp/fio-json-keys")
    ap.add_argument("--engines", nargs="+", default=ENGINES)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    missing_any = False
    rows = []
    for eng in a.engines:
        f = os.path.join(a.dir, "data")
        job = [f"--name=j-{eng}", f"--filename={f}", "--size=64m", "--bs=4k", "--rw=randrw",
               f"--ioengine={eng}", "--runtime=2", "--time_based", "--output-format=json+"]
        if eng in ("libaio", "io_uring", "posixaio"):
            job += ["--iodepth=8", "--direct=1"]
        fio1, io, fio2 = run([a.fio] + job), run([a.iolab, "load"] + job), run([a.fio] + job)
        kf, ki = keys(fio1), keys(io)
        gone = sorted(kf - ki)
        extra = sorted(ki - kf)
        missing_any |= bool(gone)
        print(f"== {eng}: fio keys {len(kf)}, iolab keys {len(ki)}; missing in iolab: {gone or 'none'}")
        print(f"   only in iolab: {extra}")
        for d in ("read", "write"):
            for k in ("iops", "bw_mean", "iops_samples", "bw_samples"):
                v = [x["jobs"][0][d][k] for x in (fio1, io, fio2)]
                rows.append((eng, d, k, *v))
        for k in ("latency_us", "iodepth_level"):
            top = lambda x: max(x["jobs"][0][k].items(), key=lambda kv: kv[1])
            rows.append((eng, "job", k + " (largest bucket)", top(fio1), top(io), top(fio2)))
    print("\n| engine | dir | field | fio | iolab | fio again |\n|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    sys.exit(1 if missing_any else 0)


if __name__ == "__main__":
    main()
