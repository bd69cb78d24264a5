#!/usr/bin/env python3
"""Run lava/iolab-startup.yaml with LAVA's own dispatcher, locally (root).

    python3 bench/lava_dispatch.py --iolab target/release/iolab \\
        [--param REPS=1 --param SCALE=0.25 ...] [--expect-fail] [--json]

What a LAVA lab does, on this machine, with no LAVA server:
- Debian's lava-dispatcher, lava-common and (for its device-type
  templates only) lava-server packages are downloaded and unpacked, not
  installed (`apt-get download`; the dispatcher's dependencies that matter
  here are Debian's python3 packages .ci/run installs).
- The device is the `ssh` device type: an sshd of this script's own on
  127.0.0.1 with its own host and client keys; the device file is rendered
  from lava-server's ssh.jinja2 with a device dictionary, as the server
  does. LAVA puts its test shell in /lava-JOBID on the device (every `os`
  of its deployment data says so, over the device's constants): here that
  is this machine, so the script removes /lava-JOBID and the overlay
  tarball LAVA copied next to it when the job ends.
- The job deploys to ssh, boots over ssh and runs the test definition from
  git (this repository, its committed HEAD, as a lab takes it), with the
  iolab binary served over HTTP on 127.0.0.1 as IOLAB_URL.
- `lava-run` executes it. Its log's `results` entries are the results
  LAVA records; they are checked against `iolab results show --json` on the
  database the job hands back (its `iolab-results` lava-test-reference).

libguestfs' Python binding, which lava_dispatcher.utils.filesystem imports
at load time but only image-building deploys use, is not installed (it
pulls systemd and a supermin appliance): a module that raises on any use
stands in for it, so a path that needed it would fail loudly.

Prints a summary (or JSON with --json): job result, wall time, cases.
Exit 0 when every check holds.
"""
import argparse
import functools
import glob
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PY = "/usr/bin/python3"  # Debian's: LAVA's dependencies are its packages

GUESTFS_STUB = '''"""Not libguestfs: LAVA's ssh device never calls it (bench/lava_dispatch.py)."""
def __getattr__(name):
    raise ImportError("libguestfs is not installed here: only LAVA's ssh device is supported")
'''


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def unpack_debs(work):
    debs = os.path.join(work, "debs")
    os.makedirs(debs)
    get = ["apt-get", "download", "lava-dispatcher", "lava-dispatcher-host", "lava-common",
           "lava-server"]
    if subprocess.run(get, cwd=debs, capture_output=True).returncode != 0:
        # A fresh machine may have no package lists yet.
        subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True)
        subprocess.run(get, cwd=debs, check=True, capture_output=True)
    root = os.path.join(work, "root")
    for deb in glob.glob(os.path.join(debs, "*.deb")):
        subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
    shutil.rmtree(debs)
    stub = os.path.join(work, "stub")
    os.makedirs(stub)
    with open(os.path.join(stub, "guestfs.py"), "w") as f:
        f.write(GUESTFS_STUB)
    return root, stub


