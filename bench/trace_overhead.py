#!/usr/bin/env python3
"""What tracing every block request costs: IOPS of a 4 KiB random-read load
with no tracer, with `iolab trace bio`, with bpftrace and with perf record,
all on the same tracepoints, compared as ratios to the untraced runs.

For each device (a zram lab and a loop-device lab, both raw devices made by
`iolab lab up --fs none`, filled once with incompressible data) the load is
`iolab load --filename DEV --rw randread --bs 4k --direct` (psync at QD 1 on
zram: the highest IOPS this machine reaches; io_uring at QD 32 on the loop
device). Each round runs every mode once, in an order that rotates and
reverses from round to round (ABBA-like), so drift of the machine hits all
modes alike:

- off: no tracer;
- iolab-bpf: `iolab trace bio -d DEV --hist --json --tracer bpf`
  (histograms counted in the kernel by iolab's BPF programs: nothing
  crosses to user space per request);
- iolab-bpf-raw, iolab-bpf-snoop-raw: the same two with
  IOLAB_BPF_ATTACH=raw: iolab's programs on raw tracepoints (fields read
  with helper calls) instead of tp_btf (plain loads), the rung below;
- iolab: `iolab trace bio -d DEV --hist --json --tracer tracefs` (every
  request's events read, kept in memory, histograms at the end);
- iolab-bpf-snoop: `iolab trace bio -d DEV --tracer bpf`, one biosnoop
  line per request to a file, each request's record from iolab's BPF
  programs through a BPF ring buffer (owner, times, flags);
- iolab-snoop: `iolab trace bio -d DEV`, one biosnoop line per request to a
  file, from iolab's tracefs instance;
- bpftrace: a biosnoop-equivalent script on the same tracepoints
  (block_io_start/block_rq_issue/block_rq_complete, or block_bio_queue/
  block_bio_complete on zram), matching by (dev, sector) in BPF maps and
  printing one line per request to a file;
- bpftrace-hist: biolatency's logic as a bpftrace script on the same
  tracepoints, `hist()` aggregated in the kernel (bcc's biolatency itself
  cannot run on a kernel without its headers, as here);
- perf: `perf record -a` of the same tracepoints with the same dev filter,
  to a file, 32 MiB buffer per CPU (iolab's size);
- floor-empty, floor-clock: not a tool but the floor of any BPF latency
  collector here (bench/bpf_floor/floor.bpf.c, compiled with clang-14 at
  the start, loaded by bench/bpf_floor/load.py with libbpf): a tp_btf
  program on each of the two tracepoints a latency needs (bio queue and
  completion on zram, request issue and completion on loop) that does
  nothing, or only reads the clock and stores it per CPU. What iolab-bpf
  costs beyond floor-clock is iolab's own work; what floor-empty costs is
  the kernel's, which no collector on tracepoints avoids.

The tracer starts 2 s before the load and gets SIGINT after it. Reported
per mode: IOPS (median over rounds) and the ratio to `off` (median over
rounds of the within-round ratio); the load thread's CPU per I/O (where the
kernel's tracepoint cost lands; unlike IOPS it does not depend on what else
the machine runs) and its ratio to `off`; the tracer process's own CPU per
I/O (wait4); events lost as each tool reports them (iolab's lost_events,
bpftrace's "Lost N events", perf's LOST records); requests captured / I/Os
the load did.

Prints a Markdown table and keeps every run's load JSON, tracer stderr and
iolab's histogram JSON under bench/results/trace-<timestamp>/ (per-request
outputs are counted, then deleted: they run to hundreds of MB). Needs root, bpftrace and perf
(`apt-get install -y bpftrace linux-perf`). Labs are removed at the end,
also on error or Ctrl-C.

    sudo bench/trace_overhead.py                       # full run (~6 min)
    sudo bench/trace_overhead.py --rounds 2 --runtime 3 --devices zram   # quick
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchlib import Labs, log, run

REPO = Path(__file__).resolve().parent.parent
MiB = 1 << 20
MODES = ["off", "iolab-bpf", "iolab-bpf-raw", "iolab", "iolab-bpf-snoop",
         "iolab-bpf-snoop-raw", "iolab-snoop", "bpftrace-hist", "bpftrace", "perf",
         "floor-empty", "floor-clock"]
FLOOR = REPO / "bench" / "bpf_floor"
# Run unless --modes names them: the floor needs clang-14 and libbpf.
DEFAULT_MODES = [m for m in MODES if not m.startswith("floor-")]

# name -> (lab flags, load flags, tracepoints). zram has no request queue:
# only bio events describe its I/O.
DEVICES = {
    "zram": (["--zram", "--size", "1GiB", "--fs", "none"],
             ["--ioengine", "psync", "--iodepth", "1"],
             ["block_bio_queue", "block_bio_complete"]),
    "loop": (["--size", "2GiB", "--fs", "none"],
             ["--ioengine", "io_uring", "--iodepth", "32"],
             ["block_io_start", "block_rq_insert", "block_rq_issue", "block_rq_complete"]),
}
DATA = 512 * MiB  # the part of each device the load reads, filled once

# biosnoop's logic on the tracepoints iolab reads: start → (issue) →
# complete, keyed by (dev, sector), one printf per request.
BPF_BIO = r"""
tracepoint:block:block_bio_queue /args->dev == $1/ {
  @start[args->dev, args->sector] = nsecs;
  @pid[args->dev, args->sector] = pid;
  @comm[args->dev, args->sector] = comm;
}
tracepoint:block:block_bio_complete /@start[args->dev, args->sector]/ {
  $k0 = args->dev; $k1 = args->sector;
  printf("%-11u %-14s %-7d %-7u %-10u %-7u %7u\n", nsecs / 1000, @comm[$k0, $k1],
         @pid[$k0, $k1], $k0, $k1, args->nr_sector * 512, (nsecs - @start[$k0, $k1]) / 1000);
  delete(@start[$k0, $k1]); delete(@pid[$k0, $k1]); delete(@comm[$k0, $k1]);
}
END { clear(@start); clear(@pid); clear(@comm); }
"""

BPF_RQ = r"""
tracepoint:block:block_io_start /args->dev == $1/ {
  @start[args->dev, args->sector] = nsecs;
  @pid[args->dev, args->sector] = pid;
  @comm[args->dev, args->sector] = comm;
}
tracepoint:block:block_rq_issue /args->dev == $1/ {
  @issue[args->dev, args->sector] = nsecs;
}
tracepoint:block:block_rq_complete /@issue[args->dev, args->sector]/ {
  $k0 = args->dev; $k1 = args->sector;
  $s = @start[$k0, $k1]; $i = @issue[$k0, $k1];
  printf("%-11u %-14s %-7d %-7u %-10u %-7u %7u %7u\n", nsecs / 1000, @comm[$k0, $k1],
         @pid[$k0, $k1], $k0, $k1, args->nr_sector * 512,
         $s ? ($i - $s) / 1000 : 0, (nsecs - $i) / 1000);
  delete(@start[$k0, $k1]); delete(@issue[$k0, $k1]);
  delete(@pid[$k0, $k1]); delete(@comm[$k0, $k1]);
}
END { clear(@start); clear(@issue); clear(@pid); clear(@comm); }
"""


# biolatency on the same tracepoints, aggregated in the kernel by hist().
HIST_BIO = r"""
tracepoint:block:block_bio_queue /args->dev == $1/ { @start[args->dev, args->sector] = nsecs; }
tracepoint:block:block_bio_complete /@start[args->dev, args->sector]/ {
  @usecs = hist((nsecs - @start[args->dev, args->sector]) / 1000);
  delete(@start[args->dev, args->sector]);
}
END { clear(@start); }
"""

HIST_RQ = r"""
tracepoint:block:block_rq_issue /args->dev == $1/ { @start[args->dev, args->sector] = nsecs; }
tracepoint:block:block_rq_complete /@start[args->dev, args->sector]/ {
  @usecs = hist((nsecs - @start[args->dev, args->sector]) / 1000);
  delete(@start[args->dev, args->sector]);
}
END { clear(@start); }
"""


def kernel_dev(dev):
    """The kernel's internal dev_t of a device node (major << 20 | minor),
    what the tracepoints' `dev` field holds."""
    rdev = os.stat(dev).st_rdev
    return (os.major(rdev) << 20) | os.minor(rdev)


