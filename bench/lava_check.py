#!/usr/bin/env python3
"""Parse `iolab results export ID --format lava` with LAVA's own code.

    python3 bench/lava_check.py --db DB --id ID [--iolab PATH]

Fetches Debian's lava-dispatcher and lava-common packages (apt-get
download; nothing is installed), imports the dispatcher from them and runs
each line through what a LAVA test shell does with the console: the
`signal` pattern of TestShellAction, `handle_testcase` and `SignalMatch`.
Checks every line parses, results are pass/fail, measurements are numbers,
and there is one case per cell and metric (ids unique).
"""
import argparse
import atexit
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def lava_modules():
    d = tempfile.mkdtemp(prefix="lava-deb-")
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    get = ["apt-get", "download", "lava-dispatcher", "lava-common"]
    if subprocess.run(get, cwd=d, capture_output=True).returncode != 0:
        # A fresh machine may have no package lists yet.
        subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True)
        subprocess.run(get, cwd=d, check=True, capture_output=True)
    for deb in glob.glob(os.path.join(d, "*.deb")):
        subprocess.run(["dpkg-deb", "-x", deb, os.path.join(d, "root")], check=True)
    sys.path.insert(0, os.path.join(d, "root/usr/lib/python3/dist-packages"))
    from lava_dispatcher.actions.test.shell import TestShellAction, handle_testcase
    from lava_dispatcher.connection import SignalMatch
    return TestShellAction, handle_testcase, SignalMatch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--id", required=True)
    ap.add_argument("--iolab", default="target/release/iolab")
    a = ap.parse_args()
    TestShellAction, handle_testcase, SignalMatch = lava_modules()
    action = TestShellAction()
    action._reset_patterns()
    signal = re.compile(action.patterns["signal"])
    out = subprocess.run([a.iolab, "results", "export", a.id, "--db", a.db,
                          "--format", "lava"], check=True, capture_output=True,
                         text=True).stdout
    results = []
    for line in out.splitlines():
        m = signal.search(line)
        assert m, f"not a LAVA signal: {line}"
        name, params = m.groups()
        if name == "TESTSET":
            assert params == "STOP" or params.startswith("START "), line
            continue
        assert name == "TESTCASE", line
        res = SignalMatch().match(handle_testcase(params.split()))
        assert res["result"] in ("pass", "fail"), res
        results.append(res)
    ids = [r["test_case_id"] for r in results]
    assert len(ids) == len(set(ids)), "duplicate test case ids"
    show = json.loads(subprocess.run([a.iolab, "results", "show", a.id, "--db", a.db,
                                      "--json"], check=True, capture_output=True).stdout)
    kind = show["experiment"]["kind"]
    print(f"experiment {a.id} ({kind}): {len(results)} LAVA test cases parsed by "
          f"lava-dispatcher's own code, {sum(r['result'] == 'pass' for r in results)} pass, "
          f"{sum('measurement' in r for r in results)} with a measurement")
    if kind == "startup":
        plain = [c for c in show["cells"] if not c.get("variant")]
        means = [r for r in results if r["test_case_id"].endswith(".mean")
                 and ".prefetch_" not in r["test_case_id"]]
        assert len(means) == len(plain), (len(means), len(plain))
        for c in plain:
            rid = f"startup.{c['scheduler']}.{c['workload']}.mean"
            r = next(r for r in results if r["test_case_id"] == rid)
            if c.get("mean") is not None:
                assert abs(r["measurement"] - c["mean"]) < 1e-6, (r, c["mean"])
        print(f"  one .mean case per cell ({len(plain)}), each equal to the cell mean")
    for r in results[:3]:
        print("  ", r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
