#!/usr/bin/env python3
"""Same libaio job, iolab and fio, side by side (ABBA), on one file with
O_DIRECT: IOPS and CPU per I/O (usr+sys from each tool's JSON), and bytes
checked against the tool's own total (io_bytes) and /proc/diskstats.

  bench/libaio_vs_fio.py --file /var/tmp/abba.dat --dev vda [--secs 3] [--rounds 2]

Prints a table and the ratios iolab/fio (IOPS; CPU per I/O)."""

import argparse, json, subprocess, statistics


def diskstats(dev):
    for l in open("/proc/diskstats"):
        f = l.split()
        if f[2] == dev:
            return int(f[5]) * 512  # sectors read
    return 0


def run(tool, a, qd):
    common = dict(name="abba", filename=a.file, rw="randread", bs="4k", ioengine="libaio",
                  iodepth=str(qd), direct="1", size=a.size, runtime=str(a.secs))
    if tool == "fio":
        cmd = ["fio", "--output-format=json"] + [f"--{k}={v}" for k, v in common.items()] + ["--time_based"]
    else:
        cmd = [a.iolab, "load", "--json"] + [f"--{k}={v}" for k, v in common.items()] + ["--time_based"]
    before = diskstats(a.dev)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    moved = diskstats(a.dev) - before
    j = json.loads(out[out.index("{"):])["jobs"][0]
    r = j["read"]
    cpu_s = (j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] / 1000
    return r["iops"], cpu_s / max(r["total_ios"], 1) * 1e6, r["io_bytes"], moved


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--file", default="/var/tmp/abba.dat")
    ap.add_argument("--dev", default="vda")
    ap.add_argument("--size", default="1g")
    ap.add_argument("--secs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--iolab", default="target/release/iolab")
    a = ap.parse_args()
    subprocess.run(["fio", "--name=lay", f"--filename={a.file}", f"--size={a.size}", "--rw=write",
                    "--bs=1m", "--output-format=terse"], capture_output=True, check=True)
    print(f"{'QD':>3} {'tool':6} {'IOPS':>9} {'CPU us/IO':>10} {'bytes':>12} {'diskstats':>12}")
    for qd in (1, 32):
        res = {"iolab": [], "fio": []}
        for _ in range(a.rounds):
            for tool in ("iolab", "fio", "fio", "iolab"):  # ABBA
                iops, cpu, b, moved = run(tool, a, qd)
                res[tool].append((iops, cpu))
                print(f"{qd:>3} {tool:6} {iops:>9.0f} {cpu:>10.2f} {b:>12} {moved:>12}")
        mi = {t: statistics.median(x[0] for x in v) for t, v in res.items()}
        mc = {t: statistics.median(x[1] for x in v) for t, v in res.items()}
        print(f"QD{qd}: IOPS iolab/fio = {mi['iolab'] / mi['fio']:.2f}x, "
              f"CPU per I/O iolab/fio = {mc['iolab'] / mc['fio']:.2f}x (medians)")


if __name__ == "__main__":
    main()
