#!/usr/bin/env python3
"""iolab load vs fio: the same job files, run alternately, compared as ratios.

For each device (a zram lab and a loop-device lab, both made by `iolab lab
up`) and each job, fio and `iolab load` run the same fio-style job file
ROUNDS times each, interleaved in ABBA order (fio, iolab | iolab, fio | ...)
so that drift of the machine hits both tools alike. From each run's JSON
(fio's field names in both) it takes IOPS, bandwidth and CPU per I/O:

    CPU per I/O = (usr_cpu + sys_cpu) / 100 * job_runtime / total_ios

(fio's usr_cpu/sys_cpu are percent of one CPU over the job's runtime, from
getrusage of the job's process; iolab's are the same over the worker
thread's measured time, from RUSAGE_THREAD.) Each run is also checked against
the device: the bytes the tool says it moved must match the /proc/diskstats
delta of the lab's device within 5 %, so a run that hit the page cache
instead of the device shows up as a failed check.

Prints a Markdown table and keeps every run's raw JSON, job file and
diskstats delta under bench/results/<timestamp>/. Needs root and fio
(`apt-get install -y fio`). Labs are removed at the end, also on error or
Ctrl-C.

    sudo bench/load_vs_fio.py                     # the full run (~5 min)
    sudo bench/load_vs_fio.py --rounds 1 --runtime 3 --devices zram   # quick
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchlib import Labs, log, run

REPO = Path(__file__).resolve().parent.parent
TOLERANCE = 0.05
MiB = 1 << 20

# One job per file, identical for both tools. Random reads bypass the page
# cache (direct=1); the buffered write is sized (not time based) and ends
# with an fsync, so every byte reaches the device inside the measured time
# of both tools (fio and iolab both count end_fsync in the job's runtime).
# scramble_buffers=0: fio's default (1) stamps the offset and time into
# every 512 bytes of each write buffer; the data becomes slightly
# compressible and zram's LZO then takes ~3x longer per page than on the
# pure random data iolab writes, so the device, not the tool, would differ.
JOBS = {
    "randread-4k-psync-qd1": """\
[randread-4k-psync-qd1]
filename={read_file}
size={read_size}
rw=randread
bs=4k
ioengine=psync
iodepth=1
direct=1
invalidate=1
time_based=1
runtime={runtime}
ramp_time={ramp}
""",
    "randread-4k-uring-qd32": """\
[randread-4k-uring-qd32]
filename={read_file}
size={read_size}
rw=randread
bs=4k
ioengine=io_uring
iodepth=32
direct=1
invalidate=1
time_based=1
runtime={runtime}
ramp_time={ramp}
""",
    "write-1m-buffered": """\
[write-1m-buffered]
filename={write_file}
size={write_size}
rw=write
bs=1m
ioengine=psync
direct=0
invalidate=1
end_fsync=1
scramble_buffers=0
""",
}

# name -> (iolab lab up flags, data file size). Files fit the zram lab's
# 2 GiB twice over with room for the filesystem.
DEVICES = {
    "zram": (["--zram", "--size", "2GiB", "--fs", "ext4"], 768 * MiB),
    "loop": (["--size", "4GiB", "--fs", "ext4"], 1024 * MiB),
}


def diskstat(dev):
    """(bytes read, bytes written) of a block device, from /proc/diskstats
    (fields 6 and 10 are sectors of 512 bytes: Documentation/admin-guide/iostats.rst)."""
    name = os.path.basename(dev)
    with open("/proc/diskstats") as f:
        for line in f:
            p = line.split()
            if p[2] == name:
                return int(p[5]) * 512, int(p[9]) * 512
    raise RuntimeError(f"{name} not in /proc/diskstats")


def fill(path, size):
    """Incompressible data (zram stores what it is given), written once and
    synced, so both tools read and overwrite the same blocks."""
    if path.exists() and path.stat().st_size == size:
        return
    run(["dd", "if=/dev/urandom", f"of={path}", "bs=1M", f"count={size // MiB}",
         "conv=fsync", "status=none"])


# The tool running now, stopped by stop_current() if the run is interrupted.
CURRENT = None


def stop_current():
    """SIGINT (both tools stop cleanly on it), then SIGKILL after 10 s; by
    pid, never by name."""
    p = CURRENT
    if p is None or p.poll() is not None:
        return
    p.send_signal(signal.SIGINT)
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def run_tool(tool, iolab, jobfile, out_json, dev):
    global CURRENT
    cmd = (["fio", "--output-format=json", f"--output={out_json}", str(jobfile)]
           if tool == "fio" else [iolab, "load", str(jobfile), "--json"])
    os.sync()  # nothing of earlier runs may be written back inside this one
    before = diskstat(dev)
    t0 = time.monotonic()
    with open(out_json if tool == "iolab" else os.devnull, "w") as out:
        p = CURRENT = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, text=True)
        _, status, ru = os.wait4(p.pid, 0)
        CURRENT = None
        p.returncode = os.waitstatus_to_exitcode(status)
        err = p.stderr.read()
        p.stderr.close()
    wall = time.monotonic() - t0
    after = diskstat(dev)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {err.strip()}")
    doc = json.loads(Path(out_json).read_text())
    return doc, (after[0] - before[0], after[1] - before[1]), ru.ru_utime + ru.ru_stime, wall


def metrics(doc, dev_delta, proc_cpu, ramp, runtime):
    j = doc["jobs"][0]
    if j.get("error"):
        raise RuntimeError(f"job {j['jobname']} failed: error {j['error']} "
                           f"{j.get('error_message', '')}")
    rd, wr = j["read"], j["write"]
    ios = rd["total_ios"] + wr["total_ios"]
    io_bytes = rd["io_bytes"] + wr["io_bytes"]
    cpu_s = (j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] / 1000
    # Reads during a ramp reach the device but are not counted by either
    # tool: scale what was counted up to the whole time the job ran.
    timed = ramp > 0 and rd["io_bytes"] > 0
    expect = io_bytes * (ramp + runtime) / runtime if timed else io_bytes
    dev_bytes = dev_delta[0] if rd["io_bytes"] else dev_delta[1]
    return {
        "iops": rd["iops"] + wr["iops"],
        "bw_bytes": rd["bw_bytes"] + wr["bw_bytes"],
        "ios": ios,
        "io_bytes": io_bytes,
        "usr_cpu": j["usr_cpu"],
        "sys_cpu": j["sys_cpu"],
        "job_runtime_ms": j["job_runtime"],
        "cpu_us_per_io": cpu_s / ios * 1e6 if ios else float("nan"),
        "proc_cpu_us_per_io": proc_cpu / ios * 1e6 if ios else float("nan"),
        "dev_bytes": dev_bytes,
        "dev_ratio": dev_bytes / expect if expect else float("nan"),
    }


def med(runs, key):
    return statistics.median(r[key] for r in runs)


def ratio(f, i, key):
    """Median of the rounds' iolab/fio ratios: each round's two runs ran
    back to back, so a slow phase of the machine hits both of a pair."""
    return statistics.median(b[key] / a[key] for a, b in zip(f, i))


def spread(runs, key):
    """(max - min) / median, the rounds' spread in percent."""
    v = [r[key] for r in runs]
    m = statistics.median(v)
    return 100 * (max(v) - min(v)) / m if m else 0.0


