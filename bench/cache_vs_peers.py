#!/usr/bin/env python3
"""iolab cache / prefetch vs fincore (util-linux) and vmtouch, as ratios in one run.

Two benchmarks, each run ROUNDS times per tool, interleaved in ABBA order
(peer, iolab | iolab, peer | ...) so drift of the machine hits both alike;
ratios are peer time / iolab time per round (> 1: iolab is faster), and the
table shows their median.

1. Scan: page-cache residency of every file of a tree of ~100k files
   (default /usr; `--tree DIR`), metadata warm (one untimed run of each
   command first). Pairs compared:
   - `iolab cache -R --json TREE` vs `find TREE -type f -print0 | xargs -0
     fincore --json --bytes` (fincore cannot walk directories; the find is
     part of what a user of fincore pays),
   - the same file list handed to both by xargs (`xargs -0 iolab cache
     --json` vs `xargs -0 fincore --json --bytes`): per-file cost only,
   - `iolab cache -R TREE` (table with a bar per file: needs the mincore
     page map, like fincore) vs the fincore pipeline,
   - `iolab cache -R --summary TREE` vs `vmtouch TREE` (both print totals).
   Outputs go to /dev/null. Each run's totals are cross-checked: iolab's
   file count must equal vmtouch's.
2. Prefetch: a generated file set (default 400 files, 4 KiB to 8 MiB,
   ~600 MiB, in /var/tmp so its pages can be evicted) read into the cache
   from cold: `iolab prefetch --wait DIR` vs `vmtouch -t DIR` (and `iolab
   prefetch --wait --method read`). Before every run each file is evicted
   (posix_fadvise DONTNEED, done by this script) and checked cold with
   fincore; after it, the /proc/diskstats delta of the set's disk must show
   at least 90 % of the set read from the device, and fincore must find the
   set entirely cached.

    sudo bench/cache_vs_peers.py                    # ~3 minutes
    sudo bench/cache_vs_peers.py --rounds 2 --skip-prefetch   # quick

Needs vmtouch (`apt-get install -y vmtouch`) and util-linux fincore; root
so that every file under /usr can be inspected by all tools.
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MiB = 1 << 20


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def sh(cmd):
    """Runs a shell pipeline, output discarded; returns wall seconds."""
    t0 = time.monotonic()
    r = subprocess.run(["bash", "-c", "set -o pipefail; " + cmd], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    # xargs exits 123 when a fincore batch met an unreadable file: not fatal.
    if r.returncode not in (0, 123):
        raise RuntimeError(f"{cmd} failed ({r.returncode}): {r.stderr.strip()[:500]}")
    return wall


def out(cmd):
    return subprocess.run(["bash", "-c", cmd], stdout=subprocess.PIPE, text=True,
                          check=True).stdout


def q(p):
    return "'" + str(p).replace("'", "'\\''") + "'"


def abba(pairs, rounds):
    """pairs: {name: (peer_cmd, iolab_cmd)} -> {name: [(peer_s, iolab_s)]}"""
    res = {name: [] for name in pairs}
    for name, (peer, mine) in pairs.items():
        sh(peer)  # warm: dentries, inodes, binaries
        sh(mine)
        for rnd in range(rounds):
            order = [("peer", peer), ("iolab", mine)]
            if rnd % 2:
                order.reverse()
            t = {}
            for who, cmd in order:
                t[who] = sh(cmd)
            res[name].append((t["peer"], t["iolab"]))
            log(f"  {name} round {rnd}: peer {t['peer']:.3f} s, iolab {t['iolab']:.3f} s, "
                f"ratio {t['peer'] / t['iolab']:.2f}")
    return res


def table(res, title):
    lines = [f"| {title} | peer s (median) | iolab s (median) | peer/iolab (median of rounds) "
             "| range of ratios |", "|---|---|---|---|---|"]
    for name, runs in res.items():
        ratios = sorted(p / i for p, i in runs)
        lines.append(f"| {name} | {statistics.median(p for p, _ in runs):.3f} "
                     f"| {statistics.median(i for _, i in runs):.3f} "
                     f"| **{statistics.median(ratios):.2f}** "
                     f"| {ratios[0]:.2f}–{ratios[-1]:.2f} |")
    return "\n".join(lines)


def scan_bench(iolab, tree, rounds):
    files = int(out(f"find {q(tree)} -type f | wc -l"))
    log(f"scan: {tree}: {files} regular files")
    fincore = f"find {q(tree)} -type f -print0 | xargs -0 fincore --json --bytes"
    pairs = {
        "JSON, walk included: `fincore` (find+xargs) vs `iolab cache -R --json`":
            (fincore, f"{iolab} cache -R --json {q(tree)}"),
        "JSON, same file list via xargs: `fincore --json` vs `iolab cache --json`":
            (f"find {q(tree)} -type f -print0 > /tmp/iolab-bench.list; "
             f"xargs -0 fincore --json --bytes < /tmp/iolab-bench.list",
             f"find {q(tree)} -type f -print0 > /tmp/iolab-bench.list; "
             f"xargs -0 {iolab} cache --json < /tmp/iolab-bench.list"),
        "page maps (mincore): `fincore` (find+xargs) vs `iolab cache -R` (table with bars)":
            (fincore, f"{iolab} cache -R {q(tree)}"),
        "totals: `vmtouch` vs `iolab cache -R --summary`":
            (f"vmtouch {q(tree)}", f"{iolab} cache -R --summary {q(tree)}"),
    }
    res = abba(pairs, rounds)
    # Cross-check: same number of files as vmtouch (which skips hard-link
    # duplicates, as iolab's totals do).
    vm = out(f"vmtouch {q(tree)} 2>/dev/null")
    vm_files = int(next(line for line in vm.splitlines() if "Files:" in line).split()[-1])
    mine = json.loads(out(f"{iolab} cache -R --json --summary {q(tree)}"))
    t = mine["totals"]
    dup = mine["skipped"].get("hardlinks_counted_once", 0)
    check = (f"files: iolab {t['files']} (of which {dup} hard-link duplicates counted once), "
             f"vmtouch {vm_files}; find -type f {files}")
    log("  check: " + check)
    return res, check, files


def make_set(root, count, seed=1):
    """Files of log-uniform size 4 KiB..8 MiB, incompressible, synced."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    sizes = [int(4096 * 2 ** rng.uniform(0, 11)) for _ in range(count)]
    total = 0
    for i, size in enumerate(sizes):
        p = root / f"f{i:04d}.bin"
        if not (p.exists() and p.stat().st_size == size):
            with open(p, "wb") as f:
                f.write(os.urandom(size))
        total += size
    os.sync()
    return sorted(root.iterdir()), total


