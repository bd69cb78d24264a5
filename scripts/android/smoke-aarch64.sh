#!/usr/bin/env bash
# The stripped static aarch64 iolab (what `iolab remote` pushes to a
# phone) in the strict Android-shaped rig as an arm64 phone (RIG_ARCH=aarch64:
# `uname -m` says aarch64, aarch64 binaries run through qemu-aarch64-static
# by binfmt_misc while the rig is up; no ns_last_pid, read-only /, no
# debugfs), driven from the host as a phone is:
#   1. iolab remote --adb -- startup --am-start, in place on /data,
#      mq-deadline and bfq, idle and 1r1w, 3 reps, cold, with
#      --target-ioprio idle --target-nice 5 --target-hold --explain --sched
#      --compile speed; then warm and hot, 3 reps each; then cold without
#      --target-hold; then cold again from the USAP pool, the app with a
#      :service process, a WebView renderer and another package whose
#      names share its last 15 characters: every held start ok and of its
#      kind (am's LaunchState), the app (the package's uid) found by its
#      rename and followed, what Android set again set back, and the
#      host's kernel shows every thread of the live app's processes at what
#      iolab stored (idle I/O priority and nice 5); every unheld start
#      invalid with Android's top-app boost named;
#   2. on the device: a lab with toybox only (its status saying what
#      debugfs would have shown is unknown), trace bio by a /dev/block path
#      (tracefs: BPF does not run under qemu-user, and `--tracer bpf` says
#      why and exits 2), evicting starts of the
#      EROFS app.
#
#   bash scripts/android/smoke-aarch64.sh [AARCH64-BINARY [HOST-BINARY]]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-target/aarch64/aarch64-unknown-linux-gnu/release/iolab-device}
host=${2:-target/debug/iolab}
[ -x "$bin" ] || { echo "smoke-aarch64: no binary $bin: run scripts/build-aarch64.sh first" >&2; exit 2; }
[ -x "$host" ] || { echo "smoke-aarch64: no host binary $host: cargo build -p iolab" >&2; exit 2; }
dir=$(mktemp -d /var/tmp/rig-a64.XXXXXX)
rig() { bash scripts/android/rig.sh "$1" "$dir" "${@:2}"; }
run() { rig exec /system/bin/sh -c "cd /data/local/tmp && ./iolab-a64 $1"; }
trap 'run restore >/dev/null 2>&1 || true; rig down; rm -rf "$dir"' EXIT
RIG_ARCH=aarch64 rig up
fail() { echo "smoke-aarch64: $*" >&2; exit 1; }
app=/system_ext/priv-app/RigApp
opts=(--target-ioprio idle --target-nice 5 --target-hold --explain --sched)

# 1. The phone runs, from the host.
rig exec /system/bin/sh -c 'mkdir -p /data/local/tmp/app'
phone() {
    IOLAB_RIG_DIR=$dir "$host" remote --adb rig --adb-program scripts/android/adb --binary "$bin" \
        --db "$dir/host.db" -- startup --am-start com.example.iolab.rigapp/.Main \
        --in /data/local/tmp/app "${opts[@]}" --timeout 60 "$@"
}
# Checks experiment ID of the host's database, right after it ran (the
# live app then is its last start's): its runs' outcome and kind (am's
# LaunchState), how the app was found, and the host kernel's view of every
# thread of the live app.
check() {
    "$host" results --db "$dir/host.db" export "$1" > "$dir/export-$1.json"
    python3 - "$dir/export-$1.json" "$2" "$3" "$4" <<'EOF' || fail "experiment $1 is not what it should be"
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
path, state, found, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
e = json.load(open(path))
runs = e["runs"]
assert e["experiment"]["status"] == "done", e["experiment"]["status"]
assert len(runs) == count, len(runs)
for r in runs:
    x = r["extra"]
    assert r["outcome"] == "ok", r
    assert x["am_start"]["result"]["launch_state"] == state, x["am_start"]
    assert x["am_start"]["result"]["total_ms"] > 0, x["am_start"]
    app = x["app_process"]
    assert app["found_by"] == found and app["ioprio"] == "idle", app
    assert app["uid"] == 10123 and app["held"] and app["reapplied"] >= 1, app
    assert all(t["nice"] == 5 and t["ioprio"] == "idle" for t in app["threads_end"]), app
    assert x["observed"]["explain"]["main_thread"]["tid"] == app["pid"], x["observed"]["explain"]
    c = x["cold"]
    if c:
        assert c["cached_bytes"] - c["mapped_before_bytes"] <= 0.01 * c["bytes"], c
pid = runs[-1]["extra"]["app_process"]["pid"]
view = []
for tid in os.listdir(f"/proc/{pid}/task"):
    klass = libc.syscall(252, 1, int(tid)) >> 13  # ioprio_get (x86-64: 252)
    nice = int(open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()[16])
    view.append((int(tid), klass, nice))
assert len(view) >= 5 and all(k == 3 and n == 5 for _, k, n in view), view
print(f"smoke-aarch64: {count} {state} starts ok; the live app's {len(view)} threads at idle I/O priority and nice 5 by the host's kernel")
EOF
}
# The last start's stored threads_end against the host's kernel: every
# thread of every process of the app, as iolab stored it.
kernel_is_stored() {
    python3 - "$dir/export-$1.json" <<'EOF' || fail "experiment $1: the kernel does not show what iolab stored"
import ctypes, json, sys
libc = ctypes.CDLL(None, use_errno=True)
runs = json.load(open(sys.argv[1]))["runs"]
for t in runs[-1]["extra"]["app_process"]["threads_end"]:
    klass = libc.syscall(252, 1, t["tid"]) >> 13
    nice = int(open(f"/proc/{t['tid']}/stat").read().rsplit(")", 1)[1].split()[16])
    assert nice == t["nice"] and {1: "rt", 2: "be", 3: "idle"}.get(klass, "none") == t["ioprio"].split(":")[0], (t, klass, nice)
EOF
}
phone --schedulers mq-deadline,bfq --workloads idle,1r1w --load-option size=64M --reps 3 --compile speed
check 1 COLD task_rename 12
python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); assert e["experiment"]["config"]["dexopt"]["dexopt"][0]["status"] == "speed"; assert "aarch64" in json.dumps(e["experiment"])' "$dir/export-1.json" \
    || fail "the dexopt state or the device's architecture is not on record"
