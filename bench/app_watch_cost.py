#!/usr/bin/env python3
"""What iolab's app watcher costs inside a start's window, in the strict
Android-shaped rig (scripts/android/rig.sh: no ns_last_pid, zygote
specialising the app by renames).

Two ways of timing the same cold start of the rig's activity, alternated
in rounds so drift hits both alike:

  plain  what a user does today: a shell loop on the device,
         `am force-stop; echo 3 > drop_caches; am start -W -S -n ...`,
         am's TotalTime read from its output;
  iolab  `iolab startup --am-start ... --target-ioprio be:4`: the watcher
         finds the app by its rename (task events of iolab's own tracefs
         instance), sets I/O class be:4 (what a nice-0 thread has: no
         effect on a start under mq-deadline) on every thread, then reads
         every thread of the app every 5 ms for drifts (Android resets
         nice, never the I/O class: none here), until the start ends;
         its idle starts are compared with the plain ones, and its starts
         under one reader and one writer (1r1w) say how soon the app gets
         its settings under load.

Both read am's TotalTime (the system's figure from the intent to the first
frame), so the ratio iolab/plain is what iolab adds inside the window. The
watcher's own CPU time and wakeups per start come from each run's
extra.app_watch.

    sudo bench/app_watch_cost.py [--iolab target/release/iolab] [--rounds 5] [--reps 10]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RIG = os.path.join(HERE, "..", "scripts", "android", "rig.sh")
COMP = "com.example.iolab.rigapp/.Main"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def rig(d, *args, **kw):
    return subprocess.run(["bash", RIG, args[0], d, *args[1:]], check=True, text=True,
                          stdout=subprocess.PIPE, **kw).stdout


def sh(d, script):
    return rig(d, "exec", "/system/bin/sh", "-c", f"cd /data/local/tmp && {script}")


def plain(d, reps):
    out = sh(d, f"for i in $(seq {reps}); do am force-stop com.example.iolab.rigapp; "
                f"echo 3 > /proc/sys/vm/drop_caches; am start -W -S -n {COMP}; sleep 0.3; done")
    return [int(m) for m in re.findall(r"^TotalTime: (\d+)", out, re.M)]


def iolab(d, reps, n):
    """Idle starts (compared with the plain loop) and starts under one
    reader and one writer (how soon the app is set, under load)."""
    db = f"w{n}.db"
    sh(d, f"./iolab-bin startup --am-start {COMP} --in /data/local/tmp/app --schedulers mq-deadline "
          f"--workloads idle,1r1w --load-option size=64M --reps {reps} --target-ioprio be:4 "
          f"--timeout 20 --db {db} >/dev/null 2>&1")
    e = json.loads(sh(d, f"./iolab-bin results --db {db} export 1"))
    runs = [r for r in e["runs"] if r["outcome"] == "ok"]
    return ([r["extra"]["am_start"]["result"]["total_ms"] for r in runs if r["workload"] == "idle"],
            [r["extra"]["app_watch"] for r in runs if r["workload"] == "idle"],
            [(r["workload"], r["extra"]["app_process"]) for r in runs])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iolab", default=os.path.join(HERE, "..", "target", "release", "iolab"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=10)
    a = ap.parse_args()
    d = tempfile.mkdtemp(dir="/var/tmp", prefix="watch-bench.")
    try:
        rig(d, "up")
        rig(d, "push", a.iolab, "/data/local/tmp/iolab-bin")
        sh(d, "mkdir -p app")
        p_all, i_all, watches, apps = [], [], [], []
        for n in range(a.rounds):
            p = plain(d, a.reps)
            i, w, ap_ = iolab(d, a.reps, n)
            log(f"round {n + 1}: plain median {statistics.median(p)} ms, "
                f"iolab median {statistics.median(i)} ms")
            p_all += p
            i_all += i
            watches += w
            apps += ap_
        pm, im = statistics.median(p_all), statistics.median(i_all)
        cpu = statistics.median(w["cpu_us"] for w in watches)
        wake = statistics.median(w["wakeups"] for w in watches)
        ev = statistics.median(w["events"] for w in watches)
        polls = statistics.median(x["polls"] for w, x in apps if w == "idle")
        def lat(workload, key):
            v = sorted(x[key] for w, x in apps if w == workload)
            return {"median": statistics.median(v), "max": v[-1], "n": len(v)}
        print(json.dumps({
            "starts": {"plain": len(p_all), "iolab": len(i_all)},
            "total_ms_median": {"plain": pm, "iolab": im},
            "total_ms_mean": {"plain": statistics.mean(p_all), "iolab": statistics.mean(i_all)},
            "ratio_iolab_over_plain": im / pm,
            "watcher_cpu_us_median": cpu,
            "watcher_wakeups_median": wake,
            "watcher_events_median": ev,
            "watcher_polls_median": polls,
            "set_after_rename_ms": {w: lat(w, "set_after_rename_ms") for w in ("idle", "1r1w")},
            "set_after_fork_ms": {w: lat(w, "set_after_birth_ms") for w in ("idle", "1r1w")},
            "found_by": sorted({x["found_by"] for _, x in apps}),
        }, indent=2))
    finally:
        subprocess.run(["bash", RIG, "down", d], stdout=subprocess.DEVNULL)
        subprocess.run(["rm", "-rf", d])


if __name__ == "__main__":
    main()