def evict(paths):
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def cached_bytes(paths):
    o = out("fincore --bytes --noheadings --raw --output RES " + " ".join(q(p) for p in paths))
    return sum(int(x) for x in o.split())


def disk_of(path):
    st = os.stat(path)
    real = os.path.realpath(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if os.path.exists(os.path.join(real, "partition")):
        real = os.path.dirname(real)
    return os.path.basename(real)


def read_sectors(dev):
    with open("/proc/diskstats") as f:
        for line in f:
            p = line.split()
            if p[2] == dev:
                return int(p[5])
    raise RuntimeError(f"{dev} not in /proc/diskstats")


def prefetch_bench(iolab, root, count, rounds):
    paths, total = make_set(root, count)
    # fincore counts whole pages: compare cached bytes with the set in pages.
    total_paged = sum(-(-p.stat().st_size // 4096) * 4096 for p in paths)
    dev = disk_of(root)
    log(f"prefetch: {len(paths)} files, {total / MiB:.0f} MiB in {root} on {dev}")
    variants = {
        "`vmtouch -t` vs `iolab prefetch --wait` (readahead, 2 threads)":
            (f"vmtouch -tq {q(root)}", f"{iolab} prefetch --wait {q(root)}"),
        "`vmtouch -t` vs `iolab prefetch --wait --threads 4`":
            (f"vmtouch -tq {q(root)}", f"{iolab} prefetch --wait --threads 4 {q(root)}"),
        "`vmtouch -t` vs `iolab prefetch --wait --method read --threads 4`":
            (f"vmtouch -tq {q(root)}",
             f"{iolab} prefetch --wait --method read --threads 4 {q(root)}"),
    }
    res = {name: [] for name in variants}
    checks = []
    for name, (peer, mine) in variants.items():
        for rnd in range(rounds):
            order = [("peer", peer), ("iolab", mine)]
            if rnd % 2:
                order.reverse()
            t = {}
            for who, cmd in order:
                evict(paths)
                cold = cached_bytes(paths)
                if cold > total * 0.02:
                    raise RuntimeError(f"eviction left {cold} bytes cached")
                before = read_sectors(dev)
                t[who] = sh(cmd)
                read = (read_sectors(dev) - before) * 512
                warm = cached_bytes(paths)
                checks.append((name, who, read / total, warm / total_paged))
                if read < 0.9 * total or warm < 0.999 * total_paged:
                    log(f"  WARNING {who}: device read {read / total:.3f}, cached {warm / total:.3f}"
                        " of the set")
            res[name].append((t["peer"], t["iolab"]))
            log(f"  {name} round {rnd}: peer {t['peer']:.3f} s, iolab {t['iolab']:.3f} s, "
                f"ratio {t['peer'] / t['iolab']:.2f}")
    dev_ratio = [c[2] for c in checks]
    cached = [c[3] for c in checks]
    check = (f"{len(paths)} files, {total / MiB:.0f} MiB on {dev}; every run: device read "
             f"{min(dev_ratio):.3f}–{max(dev_ratio):.3f} of the set, cached afterwards "
             f"{min(cached):.4f}–{max(cached):.4f}")
    log("  check: " + check)
    return res, check


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=6, help="rounds per pair (even: ABBA balanced)")
    ap.add_argument("--tree", default="/usr", help="tree to scan (default /usr)")
    ap.add_argument("--prefetch-dir", type=Path, default=Path("/var/tmp/iolab-bench-prefetch"),
                    help="where the prefetch file set is generated (not tmpfs)")
    ap.add_argument("--files", type=int, default=400, help="files in the prefetch set")
    ap.add_argument("--skip-scan", action="store_true")
    ap.add_argument("--skip-prefetch", action="store_true")
    ap.add_argument("--keep-set", action="store_true", help="keep the generated file set")
    ap.add_argument("--no-build", action="store_true", help="use the existing release binary")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("error: run as root (files under /usr must be inspectable by every tool)")
    for tool in ("vmtouch", "fincore"):
        if not shutil.which(tool):
            sys.exit(f"error: {tool} not found: apt-get install -y vmtouch util-linux")
    if not a.no_build:
        log("building: cargo build --release -p iolab")
        subprocess.run(["cargo", "build", "--release", "-p", "iolab"], cwd=REPO, check=True)
    iolab = str(REPO / "target" / "release" / "iolab")
    versions = (out("fincore --version").strip() + "; "
                + "vmtouch " + out("dpkg-query -W -f='${Version}' vmtouch || true").strip() + "; "
                + out(f"{iolab} --version").strip())
    cmd = "bench/cache_vs_peers.py " + " ".join(sys.argv[1:])
    parts = [f"{versions}; {os.cpu_count()} CPUs; command: `{cmd.strip()}`", ""]
    try:
        if not a.skip_scan:
            res, check, n = scan_bench(iolab, a.tree, a.rounds)
            parts += [f"Scan of {a.tree} ({n} files), {a.rounds} rounds:", "",
                      table(res, "scan"), "", f"Check: {check}", ""]
        if not a.skip_prefetch:
            res, check = prefetch_bench(iolab, a.prefetch_dir, a.files, a.rounds)
            parts += [f"Prefetch from cold, {a.rounds} rounds:", "", table(res, "prefetch"), "",
                      f"Check: {check}", ""]
    finally:
        if not a.keep_set and a.prefetch_dir.exists() and not a.skip_prefetch:
            shutil.rmtree(a.prefetch_dir, ignore_errors=True)
        Path("/tmp/iolab-bench.list").unlink(missing_ok=True)
    print("\n".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
