#!/usr/bin/env python3
"""Same libaio job, iolab and fio, side by side (ABBA), with O_DIRECT:
IOPS and CPU per I/O (usr+sys from each tool's JSON), and bytes checked
against the tool's own total (io_bytes) and /proc/diskstats of the device
under the file.

  bench/libaio_vs_fio.py [--on zram,loop,file] [--secs 3] [--rounds 2]

  zram  a zram lab (iolab lab up --zram, ext4): RAM speed, the engines'
        own cost dominates
  loop  a loop lab (iolab lab up, ext4 on a loop device over /var/tmp,
        unthrottled): the default lab's stack
  file  a file on the host filesystem (--file, --dev)

Prints a table and the ratios iolab/fio (IOPS; CPU per I/O) per place and
queue depth (medians over the rounds)."""

import argparse, json, os, statistics, subprocess


def diskstats(dev):
    for l in open("/proc/diskstats"):
        f = l.split()
        if f[2] == dev:
            return int(f[5]) * 512  # sectors read
    return 0


def run(tool, a, path, dev, qd):
    common = dict(name="abba", filename=path, rw="randread", bs="4k", ioengine="libaio",
                  iodepth=str(qd), direct="1", size=a.size, runtime=str(a.secs))
    if tool == "fio":
        cmd = ["fio", "--output-format=json"] + [f"--{k}={v}" for k, v in common.items()] + ["--time_based"]
    else:
        cmd = [a.iolab, "load", "--json"] + [f"--{k}={v}" for k, v in common.items()] + ["--time_based"]
    before = diskstats(dev)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    moved = diskstats(dev) - before
    j = json.loads(out[out.index("{"):])["jobs"][0]
    r = j["read"]
    cpu_s = (j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] / 1000
    return r["iops"], cpu_s / max(r["total_ios"], 1) * 1e6, r["io_bytes"], moved


def lab_up(a, name, zram):
    args = [a.iolab, "lab", "up", "--name", name, "--size", a.lab_size, "--json"]
    if zram:
        args.append("--zram")
    st = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
    return st


def place(a, kind):
    """(file path, diskstats device, lab name or None)"""
    if kind == "file":
        return a.file, a.dev, None
    name = f"abba-{kind}-{os.getpid()}"
    st = lab_up(a, name, kind == "zram")
    return os.path.join(st["mountpoint"], "abba.dat"), os.path.basename(st["device"]), name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--on", default="zram,loop")
    ap.add_argument("--file", default="/var/tmp/abba.dat")
    ap.add_argument("--dev", default="vda")
    ap.add_argument("--size", default="1g")
    ap.add_argument("--lab-size", default="1536MiB")
    ap.add_argument("--secs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--iolab", default="target/release/iolab")
    a = ap.parse_args()
    print(f"{'place':5} {'QD':>3} {'tool':6} {'IOPS':>9} {'CPU us/IO':>10} {'bytes':>12} {'diskstats':>12}")
    summary = []
    for kind in a.on.split(","):
        path, dev, lab = place(a, kind)
        try:
            subprocess.run(["fio", "--name=lay", f"--filename={path}", f"--size={a.size}", "--rw=write",
                            "--bs=1m", "--output-format=terse"], capture_output=True, check=True)
            for qd in (1, 32):
                res = {"iolab": [], "fio": []}
                for _ in range(a.rounds):
                    for tool in ("iolab", "fio", "fio", "iolab"):  # ABBA
                        iops, cpu, b, moved = run(tool, a, path, dev, qd)
                        res[tool].append((iops, cpu))
                        print(f"{kind:5} {qd:>3} {tool:6} {iops:>9.0f} {cpu:>10.2f} {b:>12} {moved:>12}")
                mi = {t: statistics.median(x[0] for x in v) for t, v in res.items()}
                mc = {t: statistics.median(x[1] for x in v) for t, v in res.items()}
                summary.append(f"{kind} QD{qd}: IOPS iolab/fio = {mi['iolab'] / mi['fio']:.2f}x, "
                               f"CPU per I/O iolab/fio = {mc['iolab'] / mc['fio']:.2f}x (medians)")
        finally:
            if lab:
                subprocess.run([a.iolab, "lab", "down", lab], capture_output=True)
            elif os.path.exists(path) and path == a.file:
                os.remove(path)
    print("\n".join(summary))


if __name__ == "__main__":
    main()
