#!/usr/bin/env python3
"""iolab sched vs perf sched: agreement, recording overhead, report time.

Workload: seed 004's fio job (docs/experiments/seed004.fio: one sync
O_DIRECT 4 KiB random reader + 8 cpuio burners at 90 %, qsort) run by
`iolab load` for DURATION seconds on a file in a scratch directory.

1. Agreement. Both recorders run at the same time on the same workload:
   `iolab sched record` (private tracefs instance) starts first and stops
   last; `perf sched record -k CLOCK_MONOTONIC -e sched:sched_wakeup`
   (perf_event buffers; `-e sched:sched_wakeup` because `perf sched
   latency` measures from sched_wakeup and perf 6.x records only
   sched_waking by default) records inside that window. Every tracepoint
   hit is delivered to both, so per task the delay samples are the same
   kernel events. iolab's raw samples (`report --json --samples`) are cut to
   perf's window [first perf event, last perf event] and compared per task
   id with `perf sched latency -p` (-p: one row per task, no merging by
   name):
     - Switches: perf's count must be iolab's sample count, or one more: perf
       books a 0 ms delay at the first switch in of a task it had not seen
       (iolab, which started earlier, knows that task's real wait, which
       began outside perf's window and is cut).
     - Max delay and Avg delay (perf's sum / perf's count) within TOL_US:
       the two tools read the clock at different points (perf when it
       writes its sample, ftrace when it reserves the event), which moves
       each endpoint by up to a few µs.
   Tasks whose id appears twice on either side (tid reuse) are skipped.
   perf before 6.9 decodes prev_state by indexing "RSDTtZXxKWP" with the
   raw value, so only a plain runnable switch out (R, 0) starts a wait; an
   in-kernel preemption (R+, TASK_REPORT_MAX = 0x100) reads past the string
   and is not counted. Such a perf is compared with iolab's wakeup delays
   plus its preempt delays that were plain R (`kernel_preempt` false); a
   newer perf (evsel__taskstate) with all of them. --perf-r-plus overrides
   the version check.

2. Recording overhead. The same workload under each recorder alone, ROUNDS
   times in ABBA order, plus a run without any recorder: CPU time of the
   recorder process (user + system, from wait4; perf's child `sleep` is
   negligible), events recorded and lost, file size, and the reader's IOPS
   (a recorder that steals CPU from the load shows up there). Each tool
   records what its own report needs: perf sched record's default events
   (switch, stat_runtime, fork, wakeup_new, migrate, waking) against iolab
   sched record's (switch, wakeup, wakeup_new, waking, migrate, fork, exec,
   exit); CPU per 1000 events normalises the difference.

3. Report time: `iolab sched report FILE` against `perf sched latency -p -i
   FILE` on the agreement run's files (3 runs each, median), with the event
   count of each file.

Needs root, perf (linux-perf) and a release build of iolab. Results (the
agreement run's trace files, raw outputs and a Markdown summary) under
bench/results/sched-<timestamp>/.

    sudo bench/sched_vs_perf.py                   # builds, ~3 minutes
    sudo bench/sched_vs_perf.py --duration 5 --rounds 1 --no-build
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOL_US = 5.0


def sh(args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw)


def job_file(workdir: Path, seconds: int) -> Path:
    text = (REPO / "docs/experiments/seed004.fio").read_text()
    text = text.replace("/data/testing", str(workdir / "testing"))
    text = text.replace("runtime=120", f"runtime={seconds}")
    p = workdir / f"seed004-{seconds}s.fio"
    p.write_text(text)
    return p


def wait_rusage(p: subprocess.Popen):
    """Waits for p; returns (returncode, user+sys CPU seconds) via wait4."""
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, ru.ru_utime + ru.ru_stime


def run_load(iolab, job):
    out = sh([iolab, "load", str(job), "--json"]).stdout
    v = json.loads(out)
    rr = next(j for j in v["jobs"] if j["jobname"] == "randread")
    return rr["read"]["iops"]


PERF_ROW = re.compile(
    r"^\s*(?P<task>.+?)\s*\|\s*(?P<rt>[\d.]+) ms\s*\|\s*(?P<sw>\d+)\s*\|\s*avg:\s*(?P<avg>[\d.]+) ms\s*\|"
    r"\s*max:\s*(?P<max>[\d.]+) ms\s*\|\s*max (?:start|at):\s*(?P<start>[\d.]+) s"
)


def perf_latency(data: Path):
    out = sh(["perf", "sched", "latency", "-p", "-i", str(data)]).stdout
    rows, dup = {}, set()
    for line in out.splitlines():
        m = PERF_ROW.match(line)
        if not m:
            continue
        comm, _, tid = m["task"].rpartition(":")
        if not tid.isdigit():
            continue
        tid = int(tid)
        if tid in rows:
            dup.add(tid)
        rows[tid] = dict(comm=comm, switches=int(m["sw"]), avg_ms=float(m["avg"]), max_ms=float(m["max"]),
                         max_start=float(m["start"]))
    lost = re.search(r"INFO:.*lost events \((\d+) out of", out)
    return rows, dup, int(lost.group(1)) if lost else 0, out


def perf_window(data: Path):
    ts = sh(["perf", "script", "-i", str(data), "-F", "time", "--ns"]).stdout.split()
    vals = [float(t.rstrip(":")) for t in ts if t.rstrip(":").replace(".", "").isdigit()]
    return int(round(min(vals) * 1e9)), int(round(max(vals) * 1e9))


def perf_events(data: Path):
    out = sh(["perf", "report", "--stats", "-i", str(data)]).stdout
    samples = re.search(r"^\s*SAMPLE events:\s*(\d+)", out, re.M)
    lost = re.search(r"^\s*LOST events:\s*(\d+)", out, re.M)
    return int(samples.group(1)) if samples else 0, int(lost.group(1)) if lost else 0


def perf_counts_r_plus():
    v = sh(["perf", "version"]).stdout
    m = re.search(r"(\d+)\.(\d+)", v)
    return bool(m) and (int(m.group(1)), int(m.group(2))) >= (6, 9)


def agreement(iolab, job_s, out: Path, duration, r_plus):
    a, p = out / "agree.trace", out / "agree.perf.data"
    rec = subprocess.Popen([iolab, "sched", "record", "--duration", str(duration + 4), "-o", str(a), "--json"],
                           stdout=subprocess.PIPE, text=True)
    time.sleep(1)
    perf = subprocess.Popen(["perf", "sched", "record", "-k", "CLOCK_MONOTONIC", "-e", "sched:sched_wakeup",
                             "-o", str(p), "--", "sleep", str(duration + 2)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    run_load(iolab, job_s)
    perf.wait()
    rec_json = json.loads(rec.communicate()[0])
    rows, dup, perf_lost, perf_text = perf_latency(p)
    (out / "agree.perf-latency.txt").write_text(perf_text)
    lo, hi = perf_window(p)
    rep = json.loads(sh([iolab, "sched", "report", str(a), "--json", "--samples"]).stdout)
    (out / "agree.iolab-report.json").write_text(json.dumps(rep))
    ours, seen = {}, {}
    for t in rep["samples"]:
        seen[t["tid"]] = seen.get(t["tid"], 0) + 1
        d = [s["start_ns"] - s["ready_ns"] for s in t["samples"]
             if s["ready_ns"] >= lo and s["start_ns"] <= hi
             and (s["kind"] == "wakeup" or r_plus or not s["kernel_preempt"])]
        ours[t["tid"]] = d
    compared, n_ok, max_ok, avg_ok, bad = 0, 0, 0, 0, []
    for tid, r in rows.items():
        if tid in dup or seen.get(tid, 0) != 1 or r["comm"].startswith("swapper"):
            continue
        d = ours[tid]
        compared += 1
        extra = r["switches"] - len(d)
        if extra in (0, 1):
            n_ok += 1
        mine_max = max(d) / 1e3 if d else 0.0
        mine_avg = sum(d) / 1e3 / r["switches"] if r["switches"] else 0.0
        if abs(mine_max - r["max_ms"] * 1e3) <= TOL_US:
            max_ok += 1
        if abs(mine_avg - r["avg_ms"] * 1e3) <= TOL_US:
            avg_ok += 1
        if extra not in (0, 1) or abs(mine_max - r["max_ms"] * 1e3) > TOL_US or abs(mine_avg - r["avg_ms"] * 1e3) > TOL_US:
            bad.append(dict(tid=tid, comm=r["comm"], perf_switches=r["switches"], iolab_samples=len(d),
                            perf_max_us=r["max_ms"] * 1e3, iolab_max_us=mine_max,
                            perf_avg_us=r["avg_ms"] * 1e3, iolab_avg_us=mine_avg))
    return dict(perf_counts_r_plus=r_plus, compared=compared, switches_match=n_ok, max_within=max_ok, avg_within=avg_ok,
                mismatches=bad, perf_lost=perf_lost, iolab_lost=rec_json["lost_events"],
                iolab_events=rec_json["events"], perf_events=perf_events(p)[0],
                counters=rep["trace"]["counters"]), a, p


def overhead(iolab, job_s, out: Path, duration, rounds):
    runs = []
    order = []
    for r in range(rounds):
        order += ["none", "iolab", "perf"] if r % 2 == 0 else ["none", "perf", "iolab"]
    for i, tool in enumerate(order):
        f = out / f"ovh-{i}-{tool}"
        if tool == "none":
            runs.append(dict(tool=tool, iops=run_load(iolab, job_s)))
            continue
        if tool == "iolab":
            args = [iolab, "sched", "record", "--duration", str(duration + 2), "-o", str(f) + ".trace", "--json"]
        else:
            args = ["perf", "sched", "record", "-o", str(f) + ".data", "--", "sleep", str(duration + 2)]
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        time.sleep(1)
        iops = run_load(iolab, job_s)
        stdout = p.stdout.read()
        _, cpu = wait_rusage(p)
        if tool == "iolab":
            v = json.loads(stdout)
            events, lost, size = v["events"], v["lost_events"], v["bytes"]
        else:
            events, lost = perf_events(Path(str(f) + ".data"))
            size = Path(str(f) + ".data").stat().st_size
        runs.append(dict(tool=tool, iops=iops, cpu_s=cpu, events=events, lost=lost, bytes=size))
        # Tens of MiB each and only counted: the agreement run's files stay.
        for ext in (".trace", ".data"):
            Path(str(f) + ext).unlink(missing_ok=True)
    return runs


def timed(args, n=3):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=int, default=20, help="seconds of load per run (20)")
    ap.add_argument("--rounds", type=int, default=3, help="overhead rounds (3)")
    ap.add_argument("--iolab", default=str(REPO / "target/release/iolab"))
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--results", default=None)
    ap.add_argument("--perf-r-plus", choices=["auto", "yes", "no"], default="auto",
                    help="does perf sched latency count in-kernel preemptions (R+)? auto: perf >= 6.9")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (tracefs, perf system-wide)")
    if not shutil.which("perf"):
        sys.exit("perf not found: apt-get install -y linux-perf")
    if not a.no_build:
        subprocess.run(["cargo", "build", "--release", "-p", "iolab"], cwd=REPO, check=True)
    out = Path(a.results or REPO / "bench/results" / time.strftime("sched-%Y%m%d-%H%M%S"))
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="iolab-sched-bench-", dir="/var/tmp"))
    try:
        sh([a.iolab, "load", str(job_file(work, 1))])  # lays out the 500 MiB file
        job_s = job_file(work, a.duration)
        r_plus = {"yes": True, "no": False}.get(a.perf_r_plus)
        if r_plus is None:
            r_plus = perf_counts_r_plus()
        agree, at, pd = agreement(a.iolab, job_s, out, a.duration, r_plus)
        rt_iolab = timed([a.iolab, "sched", "report", str(at)])
        rt_perf = timed(["perf", "sched", "latency", "-p", "-i", str(pd)])
        runs = overhead(a.iolab, job_s, out, a.duration, a.rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    res = dict(agreement=agree, report_s=dict(iolab=rt_iolab, perf=rt_perf), runs=runs,
               duration=a.duration, rounds=a.rounds, tolerance_us=TOL_US)
    (out / "results.json").write_text(json.dumps(res, indent=1))

    g = agree
    md = [f"### Agreement with perf sched latency ({a.duration} s of seed 004's load, recorded by both at once)", "",
          "| tasks compared | Switches = samples (+1 first-seen) | Max delay within ±{0:g} µs | Avg delay within ±{0:g} µs |"
          .format(TOL_US), "|---|---|---|---|",
          f"| {g['compared']} | {g['switches_match']} | {g['max_within']} | {g['avg_within']} |", "",
          f"perf counts in-kernel preemptions (R+): {g['perf_counts_r_plus']}. "
          f"Events: iolab {g['iolab_events']} ({g['iolab_lost']} lost), perf {g['perf_events']} samples "
          f"({g['perf_lost']} lost). iolab counters: {g['counters']}.", ""]
    if g["mismatches"]:
        md += ["Mismatches:", "", "```", json.dumps(g["mismatches"][:10], indent=1), "```", ""]
    md += [f"### Recording overhead (median of {a.rounds} rounds, {a.duration} s each)", "",
           "| recorder | CPU s | events | lost | CPU µs / 1000 events | file MiB | reader IOPS |", "|---|---|---|---|---|---|---|"]
    for tool in ["none", "iolab", "perf"]:
        rs = [r for r in runs if r["tool"] == tool]
        iops = statistics.median(r["iops"] for r in rs)
        if tool == "none":
            md.append(f"| (none) | - | - | - | - | - | {iops:.0f} |")
            continue
        cpu = statistics.median(r["cpu_s"] for r in rs)
        ev = statistics.median(r["events"] for r in rs)
        lost = max(r["lost"] for r in rs)
        per = statistics.median(r["cpu_s"] / r["events"] * 1e9 for r in rs)
        mib = statistics.median(r["bytes"] for r in rs) / (1 << 20)
        md.append(f"| {tool} | {cpu:.3f} | {ev:.0f} | {lost} | {per:.1f} | {mib:.1f} | {iops:.0f} |")
    md += ["", "### Report time (agreement run's files, median of 3)", "",
           "| tool | events in file | seconds | ns / event |", "|---|---|---|---|",
           f"| iolab sched report | {g['iolab_events']} | {rt_iolab:.3f} | {rt_iolab / g['iolab_events'] * 1e9:.0f} |",
           f"| perf sched latency -p | {g['perf_events']} | {rt_perf:.3f} | {rt_perf / g['perf_events'] * 1e9:.0f} |"]
    text = "\n".join(md) + "\n"
    (out / "summary.md").write_text(text)
    print(text)
    print(f"raw results: {out}")


if __name__ == "__main__":
    main()
