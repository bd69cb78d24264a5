#!/usr/bin/env python3
"""Fault campaign: kill iolab at random moments and break its world, then
check that the machine is restored exactly and no measured result is lost.

Faults:
  * SIGKILL at a random moment (uniform in [0, window]) of every
    long-running command: lab up (throttled and device-model), lab down,
    load, startup, sweep, trace bio, sched record, record, explain,
    prefetch; and SIGKILL of a model lab's server in the middle of a load;
  * disk full during a load, during a startup, and under a results write;
  * two iolab processes writing one results database at once;
  * the lab's filesystem remounted read-only in the middle of a startup;
  * SIGKILL of `startup --in` on ext4 over dm-crypt over dm-linear over a
    partition, in a qemu guest (scripts/guest/; this kernel has no
    device-mapper): the disk's scheduler and every queue, bdi, trace
    instance and mount restored by the next run, the scratch directory
    removed, every reported start stored.

After each fault: `iolab restore` (what the next run does first anyway),
then the machine's state is compared with the snapshot taken before the
campaign: every block device's scheduler, queue attributes and iosched
tunables, bdi dirty limits, vm sysctls, blkio throttle rules and cgroups,
mounts, loop and zram devices, tracefs instances, leftover processes of the
campaign's targets, and processes in D state. Result databases pass
`PRAGMA integrity_check`, and every repetition whose target had finished
more than one start before the kill is in the database (the start being
committed at the kill may be lost; that is the only one allowed).

Usage (root; about 10-15 minutes for the default 22 kills per command):
    sudo bench/fault_campaign.py [--kills N] [--seed S] [--out FILE] [--only in-place|lab-up]

`lab up` is killed at least 20 times per backend, spread evenly over a
whole run's measured duration (lab_up_kills), for the throttle, the
device model, and the defaults of a cgroup-v2-only host (4 GiB, model).

It builds iolab (release) unless --no-build, prints a Markdown table
(docs/RELIABILITY.md holds the last one) and exits non-zero if any row
lost results, left residue or hung.
"""

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MARK = "iolabfaultcampaign"  # in every target's argv: leftover processes are found by it
HANG_S = 120


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def read(p):
    try:
        return Path(p).read_text().strip()
    except OSError:
        return None


# ---------------------------------------------------------------- state

def snapshot():
    """Everything an iolab run may change, as comparable text."""
    s = {}
    for dev in sorted(os.listdir("/sys/block")):
        q = Path("/sys/block", dev, "queue")
        s[f"{dev}/scheduler"] = read(q / "scheduler")
        for a in ("nr_requests", "read_ahead_kb", "rq_affinity", "nomerges", "max_sectors_kb",
                  "rotational", "write_cache", "wbt_lat_usec"):
            s[f"{dev}/{a}"] = read(q / a)
        io = q / "iosched"
        if io.is_dir():
            for t in sorted(os.listdir(io)):
                s[f"{dev}/iosched/{t}"] = read(io / t)
    for bdi in sorted(os.listdir("/sys/class/bdi")):
        # max_bytes is not compared: with a ratio limit in force the kernel
        # derives it from the memory that is dirtyable right now.
        for a in ("max_ratio", "min_ratio", "max_ratio_fine", "min_ratio_fine", "strict_limit"):
            v = read(Path("/sys/class/bdi", bdi, a))
            if v is not None:
                s[f"bdi/{bdi}/{a}"] = v
    for k in ("dirty_ratio", "dirty_background_ratio", "dirty_bytes",
              "dirty_background_bytes", "dirty_expire_centisecs",
              "dirty_writeback_centisecs"):
        s[f"vm/{k}"] = read(f"/proc/sys/vm/{k}")
    for root, _, files in os.walk("/sys/fs/cgroup"):
        for f in files:
            if f.startswith("blkio.throttle.") and f.endswith("_device"):
                s[f"{root}/{f}"] = read(Path(root, f))
        if "iolab" in root:
            s[f"cgroup:{root}"] = "exists"
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        f = line.split()
        mounts.append(f"{f[4]} {f[f.index('-') + 1]}")
    s["mounts"] = "\n".join(sorted(mounts))
    s["loops"] = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout.strip()
    s["zram"] = " ".join(sorted(d for d in os.listdir("/sys/block") if d.startswith("zram")))
    inst = Path("/sys/kernel/tracing/instances")
    s["trace_instances"] = " ".join(sorted(os.listdir(inst))) if inst.is_dir() else ""
    s["run_dir"] = " ".join(sorted(p.name for p in Path("/run/iolab").glob("*.jsonl"))) \
        if Path("/run/iolab").is_dir() else ""
    return s


