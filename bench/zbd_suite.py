#!/usr/bin/env python3
"""fio's zoned-device suite (t/zbd/test-zbd-support) against `iolab load`
and against the installed fio, on a zoned null_blk in the qemu guest.

This kernel has no null_blk; the guest (scripts/guest/, Debian's kernel)
does. The suite comes from a fio source tree you point this at (fio is
GPL-2: it is copied into the guest's image for the run, never into
iolab) and runs there twice, from the same reset device: once with the
installed fio, once with `iolab load --force` as the fio it calls. The
device is made as fio's t/zbd/run-tests-against-nullb makes it (4 KiB
blocks, memory-backed); `--config` picks the layout
(SIZE_MB,ZONE_MB,CAP_MB,CONV_PERCENT,MAX_OPEN, its sections' values).

    bench/zbd_suite.py ~/src/fio                          # section 4, 256 MiB
    bench/zbd_suite.py ~/src/fio --config 256,4,3,10,0    # zone capacity < size
    bench/zbd_suite.py ~/src/fio --config 256,1,1,0,8     # MaxOpen 8
    bench/zbd_suite.py ~/src/fio --markdown /tmp/zbd.md

Exit status: 0 when iolab passes every test the installed fio passes.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINE = re.compile(r"^Running test (\d+) \.\.\. (PASS|FAIL|SKIP)\s*(.*)$")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("fio_source", type=Path, help="a fio source tree (its t/zbd/)")
    p.add_argument("--iolab", default=str(ROOT / "target" / "release" / "iolab"),
                   help="iolab binary (default: target/release/iolab)")
    p.add_argument("--config", default="256,1,1,10,0",
                   help="SIZE_MB,ZONE_MB,CAP_MB,CONV_PERCENT,MAX_OPEN (default 256,1,1,10,0)")
    p.add_argument("--work", type=Path, default=None,
                   help="where the guest and its results go (default: a new dir under /var/tmp; kept)")
    p.add_argument("--markdown", type=Path, help="also write the table here")
    p.add_argument("--timeout", type=int, default=7200, help="seconds for the guest")
    return p.parse_args()


def parse(text):
    out = {}
    for line in text.splitlines():
        m = LINE.match(line.strip())
        if m:
            out[int(m.group(1))] = (m.group(2), m.group(3).strip())
    return out


def first_line(log):
    """The line of a failed test's log that says why: iolab's own message,
    else the first line naming an error or a mismatch."""
    if not log.exists():
        return ""
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines()]
    lines = [ln for ln in lines if ln and ln not in ("FAIL", "PASS", "SKIP")]
    for ln in lines:
        if ln.startswith("iolab:"):
            return ln[:150]
    for ln in lines:
        low = ln.lower()
        if any(k in low for k in ("error", "assert", "fail", "refus", "expected", "<>")):
            return ln[:150]
    return ""


def main():
    args = parse_args()
    suite = args.fio_source / "t" / "zbd"
    if not (suite / "test-zbd-support").exists():
        sys.exit(f"zbd_suite: {args.fio_source}: no t/zbd/test-zbd-support there; give a fio source tree")
    if not Path(args.iolab).exists():
        sys.exit(f"zbd_suite: no iolab at {args.iolab}: cargo build --release -p iolab, or pass --iolab")
    work = args.work or Path(tempfile.mkdtemp(prefix="zbd-suite-", dir="/var/tmp"))
    work.mkdir(parents=True, exist_ok=True)
    extra = work / "extra"
    shutil.rmtree(extra, ignore_errors=True)
    shutil.copytree(suite, extra / "zbd")
    env = dict(os.environ, IOLAB_BIN=args.iolab, IOLAB_GUEST_FIO="1", IOLAB_GUEST_EXTRA=str(extra),
               IOLAB_GUEST_DIR=str(work / "guest"),
               IOLAB_GUEST_DEBS=os.environ.get("IOLAB_GUEST_DEBS", "/var/cache/iolab-guest"))
    subprocess.run(["bash", str(ROOT / "scripts/guest/build.sh")], env=env, check=True)
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    env.update(IOLAB_GUEST_ARGS=args.config, IOLAB_GUEST_MEM="3072", IOLAB_GUEST_TIMEOUT=str(args.timeout))
    subprocess.run(["bash", str(ROOT / "scripts/guest/run.sh"), "zbd-suite", str(out)], env=env, check=True)
    runs = {t: parse((out / f"{t}.out").read_text(errors="replace")) for t in ("fio", "iolab")}
    secs = {t: (out / f"{t}.seconds").read_text().strip() for t in runs}
    fio_version = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
    tests = sorted(set(runs["fio"]) | set(runs["iolab"]))
    lines = [f"fio's t/zbd/test-zbd-support from {args.fio_source}; device {args.config} "
             f"(MiB size, zone, capacity; % conventional; max open; {(out / 'zoned').read_text().strip()}); "
             f"reference {fio_version}.", "",
             "| test | fio | iolab | iolab's failure, or why skipped |", "|---|---|---|---|"]
    regressions = []
    for t in tests:
        f = runs["fio"].get(t, ("-", ""))
        i = runs["iolab"].get(t, ("-", ""))
        why = i[1] if i[0] == "SKIP" else (first_line(out / "iolab.logs" / f"test-zbd-support.log.{t}")
                                           if i[0] == "FAIL" else "")
        lines.append(f"| {t} | {f[0]} | {i[0]} | {why.replace('|', '/')} |")
        if f[0] == "PASS" and i[0] != "PASS":
            regressions.append(t)
    count = {n: sum(v[0] == "PASS" for v in r.values()) for n, r in runs.items()}
    lines += ["", f"fio {count['fio']} passed, iolab {count['iolab']} passed, of {len(tests)} "
                  f"(fio {secs['fio']} s, iolab {secs['iolab']} s in the guest)",
              f"fio passes and iolab does not: {regressions or 'none'}"]
    table = "\n".join(lines) + "\n"
    print(table)
    (work / "table.md").write_text(table)
    if args.markdown:
        args.markdown.write_text(table)
    print(f"the guest's results: {out}")
    sys.exit(1 if regressions else 0)


if __name__ == "__main__":
    main()