phone --schedulers none --workloads idle --reps 3 --start-mode warm
check 2 WARM running 3
phone --schedulers none --workloads idle --reps 3 --start-mode hot
check 3 HOT running 3
kernel_is_stored 3
# Unheld: Android's resets make every start invalid, the run exits 1.
opts=(--target-ioprio idle --target-nice 5)
if phone --schedulers none --workloads idle --reps 2; then fail "an unheld run exited 0"; fi
"$host" results --db "$dir/host.db" export 4 > "$dir/export-4.json"
python3 -c 'import json,sys; rs=json.load(open(sys.argv[1]))["runs"]; assert len(rs) == 2 and all(r["outcome"] == "invalid" and "THREAD_PRIORITY_TOP_APP_BOOST" in r["reason"] for r in rs), rs' "$dir/export-4.json" \
    || fail "the unheld starts are not invalid with Android's changes named"
kernel_is_stored 4
opts=(--target-ioprio idle --target-nice 5 --target-hold --explain --sched)
rig exec /system/bin/sh -c 'setprop persist.device_config.runtime_native.usap_pool_enabled true && setprop debug.rig.service 1 && setprop debug.rig.webview 1 && setprop debug.rig.decoy org.example.iolab.rigapp'
phone --schedulers none --workloads idle --reps 3
check 5 COLD task_rename 3
kernel_is_stored 5
python3 - "$dir/export-5.json" <<'EOF' || fail "the USAP starts: their apps' other processes, or the other package"
import json, sys
for r in json.load(open(sys.argv[1]))["runs"]:
    a = r["extra"]["app_process"]
    assert a["born_before_launch"], a
    assert any("uid 10124" in n for n in a["not_the_app"]), a
    by = sorted(p["found_by"] for p in a["processes"])
    assert by == ["isolated uid, forked by webview_zygote", "uid"], a["processes"]
EOF

# 2. On the device itself, with toybox only.
rig push "$bin" /data/local/tmp/iolab-a64
run "lab up --name A --size 128MiB"
run "lab status A" | tee "$dir/status.txt"
grep -q 'device      /dev/block/loop' "$dir/status.txt" || fail "lab A is not on a /dev/block node"
grep -q 'unknown: debugfs unavailable' "$dir/status.txt" || fail "lab status does not say debugfs was unavailable"
run "trace bio -d /dev/block/by-name/system_ext --summary -- sh -c 'echo 3 > /proc/sys/vm/drop_caches; cat $app/RigApp.apk > /dev/null'" | tee "$dir/bio.txt"
grep -q ' R ' "$dir/bio.txt" || fail "trace bio saw no reads of the app"
# qemu-user does not carry bpf(): `--tracer bpf` must refuse with the
# reason (a usage error, exit 2), not start or fall back in silence.
rc=0
run "trace bio -d /dev/block/by-name/system_ext --hist --tracer bpf --duration 1s" > "$dir/bpf.txt" 2>&1 || rc=$?
cat "$dir/bpf.txt"
[ "$rc" = 2 ] || fail "trace bio --tracer bpf under qemu-user exited $rc, not 2: $(cat "$dir/bpf.txt")"
grep -q -- '--tracer bpf: ' "$dir/bpf.txt" || fail "trace bio --tracer bpf did not say why: $(cat "$dir/bpf.txt")"
run "startup --lab A --cold evict --evict $app --workloads idle --reps 2 --schedulers none --timeout 60 -- sh -c 'cat $app/RigApp.apk $app/oat/arm64/RigApp.odex > /dev/null'" | tee "$dir/startup.txt"
grep -q 'max 0.0 %' "$dir/startup.txt" || fail "a start was not cold"
run "lab down A"
echo "smoke-aarch64: the stripped aarch64 binary ($(stat -c %s "$bin") bytes) ran in the strict rig under qemu-user: phone runs over adb cold, warm, hot and from the USAP pool, a lab, trace bio, evicting starts"