def leftovers():
    """Processes of the campaign's targets, and any task in D state."""
    marked, dstate = [], []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        state = stat.rsplit(")", 1)[1].split()[0]
        if MARK in cmd and "fault_campaign" not in cmd:
            marked.append(f"{pid}: {cmd[:80]}")
        if state == "D":
            dstate.append(f"{pid} ({stat.split('(')[1].split(')')[0]})")
    return marked, dstate


def diff(before, after):
    out = []
    for k in sorted(set(before) | set(after)):
        if before.get(k) != after.get(k):
            if k.startswith("loop") and k.endswith("/write_cache") \
                    and (before.get(k), after.get(k)) == ("write through", "write back"):
                # A loop device never bound reads "write through" because
                # its driver feature is absent; any bind sets the feature
                # and a detach keeps it (losetup -d leaves the same). The
                # only way to read "write through" again is to set the
                # kernel's disable flag, which every later bind of the
                # number would keep: iolab leaves the flag as it found it
                # (crates/guard/src/change.rs, LOOP_QUEUE_ATTRS). The
                # other way round, "write back" -> "write through", is
                # residue: that flag set.
                continue
            out.append(f"{k}: {before.get(k)!r} -> {after.get(k)!r}")
    return out


# ---------------------------------------------------------------- running

