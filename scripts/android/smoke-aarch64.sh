#!/usr/bin/env bash
# The static aarch64 iolab in the Android-shaped rig as an arm64 phone
# (RIG_ARCH=aarch64: `uname -m` says aarch64, aarch64 binaries run through
# qemu-aarch64-static by binfmt_misc while the rig is up), driven from the
# host as a phone is:
#   1. iolab remote --adb -- startup --am-start, in place on /data,
#      mq-deadline and bfq, idle and 1r1w, 3 reps, --target-ioprio idle,
#      --compile speed: 12 valid cold starts, the app at idle priority;
#   2. on the device: a lab with toybox only, trace bio by a /dev/block path
#      (tracefs: BPF does not run under qemu-user), evicting starts of the
#      EROFS app.
#
#   bash scripts/android/smoke-aarch64.sh [AARCH64-BINARY [HOST-BINARY]]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-target/aarch64/aarch64-unknown-linux-gnu/release/iolab}
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

# 1. The phone run, from the host.
rig exec /system/bin/sh -c 'mkdir -p /data/local/tmp/app'
IOLAB_RIG_DIR=$dir "$host" remote --adb rig --adb-program scripts/android/adb --binary "$bin" \
    --db "$dir/host.db" -- startup --am-start com.example.iolab.rigapp/.Main \
    --in /data/local/tmp/app --schedulers mq-deadline,bfq --workloads idle,1r1w \
    --load-option size=64M --reps 3 --timeout 60 --target-ioprio idle --compile speed
"$host" results --db "$dir/host.db" export 1 > "$dir/export.json"
python3 - "$dir/export.json" <<'EOF' || fail "the phone run is not what it should be"
import json, sys
d = json.load(open(sys.argv[1]))
runs = d["runs"]
assert d["experiment"]["status"] == "done", d["experiment"]["status"]
assert len(runs) == 12, len(runs)
for r in runs:
    assert r["outcome"] == "ok", r
    assert r["extra"]["app_process"]["ioprio"] == "idle", r["extra"]["app_process"]
    c = r["extra"]["cold"]
    assert c["cached_bytes"] - c["mapped_before_bytes"] <= 0.01 * c["bytes"], c
assert d["experiment"]["config"]["dexopt"]["dexopt"][0]["status"] == "speed"
assert "aarch64" in json.dumps(d["experiment"]), "the device's architecture is not on record"
print("smoke-aarch64: phone run: 12 valid cold starts, app at idle I/O priority, dexopt speed")
EOF

# 2. On the device itself, with toybox only.
rig push "$bin" /data/local/tmp/iolab-a64
run "lab up --name A --size 128MiB"
run "lab status A" | grep -q 'device      /dev/block/loop' || fail "lab A is not on a /dev/block node"
run "trace bio -d /dev/block/by-name/system_ext --summary -- sh -c 'echo 3 > /proc/sys/vm/drop_caches; cat $app/RigApp.apk > /dev/null'" | tee "$dir/bio.txt"
grep -q ' R ' "$dir/bio.txt" || fail "trace bio saw no reads of the app"
run "startup --lab A --cold evict --evict $app --workloads idle --reps 2 --schedulers none --timeout 60 -- sh -c 'cat $app/RigApp.apk $app/oat/arm64/RigApp.odex > /dev/null'" | tee "$dir/startup.txt"
grep -q 'max 0.0 %' "$dir/startup.txt" || fail "a start was not cold"
run "lab down A"
echo "smoke-aarch64: the aarch64 binary ran in the rig under qemu-user: a phone run over adb, a lab, trace bio, evicting starts"
