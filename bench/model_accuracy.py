#!/usr/bin/env python3
"""The device model (`iolab lab up --backend model`) measured against what
it models, against the throttle backend, and against a plain loop lab.

  1. accuracy: sequential 1 MiB O_DIRECT reads and writes reach the
     modelled rate of 1 MiB requests (latency + transfer), a 4 KiB read at
     QD 1 on an idle lab takes the modelled service time; with depth 1
     and 8 concurrent readers, completions are spaced by at least one
     service time (never two in service at once) while the wait grows in
     the scheduler (`iolab trace bio`: QUE grows, LAT stays near the
     service time plus at most 3 queued ahead in the model);
  2. faithfulness at 40 MiB/s: the same fio jobs on a `--bw 40MiB/s` lab
     with each backend, errors against 40 MiB/s and against 4 KiB at that
     rate;
  3. cost: the server's CPU while a fio job reads 40 MiB/s through it;
  4. overhead: an unthrottled model lab's maximum IOPS and bandwidth as a
     ratio to a plain loop lab's (same fio jobs, ABBA).

Every number comes from fio's JSON (clat, bw) or iolab's own trace, and
the model's parameters from `iolab lab status --json`. Needs root and fio.

    sudo bench/model_accuracy.py [--runtime 5] [--rounds 2] [--no-build]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import Labs, log  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
MIB = 1 << 20


def fio(dev, name, rw, bs, runtime, iodepth=1, numjobs=1, engine="psync", rate=None, size=None):
    cmd = ["fio", f"--name={name}", f"--filename={dev}", f"--rw={rw}", f"--bs={bs}",
           "--direct=1", f"--ioengine={engine}", f"--iodepth={iodepth}", f"--numjobs={numjobs}",
           f"--runtime={runtime}", "--time_based", "--group_reporting", "--output-format=json"]
    if rate:
        cmd.append(f"--rate={rate}")
    if size:
        cmd.append(f"--size={size}")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    job = json.loads(out)["jobs"][0]
    d = job["read"] if "read" in rw or rw.startswith("rand") and "write" not in rw else job["write"]
    return {"bw": d["bw_bytes"], "iops": d["iops"], "clat_mean_us": d["clat_ns"]["mean"] / 1e3,
            "clat_p50_us": d["clat_ns"].get("percentile", {}).get("50.000000", 0) / 1e3}


def cpu_ticks(pid):
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def service_us(m, write, nbytes):
    lat = m["write_latency_ns"] if write else m["read_latency_ns"]
    bw = m["write_bw"] if write else m["read_bw"]
    return (lat + nbytes * 1e9 / bw) / 1e3


def accuracy(labs, iolab, runtime, profile):
    # mq-deadline: requests beyond the driver's 4 tags wait in the
    # scheduler (under `none` they would wait for a tag, before the queue).
    st = labs.up(f"acc-{profile}", ["--size", "1GiB", "--fs", "none", "--device-model", profile,
                                    "--scheduler", "mq-deadline"])
    dev, m = st["device"], st["model"]
    rows = []
    for rw, write in (("read", False), ("write", True)):
        r = fio(dev, "seq", rw, "1M", runtime)
        want = MIB / (service_us(m, write, MIB) / 1e6)
        rows.append((f"{profile}: sequential 1 MiB {rw}s, MB/s", r["bw"] / 1e6, want / 1e6))
    r = fio(dev, "rand4k", "randread", "4k", runtime)
    rows.append((f"{profile}: 4 KiB random read at QD 1, mean µs", r["clat_mean_us"], service_us(m, False, 4096)))
    # Depth 1 under 8 readers: completions spaced by the service time.
    trace = Path(tempfile.mkstemp(suffix=".jsonl")[1])
    kname = dev.removeprefix("/dev/")
    p = subprocess.Popen([iolab, "trace", "bio", "-d", kname, "--json", "--duration", f"{runtime}s"],
                         stdout=trace.open("w"), stderr=subprocess.DEVNULL)
    time.sleep(1)
    fio(dev, "8readers", "randread", "4k", runtime - 2, iodepth=1, numjobs=8)
    p.wait()
    reqs = [json.loads(line) for line in trace.read_text().splitlines() if line.startswith("{")]
    reqs = [r for r in reqs if "lat_ms" in r and r.get("t") == "R" and r.get("bytes") == 4096]
    done = sorted(r["time_s"] for r in reqs)
    gaps = [b - a for a, b in zip(done, done[1:])]
    svc = service_us(m, False, 4096) / 1e6
    serial = sum(1 for g in gaps if g >= 0.9 * svc) / max(1, len(gaps))
    que = sorted(r["que_ms"] for r in reqs)
    lat = sorted(r["lat_ms"] for r in reqs)
    med = lambda v: v[len(v) // 2] if v else 0  # noqa: E731
    rows.append((f"{profile}, 8 readers: completions spaced ≥ 0.9 service time, %", 100 * serial, 100.0))
    rows.append((f"{profile}, 8 readers: median QUE (in the scheduler), ms", med(que), None))
    rows.append((f"{profile}, 8 readers: median LAT (dispatch → done), ms", med(lat), 4 * svc * 1e3))
    trace.unlink()
    labs.close()
    return rows


def faithfulness(labs, runtime):
    rows = []
    rate = 40 * MIB
    for backend in ("throttle", "model"):
        st = labs.up(f"faith-{backend}", ["--size", "1GiB", "--fs", "none", "--bw", "40MiB/s", "--backend", backend])
        dev = st["device"]
        for rw in ("read", "write"):
            r = fio(dev, "seq", rw, "1M", runtime)
            rows.append((backend, f"sequential 1 MiB {rw}s, error vs 40 MiB/s, %", 100 * (r["bw"] - rate) / rate))
        r = fio(dev, "rand4k", "randread", "4k", runtime)
        want = 4096 / rate * 1e6
        rows.append((backend, "4 KiB read at QD 1: mean µs (4 KiB at 40 MiB/s = 97.7)", r["clat_mean_us"] - 0 * want))
        r = fio(dev, "rand4k8", "randread", "4k", runtime, iodepth=8, engine="io_uring")
        rows.append((backend, "4 KiB reads at QD 8: error vs 40 MiB/s, %", 100 * (r["bw"] - rate) / rate))
        labs.close()
    return rows


def cost(labs, runtime):
    st = labs.up("cost", ["--size", "1GiB", "--fs", "none", "--device-model", "ufs"])
    pid = st["model_stats"]["pid"]
    hz = os.sysconf("SC_CLK_TCK")
    t0, c0 = time.monotonic(), cpu_ticks(pid)
    r = fio(st["device"], "rate40", "read", "1M", runtime, rate="40m")
    share = (cpu_ticks(pid) - c0) / hz / (time.monotonic() - t0)
    t0, c0 = time.monotonic(), cpu_ticks(pid)
    r4 = fio(st["device"], "rate40k", "randread", "4k", runtime, iodepth=8, engine="io_uring", rate="40m")
    share4 = (cpu_ticks(pid) - c0) / hz / (time.monotonic() - t0)
    labs.close()
    return [("server CPU at 40 MiB/s of 1 MiB reads, % of a core", 100 * share, r["bw"] / MIB),
            ("server CPU at 40 MiB/s of 4 KiB reads (QD 8), % of a core", 100 * share4, r4["bw"] / MIB)]


def overhead(labs, runtime, rounds):
    # A model that never waits: the server's own cost is all there is.
    fast = ["--backend", "model", "--bw", "100GB/s", "--model-queue-depth", "32", "--queue-depth", "32"]
    jobs = [("4 KiB random reads, io_uring QD 32, IOPS", dict(rw="randread", bs="4k", iodepth=32, engine="io_uring"), "iops"),
            ("1 MiB sequential reads, io_uring QD 8, MB/s", dict(rw="read", bs="1M", iodepth=8, engine="io_uring"), "bw")]
    res = {}
    for rnd in range(rounds):
        order = ("plain", "model") if rnd % 2 == 0 else ("model", "plain")
        for kind in order:
            st = labs.up(f"ovh-{kind}", ["--size", "1GiB", "--fs", "none"] + (fast if kind == "model" else []))
            for label, kw, key in jobs:
                v = fio(st["device"], "ovh", runtime=runtime, **kw)[key]
                res.setdefault((label, kind), []).append(v)
            labs.close()
    rows = []
    for label, _, key in jobs:
        p = sorted(res[(label, "plain")])
        m = sorted(res[(label, "model")])
        scale = 1e6 if key == "bw" else 1
        rows.append((label, p[len(p) // 2] / scale, m[len(m) // 2] / scale))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runtime", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("model_accuracy.py: needs root")
    if not a.no_build:
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "iolab"], cwd=REPO, check=True)
    iolab = str(REPO / "target/release/iolab")
    labs = Labs(iolab)
    try:
        acc = accuracy(labs, iolab, a.runtime, "emmc") + accuracy(labs, iolab, a.runtime, "sd")
        faith = faithfulness(labs, a.runtime)
        cst = cost(labs, a.runtime)
        ovh = overhead(labs, a.runtime, a.rounds)
    finally:
        labs.close()
    print("### Accuracy (measured vs modelled)\n")
    print("| what | measured | modelled | error |\n|---|---:|---:|---:|")
    for what, got, want in acc:
        if "LAT" in what:
            # At most 4 dispatched (the kernel's minimum of driver tags),
            # served one at a time: up to 4 service times, never more.
            print(f"| {what} | {got:.2f} | ≤ {want:.2f} (4 service times) | – |")
            continue
        err = f"{100 * (got - want) / want:+.1f} %" if want else "–"
        print(f"| {what} | {got:.1f} | {want if want is None else round(want, 1)} | {err} |")
    print("\n### Throttle vs model at --bw 40MiB/s\n")
    print("| backend | what | value |\n|---|---|---:|")
    for b, what, v in faith:
        print(f"| {b} | {what} | {v:+.1f} |" if "error" in what else f"| {b} | {what} | {v:.1f} |")
    print("\n### Cost\n")
    for what, v, achieved in cst:
        print(f"- {what}: {v:.1f} % (achieved {achieved:.1f} MiB/s)")
    print("\n### Model lab (never waiting) vs plain loop lab\n")
    print("| job | plain loop | model | ratio model/plain |\n|---|---:|---:|---:|")
    for label, p, m in ovh:
        print(f"| {label} | {p:.0f} | {m:.0f} | {m / p:.2f} |")


if __name__ == "__main__":
    main()