class Campaign:
    def __init__(self, iolab, work, seed, kills):
        self.iolab = iolab
        self.work = Path(work)
        self.rng = random.Random(seed)
        self.kills = kills
        self.rows = {}
        self.failures = []
        self.baseline = None

    def cmd(self, *args):
        return [self.iolab, *args]

    def restore(self):
        r = subprocess.run(self.cmd("restore"), capture_output=True, text=True, timeout=HANG_S)
        return r.returncode == 0

    def row(self, fault, command):
        return self.rows.setdefault((fault, command), {"runs": 0, "restored": 0, "lost": 0, "hangs": 0, "notes": set()})

    def check(self, fault, command, lost=0, note=None, extra_cleanup=None):
        """Restores, cleans up what the scenario made on purpose, compares."""
        row = self.row(fault, command)
        row["runs"] += 1
        try:
            ok = self.restore()
        except subprocess.TimeoutExpired:
            row["hangs"] += 1
            ok = False
        if extra_cleanup:
            extra_cleanup()
        # Processes of a killed target die with the restore (by process
        # group); give the kernel a moment to reap them.
        for _ in range(50):
            marked, dstate = leftovers()
            if not marked and not dstate:
                break
            time.sleep(0.1)
        now = snapshot()
        d = diff(self.baseline, now)
        if marked:
            d.append(f"processes left: {marked}")
        if dstate:
            d.append(f"tasks in D state: {dstate}")
        if ok and not d:
            row["restored"] += 1
        else:
            self.failures.append(f"{fault} / {command}: restore ok={ok}; " + "; ".join(d))
            log(f"  RESIDUE {fault} / {command}: " + "; ".join(d)[:600])
            # Put the machine back for the next scenario as far as we can.
            self.restore()
            self.baseline = snapshot()
        row["lost"] += lost
        if lost:
            self.failures.append(f"{fault} / {command}: {lost} result(s) lost ({note})")
        if note:
            row["notes"].add(note)

    def kill_at_random(self, argv, window, env=None):
        """Starts argv, SIGKILLs it at a random moment of `window` s (or
        lets it end); returns (seconds it ran, returncode or None)."""
        delay = self.rng.uniform(0, window)
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=env, start_new_session=False)
        t0 = time.monotonic()
        try:
            rc = p.wait(timeout=delay)
            return time.monotonic() - t0, rc
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGKILL)
            p.wait()
            return time.monotonic() - t0, None

    # ------------------------------------------------------------ scenarios

    def base_lab(self):
        """A lab the commands that need one run on (made before the baseline)."""
        subprocess.run(self.cmd("lab", "up", "--name", "fcbase", "--size", "512MiB"),
                       check=True, capture_output=True)
        return Path("/run/iolab/labs/fcbase")

    def sigkill_scenarios(self, base):
        files = base / "files"
        files.mkdir(exist_ok=True)
        for i in range(8):
            (files / f"f{i}").write_bytes(os.urandom(1 << 20))
        listf = self.work / "list.txt"
        listf.write_text("".join(f"{files}/f{i}\n" for i in range(8)))
        target = ["sh", "-c", f"cat {files}/* > /dev/null; sleep 0.3; : {MARK}"]
        self.lab_up_kills()
        scenarios = [
            ("load", lambda n: self.cmd("load", "--directory", str(base), "--rw", "randrw", "--bs", "4k",
                                        "--size", "32m", "--runtime", "3", "--time-based",
                                        "--ioscheduler", "bfq"), 3.0),
            ("trace bio", lambda n: self.cmd("trace", "bio", "--duration", "3s"), 3.0),
            ("sched record", lambda n: self.cmd("sched", "record", "--duration", "3",
                                                "-o", str(self.work / "s.trace")), 3.0),
            ("record", lambda n: self.cmd("record", "--drop-caches", "-o", str(self.work / "r.list"), "--", *target), 3.0),
            ("explain", lambda n: self.cmd("explain", "--", *target), 3.0),
            ("prefetch", lambda n: self.cmd("prefetch", "--scheduler", "bfq", "--wait", str(listf)), 1.5),
        ]
        for name, argv, window in scenarios:
            log(f"SIGKILL × {self.kills}: {name}")
            for n in range(self.kills):
                self.kill_at_random(argv(n), window)
                self.check("SIGKILL", name, extra_cleanup=lambda n=n: self.lab_down(f"fck{n}"))
        log(f"SIGKILL × {max(3, self.kills // 4)}: a model lab's server during a load")
        for n in range(max(3, self.kills // 4)):
            name = f"fcs{n}"
            subprocess.run(self.cmd("lab", "up", "--name", name, "--size", "128MiB", "--device-model", "emmc"),
                           check=True, capture_output=True)
            mnt = f"/run/iolab/labs/{name}"
            stats = json.loads(Path(f"/run/iolab/labs/{name}.model/stats.json").read_text())
            load = subprocess.Popen(self.cmd("load", "--directory", mnt, "--rw", "randrw", "--bs", "4k",
                                             "--size", "16m", "--direct", "--runtime", "60", "--time-based"),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(self.rng.uniform(0.5, 2.5))
            os.kill(stats["pid"], signal.SIGKILL)
            try:
                load.wait(timeout=30)
            except subprocess.TimeoutExpired:
                load.kill()
                self.row("SIGKILL", "model server (during load)")["hangs"] += 1
            self.check("SIGKILL", "model server (during load)", extra_cleanup=lambda name=name: self.lab_down(name))
        log(f"SIGKILL × {self.kills}: lab down")
        for n in range(self.kills):
            name = f"fcd{n}"
            subprocess.run(self.cmd("lab", "up", "--name", name, "--size", "128MiB", "--bw", "40MiB/s"),
                           check=True, capture_output=True)
            self.kill_at_random(self.cmd("lab", "down", name), 0.5)
            self.check("SIGKILL", "lab down", extra_cleanup=lambda name=name: self.lab_down(name))
        self.db_kills("startup", self.startup_argv, 8.0)
        self.db_kills("sweep", self.sweep_argv, 8.0)

    LAB_UPS = [
        # (row, argv after `lab up --name N`, environment)
        ("lab up (throttle)", ["--size", "256MiB", "--bw", "20MiB/s"], {}),
        ("lab up (device model)", ["--size", "256MiB", "--device-model", "emmc"], {}),
        # What a cgroup-v2-only host gets on its defaults: the model, 4 GiB.
        ("lab up (defaults, no cgroup v1)", ["--bw", "40MiB/s"], {"IOLAB_NO_CGROUP_V1": "1"}),
    ]

    def lab_up_kills(self):
        """SIGKILL of `lab up` at every point of its life: its duration is
        measured first (median of 3 whole runs), then the kills are spread
        evenly over it (kill k of N at a random moment of the k-th N-th of
        1.1 × the duration), so every step — image, loop devices, FUSE
        mount and server, mkfs, queue settings, mount — is hit."""
        for row, args, extra in self.LAB_UPS:
            env = {**os.environ, **extra}
            took = []
            for n in range(3):
                t0 = time.monotonic()
                subprocess.run(self.cmd("lab", "up", "--name", f"fcm{n}", *args), env=env, check=True,
                               capture_output=True, timeout=HANG_S)
                took.append(time.monotonic() - t0)
                self.lab_down(f"fcm{n}")
            whole = sorted(took)[1] * 1.1
            kills = max(self.kills, 20)
            log(f"SIGKILL × {kills}: {row} (a whole run takes {sorted(took)[1]:.2f} s)")
            at = []
            for n in range(kills):
                delay = whole * (n + self.rng.random()) / kills
                p = subprocess.Popen(self.cmd("lab", "up", "--name", f"fck{n}", *args), env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                t0 = time.monotonic()
                try:
                    p.wait(timeout=delay)
                    at.append("done")
                except subprocess.TimeoutExpired:
                    p.send_signal(signal.SIGKILL)
                    p.wait()
                    at.append(f"{time.monotonic() - t0:.2f}")
                self.check("SIGKILL", row, extra_cleanup=lambda n=n: self.lab_down(f"fck{n}"))
            killed = [float(a) for a in at if a != "done"]
            self.row("SIGKILL", row)["notes"].add(
                f"whole run {sorted(took)[1]:.2f} s; {len(killed)} killed between "
                f"{min(killed, default=0):.2f} and {max(killed, default=0):.2f} s, {at.count('done')} finished first")

    def in_place_dm(self):
        """SIGKILL of `startup --in` on a laptop's stack (ext4 on dm-crypt
        on dm-linear on a partition): in a qemu guest booted from Debian's
        kernel (scripts/guest/), as this kernel has no device-mapper. The
        guest compares the state of every queue, bdi, trace instance and
        mount before the campaign with the state after each kill and
        `iolab restore`; a start reported (a progress line is printed
        after its start is stored) but not in the database is lost."""
        fault, command = "SIGKILL (in place, dm-crypt stack, qemu guest)", "startup --in"
        if shutil.which("qemu-system-x86_64") is None:
            log("skip the in-place case: no qemu-system-x86_64 (apt-get install qemu-system-x86)")
            self.row(fault, command)["notes"].add("not run: no qemu-system-x86_64")
            return
        log(f"SIGKILL × {self.kills}: startup --in on a dm-crypt stack, in a qemu guest")
        guest, out = self.work / "guest", self.work / "guest-out"
        env = {**os.environ, "IOLAB_BIN": self.iolab, "IOLAB_GUEST_DIR": str(guest),
               "IOLAB_GUEST_DEBS": "/var/cache/iolab-guest"}
        subprocess.run(["bash", str(REPO / "scripts/guest/build.sh")], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        delays = [f"{self.rng.uniform(1.0, 25.0):.1f}" for _ in range(self.kills)]
        env["IOLAB_GUEST_ARGS"] = ",".join(delays)
        env["IOLAB_GUEST_TIMEOUT"] = str(60 * (5 + self.kills))
        guest_run = subprocess.run(["bash", str(REPO / "scripts/guest/run.sh"), "fault", str(out)],
                                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if guest_run.returncode != 0:
            self.row(fault, command)["hangs"] += 1
            self.failures.append(f"{fault}: the guest did not finish: {guest_run.stderr.strip()[-600:]}")
            return
        before = (out / "state-before").read_text()
        stored_at_kill = []
        for n in range(1, int(read(out / "kills") or 0) + 1):
            row = self.row(fault, command)
            row["runs"] += 1
            after = (out / f"{n}.state-after").read_text()
            ls = (out / f"{n}.ls").read_text()
            reported = int(read(out / f"{n}.lines") or 0)
            stored = len(json.loads((out / f"{n}.json").read_text() or '{"runs":[]}')["runs"])
            residue = [line for line in after.splitlines() if line not in before.splitlines()]
            residue += [f"gone: {line}" for line in before.splitlines() if line not in after.splitlines()]
            if "iolab" in ls:
                residue.append("scratch directory left: " + ls.replace("\n", " "))
            if residue:
                self.failures.append(f"{fault} kill {n} (after {delays[n - 1]} s): " + "; ".join(residue))
            else:
                row["restored"] += 1
            if stored < reported:
                row["lost"] += reported - stored
                self.failures.append(f"{fault} kill {n}: {reported} starts reported, {stored} stored")
            stored_at_kill.append(stored)
        if stored_at_kill:
            self.row(fault, command)["notes"].add(
                f"kills {min(map(float, delays))}–{max(map(float, delays))} s after the start; starts stored at the kill: "
                f"{min(stored_at_kill)}–{max(stored_at_kill)} (of 16), each one reported before the kill among them")

    def lab_down(self, name):
        subprocess.run(self.cmd("lab", "down", name), capture_output=True, timeout=HANG_S)

    def startup_argv(self, db, marks):
        return self.cmd("startup", "--lab-size", "256MiB", "--bw", "40MiB/s",
                        "--schedulers", "mq-deadline,bfq", "--workloads", "1r",
                        "--reps", "3", "--warmup", "0.3", "--timeout", "3",
                        "--load-option", "size=32M", "--db", str(db), "--",
                        "sh", "-c", f"cat /usr/bin/* > /dev/null 2>&1; echo x >> {marks}; : {MARK}")

    def sweep_argv(self, db, marks):
        return self.cmd("sweep", "--lab-size", "256MiB", "--schedulers", "none,bfq",
                        "--patterns", "1/1", "--rw", "read,write", "--reps", "1",
                        "--size", "8M", "--db", str(db))

    def db_kills(self, command, argv_of, window):
        log(f"SIGKILL × {self.kills}: {command}")
        for n in range(self.kills):
            db = self.work / f"{command}-{n}.db"
            marks = self.work / f"{command}-{n}.marks"
            self.kill_at_random(argv_of(db, marks), window)
            lost, note = self.db_lost(db, marks)
            self.check("SIGKILL", command, lost=lost, note=note)

    def db_lost(self, db, marks):
        """Integrity, and runs missing: targets that finished more than one
        start before the end must each have a stored run."""
        if not db.exists():
            return 0, None
        try:
            c = sqlite3.connect(db)
            integrity = c.execute("PRAGMA integrity_check").fetchone()[0]
            runs = c.execute("SELECT COUNT(*) FROM run").fetchone()[0] \
                if c.execute("SELECT 1 FROM sqlite_master WHERE name='run'").fetchone() else 0
            c.close()
        except sqlite3.Error as e:
            return 1, f"db unreadable: {e}"
        if integrity != "ok":
            return 1, f"integrity_check: {integrity}"
        done = len(read(marks).splitlines()) if marks.exists() and read(marks) else 0
        missing = max(0, (done - 1) - runs)
        return missing, (f"{done} targets finished, {runs} runs stored" if missing else None)

    def disk_full(self):
        log("disk full: load, startup, results write")
        # Load: a 64 MiB lab; the load's 30 MiB fit when it starts, but a
        # ballast writer takes the space at the same moment: the load is
        # refused up front or meets ENOSPC laying out or writing, and must
        # say so (no crash, no hang) and leave nothing behind.
        for n in range(3):
            subprocess.run(self.cmd("lab", "up", "--name", "fcfull", "--size", "64MiB"), check=True, capture_output=True)
            mnt = "/run/iolab/labs/fcfull"
            ballast = subprocess.Popen(["dd", "if=/dev/zero", f"of={mnt}/ballast", "bs=1M", "count=48"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                r = subprocess.run(self.cmd("load", "--directory", mnt, "--rw", "write", "--bs", "256k",
                                            "--size", "30m", "--loops", "3", "--json"),
                                   capture_output=True, text=True, timeout=HANG_S)
                hung = False
            except subprocess.TimeoutExpired:
                hung, r = True, None
            ballast.wait()
            if hung:
                self.row("disk full", "load")["hangs"] += 1
            crashed = r is not None and r.returncode not in (0, 1, 2)
            said = (r.stderr.strip().splitlines() or [""])[-1][:110] if r else "hung"
            self.check("disk full", "load", lost=int(crashed), note=f"exit {r.returncode if r else '-'}: {said}",
                       extra_cleanup=lambda: self.lab_down("fcfull"))
        # Startup: the target fills the lab's filesystem.
        for n in range(3):
            db = self.work / f"full-startup-{n}.db"
            marks = self.work / f"full-startup-{n}.marks"
            r = subprocess.run(self.cmd("startup", "--lab-size", "128MiB", "--schedulers", "none",
                                        "--workloads", "1w", "--reps", "2", "--warmup", "0.3",
                                        "--timeout", "10", "--load-option", "size=16M", "--db", str(db), "--",
                                        "sh", "-c", f"echo x >> {marks}; dd if=/dev/zero of={{dir}}/fill bs=1M count=400 status=none; rm -f {{dir}}/fill; : {MARK}"),
                               capture_output=True, text=True, timeout=600)
            lost, note = self.db_lost(db, marks)
            self.check("disk full", "startup", lost=lost, note=note or f"exit {r.returncode}")
        # Results write: the database on a 1 MiB tmpfs the campaign mounts.
        mnt = self.work / "tinyfs"
        mnt.mkdir(exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "fcampaign", str(mnt)], check=True)
        try:
            (mnt / "ballast").write_bytes(b"\0" * (1024 * 1024 - 96 * 1024))
            db = mnt / "r.db"
            marks = self.work / "full-db.marks"
            r = subprocess.run(self.cmd("startup", "--lab-size", "128MiB", "--schedulers", "none",
                                        "--workloads", "idle", "--reps", "40", "--db", str(db), "--",
                                        "sh", "-c", f"echo x >> {marks}; : {MARK}"),
                               capture_output=True, text=True, timeout=600)
            lost, note = self.db_lost(db, marks) if db.exists() else (0, None)
            said = r.stderr.strip().splitlines()[-1:] or [""]
            one_line = r.returncode != 0 and len(r.stderr.strip().splitlines()) <= 2
        finally:
            subprocess.run(["umount", str(mnt)])
        self.check("disk full", "results write", lost=lost + (0 if one_line else 1),
                   note=note or f"exit {r.returncode}: {said[0][:100]}")

    def shared_db(self):
        log("two iolab processes, one results db")
        for n in range(3):
            db = self.work / f"shared-{n}.db"
            marks = [self.work / f"shared-{n}-{k}.marks" for k in range(2)]
            ps = [subprocess.Popen(self.cmd("startup", "--lab-size", "128MiB", "--schedulers", "none",
                                            "--workloads", "1r", "--reps", "3", "--warmup", "0.3",
                                            "--load-option", "size=16M", "--db", str(db), "--",
                                            "sh", "-c", f"cat /usr/bin/* >/dev/null 2>&1; echo x >> {m}; : {MARK}"),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                  for m in marks]
            errs = [p.communicate(timeout=600)[1] for p in ps]
            c = sqlite3.connect(db)
            integrity = c.execute("PRAGMA integrity_check").fetchone()[0]
            per = dict(c.execute("SELECT experiment_id, COUNT(*) FROM run GROUP BY experiment_id").fetchall())
            c.close()
            want = 6  # 3 idle + 3 1r each
            lost = sum(max(0, want - per.get(e, 0)) for e in (1, 2)) + (integrity != "ok")
            note = None if not lost else f"runs {per}, integrity {integrity}, rc {[p.returncode for p in ps]} {errs}"
            self.check("two writers, one db", "startup", lost=lost, note=note)

    def read_only(self):
        log("lab filesystem remounted read-only mid-run")
        for n in range(3):
            name = f"fcro{n}"
            subprocess.run(self.cmd("lab", "up", "--name", name, "--size", "256MiB"), check=True, capture_output=True)
            mnt = f"/run/iolab/labs/{name}"
            db = self.work / f"ro-{n}.db"
            marks = self.work / f"ro-{n}.marks"
            p = subprocess.Popen(self.cmd("startup", "--lab", name, "--schedulers", "none,bfq",
                                          "--workloads", "1w", "--reps", "6", "--warmup", "0.3",
                                          "--load-option", "size=16M", "--db", str(db), "--",
                                          "sh", "-c", f"echo x >> {marks}; cat /usr/bin/* >/dev/null 2>&1; : {MARK}"),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            time.sleep(self.rng.uniform(1.5, 4.0))
            subprocess.run(["mount", "-o", "remount,ro", mnt], capture_output=True)
            try:
                err = p.communicate(timeout=600)[1]
                hung = False
            except subprocess.TimeoutExpired:
                p.kill()
                err, hung = "", True
            lost, note = self.db_lost(db, marks)
            if hung:
                self.row("fs read-only", "startup")["hangs"] += 1
            self.check("fs read-only", "startup", lost=lost,
                       note=note or f"exit {p.returncode}: {err.strip().splitlines()[-1][:100] if err.strip() else ''}",
                       extra_cleanup=lambda name=name: self.lab_down(name))

    # ------------------------------------------------------------ report

    def table(self):
        lines = ["| fault | command | runs | restored exactly | results lost | hangs |",
                 "|---|---|---:|---:|---:|---:|"]
        total = 0
        for (fault, command), r in self.rows.items():
            total += r["runs"]
            lines.append(f"| {fault} | {command} | {r['runs']} | {r['restored']} | {r['lost']} | {r['hangs']} |")
        lines.append(f"| **all** | | **{total}** | **{sum(r['restored'] for r in self.rows.values())}** | "
                     f"**{sum(r['lost'] for r in self.rows.values())}** | **{sum(r['hangs'] for r in self.rows.values())}** |")
        notes = [f"- {fault} / {command}: " + "; ".join(sorted(r["notes"]))
                 for (fault, command), r in self.rows.items() if r["notes"]]
        if notes:
            lines += ["", "What iolab said or did in the scenarios without a kill:", *notes]
        return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=22, help="SIGKILLs per command (default 22: 220 in all)")
    ap.add_argument("--seed", type=int, default=20261124)
    ap.add_argument("--out", help="also write the Markdown table here")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--iolab", help="the binary (default: target/release/iolab)")
    ap.add_argument("--only", choices=["in-place", "lab-up"], help="run one case only")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("fault_campaign.py: needs root (it makes labs and kills iolab mid-change)")
    if not a.no_build and not a.iolab:
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "iolab"], cwd=REPO, check=True)
    iolab = a.iolab or str(REPO / "target/release/iolab")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="iolab-faults-", dir="/var/tmp") as work:
        c = Campaign(iolab, work, a.seed, a.kills)
        c.restore()
        if a.only == "in-place":
            c.in_place_dm()
        elif a.only == "lab-up":
            c.baseline = snapshot()
            try:
                c.lab_up_kills()
            finally:
                c.restore()
        else:
            base = c.base_lab()
            try:
                c.baseline = snapshot()
                c.sigkill_scenarios(base)
                c.disk_full()
                c.shared_db()
                c.read_only()
            finally:
                c.lab_down("fcbase")
                c.restore()
            c.in_place_dm()
    table = c.table()
    only = f" --only {a.only}" if a.only else ""
    head = (f"Command: `sudo bench/fault_campaign.py --kills {a.kills} --seed {a.seed}{only}` "
            f"({time.monotonic() - t0:.0f} s, {time.strftime('%Y-%m-%d')}, kernel {os.uname().release})\n\n")
    print(head + table)
    if a.out:
        Path(a.out).write_text(head + table + "\n")
    if c.failures:
        print("\nfailures:\n" + "\n".join(c.failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