class Sshd:
    """An sshd on 127.0.0.1 accepting one key for root."""

    def __init__(self, work):
        self.dir = os.path.join(work, "sshd")
        os.makedirs(self.dir)
        for key in ["hostkey", "client"]:
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                            os.path.join(self.dir, key)], check=True)
        shutil.copy(os.path.join(self.dir, "client.pub"),
                    os.path.join(self.dir, "authorized_keys"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        d = self.dir
        with open(os.path.join(d, "sshd_config"), "w") as f:
            f.write(f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {d}/hostkey\n"
                    f"PidFile {d}/sshd.pid\nAuthorizedKeysFile {d}/authorized_keys\n"
                    "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                    "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                    # scp speaks sftp since OpenSSH 9.
                    "Subsystem sftp internal-sftp\n")
        self.made_privsep = not os.path.exists("/run/sshd")
        os.makedirs("/run/sshd", exist_ok=True)
        self.proc = subprocess.Popen(
            ["/usr/sbin/sshd", "-D", "-e", "-f", os.path.join(d, "sshd_config")],
            stderr=open(os.path.join(d, "sshd.log"), "w"))
        deadline = time.time() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("sshd did not listen: " + open(
                        os.path.join(d, "sshd.log")).read())
                time.sleep(0.1)
        self.key = os.path.join(d, "client")

    def close(self):
        self.proc.terminate()
        self.proc.wait()
        if self.made_privsep:
            shutil.rmtree("/run/sshd", ignore_errors=True)


class Served:
    """One file served over HTTP on 127.0.0.1, as a lab serves artefacts."""

    def __init__(self, work, path):
        d = os.path.join(work, "www")
        os.makedirs(d)
        shutil.copy(path, os.path.join(d, "iolab"))
        handler = functools.partial(_Quiet, directory=d)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/iolab"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def device_file(root, work, sshd):
    """The device configuration lava-server would render for this device."""
    sys.path.insert(0, os.path.join(root, "usr/lib/python3/dist-packages"))
    import jinja2
    types = os.path.join(root, "usr/share/lava-server/device-types")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader([types]), autoescape=False,
                             trim_blocks=True)
    dictionary = (
        "{% extends 'ssh.jinja2' %}\n"
        "{% set ssh_host = '127.0.0.1' %}\n"
        f"{{% set ssh_port = {sshd.port} %}}\n"
        "{% set ssh_user = 'root' %}\n"
        f"{{% set ssh_identity_file = '{sshd.key}' %}}\n"
        # No schroot on this device.
        "{% block schroot %}{% endblock schroot %}\n"
    )
    text = env.from_string(dictionary).render()
    path = os.path.join(work, "device.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def job_file(work, repo, params, minutes):
    job = {
        "device_type": "ssh",
        "job_name": "iolab-startup on a local ssh device",
        "timeouts": {"job": {"minutes": minutes}, "action": {"minutes": minutes},
                     "connection": {"minutes": 2}},
        "priority": "medium",
        "visibility": "public",
        "actions": [
            {"deploy": {"timeout": {"minutes": 2}, "to": "ssh", "os": "debian"}},
            {"boot": {"timeout": {"minutes": 2}, "method": "ssh", "connection": "ssh",
                      "prompts": ["root@[^#]*# "]}},
            {"test": {"timeout": {"minutes": minutes}, "definitions": [{
                "repository": repo, "from": "git", "path": "lava/iolab-startup.yaml",
                "name": "iolab-startup", "parameters": params}]}},
        ],
    }
    path = os.path.join(work, "job.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(job, f, sort_keys=False)
    return path


def machine_state():
    """What a run could leave behind: loop devices, mounts, throttle rules."""
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    with open("/proc/self/mounts") as f:
        mounts = [l.split()[1] for l in f]
    rules = []
    for p in glob.glob("/sys/fs/cgroup/blkio/blkio.throttle.*_device"):
        with open(p) as f:
            rules += [f"{os.path.basename(p)} {l.strip()}" for l in f if l.strip()]
    return {"loop devices": loops.splitlines(), "mounts": mounts, "throttles": rules}


def part(s):
    """A test-case id part, as iolab's LAVA export writes it."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "-_.+:") else "_" for c in s)


def log_entries(path):
    """lava-run's log: one YAML mapping per line (`{dt, lvl, msg}`; a
    server's log has `- ` before each)."""
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.removeprefix("- ")
            if not line.startswith("{"):
                continue
            try:
                e = yaml.load(line, Loader=yaml.CSafeLoader)
            except yaml.YAMLError:
                continue
            if isinstance(e, dict):
                out.append(e)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iolab", default=os.path.join(REPO, "target/release/iolab"))
    ap.add_argument("--repo", default=REPO, help="git repository holding lava/ (its HEAD)")
    ap.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--minutes", type=int, default=20, help="the job's timeout")
    ap.add_argument("--expect-fail", action="store_true",
                    help="the experiment must fail: a failed iolab-demo case with its reason")
    ap.add_argument("--keep", metavar="DIR", help="copy lava-run's log and output here")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("lava_dispatch.py: run as root (lava-run and iolab's lab need it)")
    iolab = os.path.abspath(a.iolab)
    work = tempfile.mkdtemp(prefix="iolab-lava-dispatch-", dir="/var/tmp")
    job_id = str(os.getpid())
    lava_tmp = f"/var/lib/lava/dispatcher/tmp/{job_id}"
    made_lava_dirs = not os.path.exists("/var/lib/lava")
    sshd = served = None
    try:
        t0 = time.time()
        root, stub = unpack_debs(work)
        sshd = Sshd(work)
        served = Served(work, iolab)
        device_dir = os.path.join(work, "device")
        os.makedirs(device_dir)
        params = {"IOLAB_URL": served.url, "WORKDIR": os.path.join(device_dir, "iolab")}
        for p in a.param:
            k, _, v = p.partition("=")
            params[k] = v
        device = device_file(root, work, sshd)
        job = job_file(work, a.repo, params, a.minutes)
        setup_s = time.time() - t0
        before = machine_state()
        env = dict(os.environ, PYTHONPATH=f"{stub}:{root}/usr/lib/python3/dist-packages")
        out_dir = os.path.join(work, "out")
        log_path = os.path.join(work, "lava-run.log")
        t1 = time.time()
        with open(log_path, "w") as lf:
            rc = subprocess.run([PY, os.path.join(root, "usr/bin/lava-run"), "--job-id", job_id,
                                 "--output-dir", out_dir, "--device", device, job],
                                stdout=lf, stderr=subprocess.STDOUT, env=env,
                                timeout=a.minutes * 60 + 120).returncode
        run_s = time.time() - t1
        entries = log_entries(log_path)
        results = [e["msg"] for e in entries if e.get("lvl") == "results"]
        verdict = check(a, iolab, entries, results, rc)
        # The machine as the job found it: no loop device, mount or throttle
        # rule more than before (the script's `iolab restore` ran).
        left = {k: sorted(set(v) - set(before[k])) for k, v in machine_state().items()}
        left = {k: v for k, v in left.items() if v}
        if left:
            verdict["problems"].append(f"the job left system state behind: {left}")
        verdict["left_behind"] = left
        verdict.update({"lava_run_exit": rc, "setup_s": round(setup_s, 1),
                        "lava_run_s": round(run_s, 1), "lava_dispatcher": "2023.01 (Debian)"})
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
            shutil.copy(log_path, a.keep)
            for p in [device, job]:
                shutil.copy(p, a.keep)
            db = (verdict["references"].get("iolab-results") or "").removeprefix("file://")
            if os.path.exists(db):
                shutil.copy(db, a.keep)
        if a.json:
            print(json.dumps(verdict, indent=1))
        else:
            for k, v in verdict.items():
                if k != "cases":
                    print(f"{k}: {v}")
        if verdict["problems"]:
            sys.exit(1)
    finally:
        for c in (served, sshd):
            if c:
                c.close()
        # What the job left: its tmp directory, then LAVA's dirs if we made
        # them, and on the "device" its test shell and overlay tarball.
        shutil.rmtree(lava_tmp, ignore_errors=True)
        shutil.rmtree(f"/lava-{job_id}", ignore_errors=True)
        for p in glob.glob(f"/lava-{job_id}-overlay*"):
            os.remove(p)
        if made_lava_dirs:
            shutil.rmtree("/var/lib/lava", ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
        subprocess.run([iolab, "restore"], capture_output=True)


def check(a, iolab, entries, results, rc):
    """LAVA's records against iolab's own."""
    problems = []
    job = next((r for r in results if r.get("definition") == "lava" and r.get("case") == "job"),
               None)
    if not job or job.get("result") != "pass" or rc != 0:
        problems.append(f"job not Complete: {job} (lava-run exit {rc})")
    # The test shell names the definition's results after its run:
    # "0_iolab-startup" for the first definition of the job.
    ours = [r for r in results if str(r.get("definition", "")).endswith("_iolab-startup")]
    refs = {r["case"]: r.get("reference") for r in ours if "reference" in r}
    cases = [r for r in ours if "reference" not in r]
    demo = next((r for r in cases if r["case"] == "iolab-demo"), None)
    verdict = {"job": job and job.get("result"), "problems": problems,
               "references": refs, "cases": cases}
    if a.expect_fail:
        if not demo or demo["result"] != "fail":
            problems.append(f"the experiment was to fail: iolab-demo is {demo}")
        # The reason: the script's log line just before the failed case.
        lines = [str(e.get("msg")) for e in entries if e.get("lvl") == "target"]
        reason = next((l for l in lines if l.startswith("iolab-lava: iolab-demo failed")), None)
        if not reason:
            problems.append("no 'iolab-lava: iolab-demo failed: <reason>' line in the log")
        verdict["reason"] = reason
    elif not demo or demo["result"] != "pass":
        problems.append(f"iolab-demo did not pass: {demo}")
    for r in ["iolab-version", "machine"]:
        if not refs.get(r):
            problems.append(f"no {r} reference")
    db = (refs.get("iolab-results") or "").removeprefix("file://")
    cells = [r for r in cases if r["case"].startswith("startup.")]
    verdict["result_cases"] = len(cells)
    if a.expect_fail:
        return verdict
    if not db or not os.path.exists(db):
        problems.append(f"the database was not handed back: {refs.get('iolab-results')}")
        return verdict
    show = json.loads(subprocess.run([iolab, "results", "list", "--json", "--db", db],
                                     check=True, capture_output=True, text=True).stdout)
    exp_id = str(show[-1]["id"]) if isinstance(show, list) else None
    show = json.loads(subprocess.run([iolab, "results", "show", exp_id, "--db", db, "--json"],
                                     check=True, capture_output=True, text=True).stdout)
    # Every case `results export --format lava` makes of the cells: id ->
    # (value, units, result, test set).
    want = {}
    for c in show["cells"]:
        s_, w = part(c["scheduler"]), part(c["workload"])
        ok = "pass" if c["n"] > 0 and c["censored"] == 0 and not c["flagged"] else "fail"
        variant = c.get("variant") or ""
        if variant.startswith("prefetch:"):
            mode = part(variant.split(":", 1)[1])
            want[f"startup.{s_}.{w}.prefetch_{mode}.mean"] = (c["mean"], "s", ok, w)
            continue
        for metric in ["mean", "min", "median", "max"]:
            want[f"startup.{s_}.{w}.{metric}"] = (c[metric], "s", ok, w)
        if c.get("ratio_to_idle") and c["censored"] == 0:
            want[f"startup.{s_}.{w}.ratio_to_idle"] = (c["ratio_to_idle"]["value"], "x", ok, w)
    got = {r["case"]: r for r in cells}
    if set(got) != set(want):
        problems.append(f"cases {sorted(set(got) ^ set(want))} differ from results show")
    for case, (value, units, ok, workload) in want.items():
        r = got.get(case)
        if not r:
            continue
        m = r.get("measurement")
        if value is not None and (m is None or abs(float(m) - value) > 1e-6):
            problems.append(f"{case}: LAVA recorded {m}, results show {value}")
        if r.get("units") != units or r.get("result") != ok:
            problems.append(f"{case}: {r.get('result')} in {r.get('units')}, not {ok} in {units}")
        if r.get("set") != workload:
            problems.append(f"{case}: in test set {r.get('set')}, not {workload}")
    verdict["cells"] = len(show["cells"])
    verdict["compared_with_results_show"] = len(want)
    return verdict


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    main()
