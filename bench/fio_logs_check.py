#!/usr/bin/env python3
"""fio's own log tools read iolab's logs: the same rate-limited job runs
in iolab and in fio, each writing the logs fio can (bw with log_avg_msec,
clat histogram with log_hist_msec, json+ output); fio's tools from a fio
source tree parse both, and what they compute from iolab's files is
checked against the run's JSON and against what they compute from fio's:

  fio_jsonplus_clat2csv   json+ -> CSV; the last cumulative count of each
                          direction = the run's total_ios
  fiologparser.py         its average bandwidth from iolab's bw log within
                          5 % of the same from fio's
  fiologparser_hist.py    samples and median of its last interval within
                          5 % / the same order as from fio's (needs numpy
                          and pandas; skipped, and said, without)

  FIO_SRC=/path/to/fio bench/fio_logs_check.py [--iolab target/release/iolab]

Exit 0 when every tool accepted the files and every check held."""

import argparse, csv, json, os, subprocess, sys, tempfile


def tool(src, rel):
    p = os.path.join(src, rel)
    if not os.path.exists(p):
        sys.exit(f"{p} not found: set FIO_SRC to a fio source tree")
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iolab", default="target/release/iolab")
    a = ap.parse_args()
    src = os.environ.get("FIO_SRC", "/tmp/fiosrc")
    iolab = os.path.abspath(a.iolab)
    fails = []
    logs = ["--name=lg", "--rw=randrw", "--bs=4k", "--size=8m", "--write_bw_log=lg",
            "--log_avg_msec=100", "--write_hist_log=lg", "--log_hist_msec=100", "--runtime=2",
            "--time_based", "--rate_iops=1000"]
    with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as f:
        subprocess.run([iolab, "load", f"--directory={d}", "--output-format=json+",
                        f"--output={d}/out.json"] + logs, cwd=d, check=True, capture_output=True)
        subprocess.run(["fio", f"--directory={f}", "--output-format=terse"] + logs, cwd=f, check=True,
                       capture_output=True)
        j = json.load(open(f"{d}/out.json"))["jobs"][0]
        ios = {k: j[k]["total_ios"] for k in ("read", "write")}
        print(f"iolab run: {ios['read']} reads, {ios['write']} writes")

        subprocess.run([sys.executable, tool(src, "tools/fio_jsonplus_clat2csv"), f"{d}/out.json",
                        f"{d}/clat.csv"], check=True, capture_output=True)
        rows = list(csv.reader(open(f"{d}/clat_job0.csv"), skipinitialspace=True))
        head = [h.strip() for h in rows[0]]
        for k in ("read", "write"):
            col = head.index(f"{k}_clat_ns_cumulative")
            last = max(int(r[col]) for r in rows[1:] if len(r) > col and r[col].strip())
            ok = last == ios[k]
            print(f"fio_jsonplus_clat2csv: {k} cumulative {last} vs total_ios {ios[k]}: {'ok' if ok else 'FAIL'}")
            ok or fails.append("clat2csv " + k)

        def parse(script, *args):
            return subprocess.run([sys.executable, tool(src, script), *args], check=True,
                                  capture_output=True, text=True).stdout

        ours = float(parse("tools/fiologparser.py", "-i", "100", f"{d}/lg_bw.1.log").split()[0])
        theirs = float(parse("tools/fiologparser.py", "-i", "100", f"{f}/lg_bw.1.log").split()[0])
        ok = abs(ours - theirs) <= theirs * 0.05
        print(f"fiologparser.py: average bw from iolab's log {ours:.0f}, from fio's {theirs:.0f}: "
              f"{'ok' if ok else 'FAIL'}")
        ok or fails.append("fiologparser bw")

        try:
            import numpy, pandas  # noqa: F401 -- fiologparser_hist needs them
        except ImportError:
            print("fiologparser_hist.py: skipped: numpy and pandas are not installed (pip install numpy pandas)")
        else:
            def last(dir_):
                out = parse("tools/hist/fiologparser_hist.py", f"{dir_}/lg_clat_hist.1.log")
                return [float(v) for v in out.splitlines()[-1].split(",")]
            o, t = last(d), last(f)
            ok = abs(o[1] - t[1]) <= t[1] * 0.05 and o[2] > 0 and o[2] <= o[4] <= o[8]
            print(f"fiologparser_hist.py: last interval {o[1]:.0f} samples (fio's {t[1]:.0f}), "
                  f"min/median/max {o[2]:.0f}/{o[4]:.0f}/{o[8]:.0f} ns (fio's {t[2]:.0f}/{t[4]:.0f}/{t[8]:.0f}): "
                  f"{'ok' if ok else 'FAIL'}")
            ok or fails.append("fiologparser_hist")
    if fails:
        sys.exit("FAILED: " + ", ".join(fails))


if __name__ == "__main__":
    main()