def table(results, rounds):
    head = ("| device | job | fio IOPS | iolab IOPS | ratio | fio MiB/s | iolab MiB/s | ratio "
            "| fio CPU µs/IO | iolab CPU µs/IO | ratio | device/reported bytes fio, iolab |")
    lines = [head, "|" + "---|" * 12]
    for (dev, job), by_tool in results.items():
        f, i = by_tool["fio"], by_tool["iolab"]
        if not f or not i:
            continue
        ok = all(abs(r["dev_ratio"] - 1) <= TOLERANCE for r in f + i)
        lines.append(
            f"| {dev} | {job} "
            f"| {med(f, 'iops'):,.0f} | {med(i, 'iops'):,.0f} | {ratio(f, i, 'iops'):.2f} "
            f"| {med(f, 'bw_bytes') / MiB:,.1f} | {med(i, 'bw_bytes') / MiB:,.1f} "
            f"| {ratio(f, i, 'bw_bytes'):.2f} "
            f"| {med(f, 'cpu_us_per_io'):.2f} | {med(i, 'cpu_us_per_io'):.2f} "
            f"| {ratio(f, i, 'cpu_us_per_io'):.2f} "
            f"| {min(r['dev_ratio'] for r in f):.3f}–{max(r['dev_ratio'] for r in f):.3f}, "
            f"{min(r['dev_ratio'] for r in i):.3f}–{max(r['dev_ratio'] for r in i):.3f}"
            f"{'' if ok else ' **FAIL**'} |")
    lines.append("")
    lines.append(f"Values: medians of {rounds} rounds per tool. Ratio: median over the "
                 "rounds of iolab / fio, each round's two runs back to back (ABBA order); "
                 "> 1 is better for IOPS and MiB/s, < 1 is better for CPU per I/O.")
    lines.append("")
    lines.append("Cross-check, whole process (wait4 rusage: start-up, parsing, every "
                 "thread) CPU µs per I/O, and the rounds' spread ((max-min)/median):")
    lines.append("")
    lines.append("| device | job | fio proc CPU µs/IO | iolab proc CPU µs/IO | ratio "
                 "| fio IOPS spread | iolab IOPS spread |")
    lines.append("|" + "---|" * 7)
    for (dev, job), by_tool in results.items():
        f, i = by_tool["fio"], by_tool["iolab"]
        if not f or not i:
            continue
        lines.append(
            f"| {dev} | {job} | {med(f, 'proc_cpu_us_per_io'):.2f} "
            f"| {med(i, 'proc_cpu_us_per_io'):.2f} "
            f"| {ratio(f, i, 'proc_cpu_us_per_io'):.2f} "
            f"| {spread(f, 'iops'):.1f} % | {spread(i, 'iops'):.1f} % |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=6,
                    help="runs per tool and job (default 6; even keeps ABBA balanced)")
    ap.add_argument("--runtime", type=int, default=4,
                    help="seconds per time-based run (default 4)")
    ap.add_argument("--ramp", type=int, default=0,
                    help="ramp_time seconds before measuring (default 0: nothing to warm "
                    "with O_DIRECT on zram/loop, and the diskstats check stays exact)")
    ap.add_argument("--devices", default="zram,loop", help="zram,loop (default both)")
    ap.add_argument("--jobs", default=",".join(JOBS), help=f"subset of {','.join(JOBS)}")
    ap.add_argument("--results", type=Path, default=REPO / "bench" / "results",
                    help="where the run's directory goes (default bench/results)")
    ap.add_argument("--no-build", action="store_true", help="use the existing release binary")
    a = ap.parse_args()
    devices = [d for d in a.devices.split(",") if d]
    jobs = [j for j in a.jobs.split(",") if j]
    for d in devices:
        if d not in DEVICES:
            ap.error(f"--devices: unknown {d!r}; expected some of {','.join(DEVICES)}")
    for j in jobs:
        if j not in JOBS:
            ap.error(f"--jobs: unknown {j!r}; expected some of {','.join(JOBS)}")
    if os.geteuid() != 0:
        sys.exit("error: run as root (labs are loop/zram devices and mounts)")
    if not shutil.which("fio"):
        sys.exit("error: fio not found: apt-get install -y fio")

    if not a.no_build:
        log("building: cargo build --release -p iolab")
        run(["cargo", "build", "--release", "-p", "iolab"], cwd=REPO)
    iolab = str(REPO / "target" / "release" / "iolab")
    out_dir = a.results / time.strftime("%Y%m%d-%H%M%S")
    out_dir.mkdir(parents=True, exist_ok=True)
    fio_version = run(["fio", "--version"], stdout=subprocess.PIPE).stdout.strip()

    # SIGTERM/SIGHUP unwind like Ctrl-C, through the finally below.
    def on_signal(signum, _frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    labs = Labs(iolab)
    interrupted = False
    results = {}
    rows = []
    try:
        for dev_name in devices:
            flags, fsize = DEVICES[dev_name]
            lab = labs.up(f"bench-{dev_name}", flags)
            dev, mnt = lab["device"], Path(lab["mountpoint"])
            log(f"{dev_name}: {dev} mounted on {mnt}")
            files = {"read_file": mnt / "read.dat", "write_file": mnt / "write.dat"}
            for p in files.values():
                fill(p, fsize)
            for job in jobs:
                text = JOBS[job].format(**files, read_size=fsize, write_size=fsize,
                                        runtime=a.runtime, ramp=a.ramp)
                jobfile = out_dir / f"{dev_name}-{job}.fio"
                jobfile.write_text(text)
                by_tool = results.setdefault((dev_name, job), {"fio": [], "iolab": []})
                for rnd in range(a.rounds):
                    order = ("fio", "iolab") if rnd % 2 == 0 else ("iolab", "fio")
                    for tool in order:
                        out_json = out_dir / f"{dev_name}-{job}-{rnd}-{tool}.json"
                        doc, delta, proc_cpu, wall = run_tool(tool, iolab, jobfile, out_json, dev)
                        m = metrics(doc, delta, proc_cpu, a.ramp, a.runtime)
                        by_tool[tool].append(m)
                        rows.append({"device": dev_name, "dev": dev, "job": job, "round": rnd,
                                     "tool": tool, "wall_s": wall,
                                     "dev_read_bytes": delta[0], "dev_write_bytes": delta[1],
                                     **m})
                        log(f"  {dev_name} {job} round {rnd} {tool:5}: "
                            f"{m['iops']:>10,.0f} IOPS {m['bw_bytes'] / MiB:>8,.1f} MiB/s "
                            f"{m['cpu_us_per_io']:6.2f} CPU µs/IO  device/reported "
                            f"{m['dev_ratio']:.3f}")
            labs.close()
    except KeyboardInterrupt:
        log("interrupted: removing labs, printing what was measured")
        interrupted = True
    finally:
        stop_current()
        labs.close()
        (out_dir / "runs.json").write_text(json.dumps(rows, indent=1))

    cmd = "bench/load_vs_fio.py " + " ".join(sys.argv[1:])
    md = table(results, a.rounds)
    header = (f"{fio_version} vs {run([iolab, '--version'], stdout=subprocess.PIPE).stdout.strip()}"
              f"; runtime {a.runtime} s, ramp {a.ramp} s; command: `{cmd.strip()}`\n\n")
    (out_dir / "table.md").write_text(header + md + "\n")
    print(header + md)
    log(f"raw JSON, job files and runs.json in {out_dir}")
    if interrupted:
        return 130
    bad = [r for r in rows if abs(r["dev_ratio"] - 1) > TOLERANCE]
    if bad:
        log(f"warning: {len(bad)} run(s) moved more or less on the device than reported "
            f"(> {TOLERANCE:.0%} off): see dev_ratio in runs.json")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