# Processes running now, stopped by stop_all() if the run is interrupted.
LIVE = []


def stop(p):
    """SIGINT (every tool ends cleanly on it), by pid, never by name; then
    reaps it with wait4 for its CPU time (seconds). The pid is still ours:
    nothing has reaped the child yet."""
    os.kill(p.pid, signal.SIGINT)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return ru.ru_utime + ru.ru_stime


def stop_all():
    for p in LIVE:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    LIVE.clear()


def start_tracer(mode, iolab, dev, devno, events, out_dir, tag):
    out = out_dir / f"{tag}.out"
    err = out_dir / f"{tag}.err"
    if mode == "off":
        return None, out, err
    env = dict(os.environ, BPFTRACE_PERF_RB_PAGES="8192")  # 32 MiB, like iolab's
    if mode.endswith("-raw"):
        env["IOLAB_BPF_ATTACH"] = "raw"
        mode = mode[: -len("-raw")]
    if mode == "iolab-bpf":
        cmd = [iolab, "trace", "bio", "-d", dev, "--hist", "--json", "--tracer", "bpf"]
    elif mode == "iolab":
        cmd = [iolab, "trace", "bio", "-d", dev, "--hist", "--json", "--tracer", "tracefs"]
    elif mode == "iolab-snoop":
        cmd = [iolab, "trace", "bio", "-d", dev, "--tracer", "tracefs"]
    elif mode == "iolab-bpf-snoop":
        cmd = [iolab, "trace", "bio", "-d", dev, "--tracer", "bpf"]
    elif mode == "bpftrace-hist":
        script = out_dir / ("hist-bio.bt" if events[0] == "block_bio_queue" else "hist-rq.bt")
        script.write_text(HIST_BIO if events[0] == "block_bio_queue" else HIST_RQ)
        cmd = ["bpftrace", str(script), str(devno)]
    elif mode == "bpftrace":
        script = out_dir / ("bio.bt" if events[0] == "block_bio_queue" else "rq.bt")
        script.write_text(BPF_BIO if events[0] == "block_bio_queue" else BPF_RQ)
        cmd = ["bpftrace", str(script), str(devno)]
    elif mode.startswith("floor-"):
        kind = "bio" if events[0] == "block_bio_queue" else "rq"
        cmd = [sys.executable, str(FLOOR / "load.py"),
               str(out_dir / f"floor-{kind}-{mode.removeprefix('floor-')}.o")]
    elif mode == "perf":
        cmd = ["perf", "record", "-a", "-m", "8192", "-o", str(out_dir / f"{tag}.data")]
        for e in events:
            cmd += ["-e", f"block:{e}", "--filter", f"dev == {devno}"]
    else:
        raise ValueError(mode)
    with open(out, "w") as o, open(err, "w") as e:
        p = subprocess.Popen(cmd, stdout=o, stderr=e, env=env, start_new_session=True)
    LIVE.append(p)
    time.sleep(2)  # attach/enable before the load starts
    if os.waitpid(p.pid, os.WNOHANG) != (0, 0):
        LIVE.remove(p)
        raise RuntimeError(f"{' '.join(cmd)} exited early: {err.read_text().strip()}")
    return p, out, err


