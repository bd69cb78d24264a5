#!/usr/bin/env python3
"""fio's own test suite against `iolab load` and against the installed fio.

fio's harness, t/run-fio-tests.py from a fio source tree you point this at
(fio is GPL-2: its tests are run from there, never copied into iolab), runs
once with `--fio` pointing at a two-line wrapper that execs
`iolab load "$@"`, and once with the installed fio. Both runs use the same
test list, the same harness and the same artifact layout; the table says,
per test, what each tool did and why iolab failed where it did.

Default tests: fio's job-file tests 1-38 without 2, 6, 9 and 10 (multi-GiB
verify, 4 CPUs, a slow-disk timeout, a hang of fio 3.33 itself), and the
standalone scripts readonly.py, strided.py, latency_percentiles.py,
jsonplus2csv_test.py, log_compression.py and random_seed.py (1003, 1006,
1010-1013). The harness needs statsmodels and scipy (a venv:
`python3 -m venv v && v/bin/pip install statsmodels scipy`; then run this
script with v/bin/python).

    bench/fio_suite.py ~/src/fio                       # both tools, the table
    bench/fio_suite.py ~/src/fio --only iolab --tests 5 7 8
    bench/fio_suite.py ~/src/fio --markdown docs/fio-suite-table.md

Exit status: 0 when iolab passes every test the installed fio passes.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_TESTS = [1, 3, 4, 5, 7, 8] + list(range(11, 39)) + [1003, 1006, 1010, 1011, 1012, 1013]
LINE = re.compile(r"^Test (\d+) (PASSED|FAILED|SKIPPED)(:?)\s*(.*)$")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("fio_source", type=Path, help="a fio source tree (its t/ and tools/)")
    p.add_argument("--iolab", default=None, help="iolab binary (default: target/release/iolab, else PATH)")
    p.add_argument("--fio", default=shutil.which("fio"), help="the installed fio (default: PATH)")
    p.add_argument("--tests", nargs="+", type=int, default=DEFAULT_TESTS)
    p.add_argument("--only", choices=["iolab", "fio"], help="run one tool")
    p.add_argument("--fio-log", type=Path,
                   help="take fio's column from this earlier run's fio.log instead of running fio again "
                        "(fio's suite takes ~15 min here, iolab's ~1)")
    p.add_argument("--work", type=Path, default=None,
                   help="where the artifacts go (default: a new dir under /var/tmp; kept)")
    p.add_argument("--markdown", type=Path, help="also write the table here")
    p.add_argument("--keep", action="store_true",
                   help="keep the artifacts of passing tests too (several GiB)")
    p.add_argument("--timeout", type=int, default=1800, help="seconds per tool")
    return p.parse_args()


def find_iolab(given):
    if given:
        return str(Path(given).resolve())
    here = Path(__file__).resolve().parent.parent / "target" / "release" / "iolab"
    if here.exists():
        return str(here)
    found = shutil.which("iolab")
    if not found:
        sys.exit("fio_suite: no iolab binary: build it (cargo build --release) or pass --iolab PATH")
    return found


def fio_version(fio_source, fio):
    src = "unknown"
    try:
        src = subprocess.run(["git", "-C", str(fio_source), "describe", "--tags", "--always"],
                             capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        vf = fio_source / "FIO-VERSION-GEN"
        if vf.exists():
            m = re.search(r"DEF_VER=(\S+)", vf.read_text())
            src = m.group(1) if m else src
    installed = subprocess.run([fio, "--version"], capture_output=True, text=True).stdout.strip() if fio else "none"
    return src, installed


def parse(out, tests):
    results = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            tid, res, colon, rest = int(m.group(1)), m.group(2), m.group(3), m.group(4)
            reason, desc = "", rest
            if colon:
                # "FAILED: reason, desc": the harness's reasons end with ','.
                head, _, tail = rest.rpartition(", ")
                reason, desc = (head, tail) if head else (rest, "")
            if tid in tests:
                results[tid] = (res, reason.strip(), desc.strip())
    return results


def run_suite(name, exe, args, work):
    """Runs the harness with --fio EXE; returns {test_id: (result, reason, desc)}."""
    art = work / name
    if art.exists():
        shutil.rmtree(art)
    cmd = [sys.executable, str(args.fio_source / "t" / "run-fio-tests.py"),
           "-r", str(args.fio_source), "-f", exe, "-a", str(art), "-k",
           # Passing tests' data files go (fio's tests write GiBs).
           *(["-c"] if not args.keep else []),
           "--run-only", *map(str, args.tests)]
    print(f"== {name}: {' '.join(cmd)}", flush=True)
    t0 = time.monotonic()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout,
                             cwd=work).stdout
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        out += f"\n(harness timed out after {args.timeout} s)\n"
    (work / f"{name}.log").write_text(out)
    results = parse(out, args.tests)
    print(f"   {name}: {sum(r[0] == 'PASSED' for r in results.values())} passed of "
          f"{len(results)} in {time.monotonic() - t0:.0f} s", flush=True)
    return results


def main():
    args = parse_args()
    if not (args.fio_source / "t" / "run-fio-tests.py").exists():
        sys.exit(f"fio_suite: {args.fio_source}: no t/run-fio-tests.py there; give a fio source tree")
    try:
        import statsmodels  # noqa: F401  (run-fio-tests.py imports it)
    except ImportError:
        sys.exit("fio_suite: fio's harness needs statsmodels and scipy: run this with a python that has them "
                 "(python3 -m venv v && v/bin/pip install statsmodels scipy)")
    work = args.work or Path(tempfile.mkdtemp(prefix="fio-suite-", dir="/var/tmp"))
    work.mkdir(parents=True, exist_ok=True)
    iolab = find_iolab(args.iolab)
    wrapper = work / "iolab-as-fio"
    wrapper.write_text(f'#!/bin/sh\nexec "{iolab}" load "$@"\n')
    wrapper.chmod(0o755)
    src, installed = fio_version(args.fio_source, args.fio)
    runs = {}
    if args.only != "fio":
        runs["iolab"] = run_suite("iolab", str(wrapper), args, work)
    if args.fio_log:
        runs["fio"] = parse(args.fio_log.read_text(), args.tests)
    elif args.only != "iolab":
        if not args.fio:
            sys.exit("fio_suite: no fio installed (apt-get install fio), or pass --only iolab")
        runs["fio"] = run_suite("fio", args.fio, args, work)
    lines = [f"Tests from fio source {src}; reference {installed}; iolab {iolab}.", "",
             "| test | " + " | ".join(runs) + " | description / iolab's failure |",
             "|---|" + "---|" * len(runs) + "---|"]
    regressions = []
    for t in args.tests:
        cells = [runs[n].get(t, ("-", "", ""))[0] for n in runs]
        io = runs.get("iolab", {}).get(t, ("-", "", ""))
        fo = runs.get("fio", {}).get(t, ("-", "", ""))
        desc = io[2] or fo[2]
        reason = io[1] if len(io[1]) <= 160 else io[1][:157] + "..."
        note = f"{desc}" + (f" — {reason}" if io[0] == "FAILED" else "")
        lines.append(f"| {t} | " + " | ".join(cells) + f" | {note} |")
        if fo[0] == "PASSED" and io[0] != "PASSED" and "iolab" in runs:
            regressions.append(t)
    ran = [t for t in args.tests if any(t in r for r in runs.values())]
    lines = [ln for ln in lines if not any(ln.startswith(f"| {t} | ") for t in set(args.tests) - set(ran))]
    summary = ", ".join(f"{n} {sum(r[0] == 'PASSED' for r in res.values())}/{len(ran)} passed"
                        for n, res in runs.items())
    lines += ["", summary]
    if "fio" in runs and "iolab" in runs:
        lines.append(f"fio passes and iolab does not: {regressions or 'none'}")
    table = "\n".join(lines) + "\n"
    print(table)
    (work / "table.md").write_text(table)
    (work / "results.json").write_text(json.dumps({n: {str(k): v for k, v in r.items()} for n, r in runs.items()},
                                                  indent=1))
    if args.markdown:
        args.markdown.write_text(table)
    print(f"artifacts, logs and the table: {work}")
    sys.exit(1 if regressions else 0)


if __name__ == "__main__":
    os.umask(0o022)
    main()
