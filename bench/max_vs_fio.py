#!/usr/bin/env python3
"""`iolab sweep --max` points against fio doing the same work (ABBA):
the same job -- N psync threads of 4 KiB O_DIRECT reads on the raw device,
each thread on its own slice, norandommap, time-based -- on one loop
device over a tmpfs file, per scheduler. Ratios iolab/fio of IOPS and of
the job threads' CPU per I/O (usr+sys from each tool's JSON), and the
device's own count of I/Os (/proc/diskstats) against each tool's.

iolab's clones are threads of one process, as seed 003's IOSpeed spread
its load over threads; fio's are processes unless thread=1. The same work
is therefore fio with --thread ("fio-t"); fio's default ("fio-p") is
measured beside it, because BFQ treats the two differently.

  bench/max_vs_fio.py [--schedulers none,bfq] [--threads 1,4] [--secs 2] [--rounds 2]

One lab per scheduler, made with `iolab lab up --scheduler S` and removed
with `iolab lab down`: the scheduler is set and put back through iolab's
guard (a loop device outlives its detach, and keeps its scheduler)."""

import argparse, json, os, statistics, subprocess


def disk_ios(dev):
    for l in open("/proc/diskstats"):
        f = l.split()
        if f[2] == dev:
            return int(f[3]) + int(f[4])  # reads + reads merged
    return 0


def run(tool, a, dev, size, rw, n):
    thread = tool == "fio-t"
    sl = size // n // 4096 * 4096
    opts = dict(name="pt", filename=f"/dev/{dev}", rw=rw, bs="4k", direct="1", ioengine="psync",
                numjobs=str(n), size=str(sl), offset_increment=str(sl), norandommap="1",
                runtime=str(a.secs), group_reporting="1")
    flags = [f"--{k}={v}" for k, v in opts.items()] + ["--time_based"]
    if thread:
        flags.append("--thread")
    cmd = ([a.iolab, "load", "--json"] if tool == "iolab" else ["fio", "--output-format=json"]) + flags
    before = disk_ios(dev)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    seen = disk_ios(dev) - before
    j = json.loads(out[out.index("{"):])["jobs"][0]
    r = j["read"]
    cpu_s = (j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] / 1000
    return r["iops"], cpu_s / max(r["total_ios"], 1) * 1e6, r["total_ios"], seen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--schedulers", default="none,bfq")
    ap.add_argument("--threads", default="1,4")
    ap.add_argument("--rw", default="randread")
    ap.add_argument("--secs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--iolab", default="target/release/iolab")
    a = ap.parse_args()
    summary = []
    print(f"{'sched':12} {'N':>2} {'tool':6} {'IOPS':>9} {'CPU us/IO':>10} {'ios':>9} {'diskstats':>9}")
    for s in a.schedulers.split(","):
        name = f"maxb-{os.getpid()}-{s}"
        st = json.loads(subprocess.run([a.iolab, "lab", "up", "--name", name, "--size", "1GiB", "--fs", "none",
                                        "--dir", "/dev/shm", "--scheduler", s, "--json"],
                                       capture_output=True, text=True, check=True).stdout)
        dev = os.path.basename(st["device"])
        size = st["size_bytes"]
        try:
            for n in map(int, a.threads.split(",")):
                res = {"iolab": [], "fio-t": [], "fio-p": []}
                for _ in range(a.rounds):
                    for tool in ("iolab", "fio-t", "fio-p", "fio-p", "fio-t", "iolab"):
                        iops, cpu, ios, seen = run(tool, a, dev, size, a.rw, n)
                        res[tool].append((iops, cpu))
                        print(f"{s:12} {n:>2} {tool:6} {iops:>9.0f} {cpu:>10.2f} {ios:>9} {seen:>9}")
                mi = {t: statistics.median(x[0] for x in v) for t, v in res.items()}
                mc = {t: statistics.median(x[1] for x in v) for t, v in res.items()}
                summary.append(f"{s} {a.rw} {n} threads: IOPS iolab/fio-t = {mi['iolab'] / mi['fio-t']:.2f}x "
                               f"({mi['iolab']:.0f} vs {mi['fio-t']:.0f}), CPU per I/O iolab/fio-t = "
                               f"{mc['iolab'] / mc['fio-t']:.2f}x; fio-p {mi['fio-p']:.0f} IOPS "
                               f"({mi['iolab'] / mi['fio-p']:.2f}x)")
        finally:
            subprocess.run([a.iolab, "lab", "down", name], capture_output=True)
    print("\n".join(summary))


if __name__ == "__main__":
    main()