def tracer_result(mode, out, err, out_dir, tag):
    """(lost events, requests captured) as the tool reports them."""
    if mode == "off":
        return 0, 0
    text = err.read_text()
    if mode.startswith("floor-"):
        if "attached 2 programs" not in text:
            raise RuntimeError(f"{tag}: the floor programs did not attach: {text.strip()}")
        return 0, 0  # they count nothing
    want = "raw_tracepoint" if mode.endswith("-raw") else "tp_btf"
    mode = mode.removesuffix("-raw")
    if mode in ("iolab", "iolab-bpf"):
        doc = json.loads(out.read_text())
        # The rung measured is the rung asked for, not a fallback.
        if mode == "iolab-bpf" and not doc.get("attach", "").startswith(want):
            raise RuntimeError(f"{tag}: attached as {doc.get('attach')!r}, not {want}")
        return doc["lost_events"], doc["requests"]
    if mode == "bpftrace-hist":
        lost = sum(int(n) for n in re.findall(r"Lost (\d+) events", text))
        counted = sum(int(m) for m in re.findall(r"^[\[(][^\]]*[\])]\s+(\d+)\s*\|",
                                                  out.read_text(), re.M))
        return lost, counted
    if mode in ("iolab-snoop", "iolab-bpf-snoop"):
        # The rung measured is the rung asked for, not a fallback.
        if mode == "iolab-bpf-snoop" and f"(tracer bpf, {want})" not in text:
            raise RuntimeError(f"{tag}: not attached as {want}: {text.strip()[-200:]}")
        m = re.search(r"(\d+) requests in .* from \d+ events, (\d+) lost", text)
        out.unlink()  # a line per request: hundreds of MB; the counts are kept
        return int(m.group(2)), int(m.group(1))
    if mode == "bpftrace":
        lost = sum(int(n) for n in re.findall(r"Lost (\d+) events", text))
        with open(out) as f:
            lines = sum(1 for ln in f if ln[:1].isdigit())
        out.unlink()
        return lost, lines
    if mode == "perf":
        data = out_dir / f"{tag}.data"
        stats = run(["perf", "report", "--stats", "-i", str(data)],
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT).stdout
        lost = sum(int(n) for n in re.findall(r"LOST(?:_SAMPLES)? events:\s+(\d+)", stats))
        samples = run(["perf", "script", "-i", str(data), "-F", "event"],
                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
        completes = sum(1 for ln in samples.splitlines()
                        if "complete" in ln)
        data.unlink()  # hundreds of MB; the counts are kept in runs.json
        return lost, completes
    raise ValueError(mode)


def one_run(mode, iolab, dev, devno, dev_kind, runtime, out_dir, tag, numjobs=1):
    _, load_flags, events = DEVICES[dev_kind]
    load_flags = [*load_flags, "--numjobs", str(numjobs)]
    tracer, out, err = start_tracer(mode, iolab, dev, devno, events, out_dir, tag)
    load_cmd = [iolab, "load", "--filename", dev, "--rw", "randread", "--bs", "4k",
                "--direct", "--size", str(DATA), "--runtime", str(runtime),
                "--time-based", "--json", *load_flags]
    p = subprocess.run(load_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    (out_dir / f"{tag}.load.json").write_text(p.stdout)
    tracer_cpu = stop(tracer) if tracer else 0.0
    if tracer:
        LIVE.remove(tracer)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(load_cmd)} failed: {p.stderr.strip()}")
    jobs = json.loads(p.stdout)["jobs"]
    lost, captured = tracer_result(mode, out, err, out_dir, tag)
    # numjobs threads: their I/Os and CPU summed.
    rd = {"iops": sum(j["read"]["iops"] for j in jobs),
          "total_ios": sum(j["read"]["total_ios"] for j in jobs)}
    runtime_s = max(j["job_runtime"] for j in jobs) / 1000
    load_cpu_s = sum((j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] / 1000
                     for j in jobs)
    return {
        "iops": rd["iops"],
        "ios": rd["total_ios"],
        # The load thread's CPU per I/O (getrusage RUSAGE_THREAD): where the
        # kernel's tracepoint cost lands, whatever else the machine runs.
        "load_cpu_us_per_io": load_cpu_s / rd["total_ios"] * 1e6,
        "tracer_cpu_us_per_io": tracer_cpu / rd["total_ios"] * 1e6,
        "lost": lost,
        "captured": captured,
        "captured_ratio": captured / rd["total_ios"] if mode != "off" else float("nan"),
        "tracer_cpu_pct": 100 * tracer_cpu / runtime_s,
    }


def order(rnd):
    """Rotate by round, reverse every other round: each mode runs early and
    late, before and after each other one."""
    k = rnd // 2 % len(MODES)
    o = MODES[k:] + MODES[:k]
    return o if rnd % 2 == 0 else o[::-1]


def table(results, rounds, numjobs=1):
    lines = ["| device | load | mode | IOPS | IOPS ratio to off | load CPU µs/IO | "
             "CPU ratio off/mode | tracer CPU µs/IO | lost events | captured / load I/Os |",
             "|" + "---|" * 10]
    for dev_kind, by_mode in results.items():
        off = by_mode["off"]
        load = "psync QD1" if dev_kind == "zram" else "io_uring QD32"
        if numjobs > 1:
            load += f" ×{numjobs} jobs"
        for mode in MODES:
            runs = by_mode[mode]
            if not runs:
                continue
            iops = statistics.median(r["iops"] for r in runs)
            ratios = [r["iops"] / o["iops"] for r, o in zip(runs, off)]
            cpu_ratios = [o["load_cpu_us_per_io"] / r["load_cpu_us_per_io"]
                          for r, o in zip(runs, off)]
            lost = [r["lost"] for r in runs]
            cap = [r["captured_ratio"] for r in runs]
            traced = mode != "off"
            counts = traced and not mode.startswith("floor-")  # the floor counts nothing
            lines.append(
                f"| {dev_kind} | {load} | {mode} | {iops:,.0f} "
                f"| {statistics.median(ratios):.3f} ({min(ratios):.2f}–{max(ratios):.2f}) "
                f"| {statistics.median(r['load_cpu_us_per_io'] for r in runs):.2f} "
                f"| {statistics.median(cpu_ratios):.3f} "
                f"| {statistics.median(r['tracer_cpu_us_per_io'] for r in runs) if traced else 0:.2f} "
                f"| {f'{sum(lost):,} (max {max(lost):,})' if counts else '–'} "
                f"| {f'{min(cap):.3f}–{max(cap):.3f}' if counts else '–'} |")
    lines.append("")
    lines.append(
        f"IOPS: median of {rounds} rounds; IOPS ratio: median (min–max) over rounds of the "
        "mode's IOPS / the same round's untraced IOPS. Load CPU µs/IO: the load thread's "
        "own CPU (getrusage per thread, user + system) per I/O, where the kernel's "
        "tracepoint cost lands; CPU ratio off/mode: the IOPS ratio a CPU-bound load would "
        "see with a free core for the tracer, robust to other work on the machine. Tracer "
        "CPU µs/IO: the tracer process's CPU (wait4) per I/O of the load. Lost events: as "
        "each tool reports them, summed over rounds (max of one run). Captured: requests "
        "the tracer reported / I/Os the load did (io_uring batches can merge two adjacent "
        "4 KiB reads into one request, so slightly < 1 is exact there).")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=4, help="rounds per device (default 4)")
    ap.add_argument("--runtime", type=int, default=5, help="seconds per load (default 5)")
    ap.add_argument("--devices", default="zram,loop", help="zram,loop (default both)")
    ap.add_argument("--modes", default=",".join(DEFAULT_MODES),
                    help=f"subset of {','.join(MODES)} (default all but floor-*)")
    ap.add_argument("--results", type=Path, default=REPO / "bench" / "results",
                    help="where the run's directory goes (default bench/results)")
    ap.add_argument("--no-build", action="store_true", help="use the existing release binary")
    ap.add_argument("--numjobs", type=int, default=1,
                    help="load threads (default 1; 2 puts every core under load)")
    a = ap.parse_args()
    devices = [d for d in a.devices.split(",") if d]
    for d in devices:
        if d not in DEVICES:
            ap.error(f"--devices: unknown {d!r}; expected some of {','.join(DEVICES)}")
    modes = [m for m in a.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            ap.error(f"--modes: unknown {m!r}; expected some of {','.join(MODES)}")
    if "off" not in modes:
        ap.error("--modes must include off (the baseline)")
    MODES[:] = modes
    if os.geteuid() != 0:
        sys.exit("error: run as root (labs, tracefs, BPF)")
    for tool in (["bpftrace"] if {"bpftrace", "bpftrace-hist"} & set(modes) else []) + \
            (["perf"] if "perf" in modes else []):
        if not shutil.which(tool):
            sys.exit(f"error: {tool} not found: apt-get install -y bpftrace linux-perf")

    if any(m.startswith("floor-") for m in modes):
        try:
            import ctypes
            ctypes.CDLL("libbpf.so.1")
            have_libbpf = True
        except OSError:
            have_libbpf = False
        if not shutil.which("clang-14") or not have_libbpf:
            sys.exit("error: the floor-* modes need clang-14 and libbpf (they compile and "
                     "load bench/bpf_floor/floor.bpf.c): apt-get install -y clang-14 libbpf-dev")
    if not a.no_build:
        log("building: cargo build --release -p iolab")
        run(["cargo", "build", "--release", "-p", "iolab"], cwd=REPO)
    iolab = str(REPO / "target" / "release" / "iolab")
    out_dir = a.results / time.strftime("trace-%Y%m%d-%H%M%S")
    out_dir.mkdir(parents=True, exist_ok=True)
    if any(m.startswith("floor-") for m in modes):
        asm = f"/usr/include/{os.uname().machine}-linux-gnu"
        for kind, kflags in (("bio", []), ("rq", ["-DRQ"])):
            for body, bflags in (("empty", []), ("clock", ["-DCLOCK"])):
                run(["clang-14", "-O2", "-g", "-target", "bpf", f"-I{asm}", *kflags, *bflags,
                     "-c", str(FLOOR / "floor.bpf.c"),
                     "-o", str(out_dir / f"floor-{kind}-{body}.o")])

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    labs = Labs(iolab)
    interrupted = False
    results = {}
    rows = []
    load_avg = os.getloadavg()
    # bpftrace and perf find tracepoints only in a mounted tracefs (iolab
    # mounts its own where none is): mount one for the run, unmount it after.
    mounted = False
    if not Path("/sys/kernel/tracing/events").is_dir():
        run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"])
        mounted = True
    try:
        for dev_kind in devices:
            lab = labs.up(f"bench-trace-{dev_kind}", DEVICES[dev_kind][0])
            dev = lab["device"]
            devno = kernel_dev(dev)
            log(f"{dev_kind}: {dev} (dev_t {devno}); filling {DATA // MiB} MiB")
            run(["dd", "if=/dev/urandom", f"of={dev}", "bs=1M", f"count={DATA // MiB}",
                 "oflag=direct", "status=none"])
            by_mode = results.setdefault(dev_kind, {m: [] for m in MODES})
            for rnd in range(a.rounds):
                for mode in order(rnd):
                    tag = f"{dev_kind}-{rnd}-{mode}"
                    m = one_run(mode, iolab, dev, devno, dev_kind, a.runtime, out_dir, tag,
                                a.numjobs)
                    by_mode[mode].append(m)
                    rows.append({"device": dev_kind, "dev": dev, "round": rnd,
                                 "mode": mode, **m})
                    log(f"  {dev_kind} round {rnd} {mode:11}: {m['iops']:>10,.0f} IOPS, "
                        f"load {m['load_cpu_us_per_io']:.2f} CPU µs/IO, tracer "
                        f"{m['tracer_cpu_us_per_io']:.2f} µs/IO, lost {m['lost']}, "
                        f"captured {m['captured']:,}/{m['ios']:,}")
            labs.close()
    except KeyboardInterrupt:
        log("interrupted: removing labs, printing what was measured")
        interrupted = True
    finally:
        stop_all()
        labs.close()
        (out_dir / "runs.json").write_text(json.dumps(rows, indent=1))
        if mounted:
            r = subprocess.run(["umount", "/sys/kernel/tracing"], text=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if r.returncode != 0:
                log(f"warning: unmounting /sys/kernel/tracing failed: {r.stderr.strip()}")

    cmd = "bench/trace_overhead.py " + " ".join(sys.argv[1:])
    version = run([iolab, "--version"], stdout=subprocess.PIPE).stdout.strip()
    bpf = run(["bpftrace", "--version"], stdout=subprocess.PIPE).stdout.strip() \
        if {"bpftrace", "bpftrace-hist"} & set(MODES) else ""
    perf = run(["perf", "--version"], stdout=subprocess.PIPE).stdout.strip() \
        if "perf" in MODES else ""
    header = (f"{version}, {bpf}, {perf}; {a.runtime} s loads; load average at start "
              f"{load_avg[0]:.1f}; command: `{cmd.strip()}`\n\n")
    md = table(results, a.rounds, a.numjobs)
    (out_dir / "table.md").write_text(header + md + "\n")
    print(header + md)
    log(f"outputs and runs.json in {out_dir}")
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
