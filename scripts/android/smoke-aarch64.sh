#!/usr/bin/env bash
# The static aarch64 iolab in the Android-shaped rig (rig.sh), under
# qemu-aarch64-static copied into it (no binfmt registration needed): a lab
# with toybox only, trace bio by a /dev/block path (tracefs: BPF does not
# run under qemu-user), and evicting starts of the EROFS app.
#
#   bash scripts/android/smoke-aarch64.sh [BINARY]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-target/aarch64/aarch64-unknown-linux-gnu/release/iolab}
[ -x "$bin" ] || { echo "smoke-aarch64: no binary $bin: run scripts/build-aarch64.sh first" >&2; exit 2; }
qemu=$(command -v qemu-aarch64-static) || { echo "smoke-aarch64: qemu-aarch64-static is not installed" >&2; exit 2; }
dir=$(mktemp -d /var/tmp/rig-a64.XXXXXX)
rig() { bash scripts/android/rig.sh "$1" "$dir" "${@:2}"; }
trap 'rig exec /system/bin/sh -c "cd /data/local/tmp && ./qemu-aarch64 ./iolab restore" >/dev/null 2>&1 || true; rig down; rm -rf "$dir"' EXIT
rig up
rig push "$qemu" /data/local/tmp/qemu-aarch64
rig push "$bin" /data/local/tmp/iolab
run() { rig exec /system/bin/sh -c "cd /data/local/tmp && ./qemu-aarch64 ./iolab $1"; }
app=/system_ext/priv-app/RigApp
run "lab up --name A --size 128MiB"
run "lab status A" | grep -q 'device      /dev/block/loop' || { echo "smoke-aarch64: lab A is not on a /dev/block node" >&2; exit 1; }
run "trace bio -d /dev/block/by-name/system_ext --summary -- sh -c 'echo 3 > /proc/sys/vm/drop_caches; cat $app/RigApp.apk > /dev/null'" | tee "$dir/bio.txt"
grep -q ' R ' "$dir/bio.txt" || { echo "smoke-aarch64: trace bio saw no reads of the app" >&2; exit 1; }
run "startup --lab A --cold evict --evict $app --workloads idle --reps 2 --schedulers none --timeout 60 -- sh -c 'cat $app/RigApp.apk $app/oat/arm64/RigApp.odex > /dev/null'" | tee "$dir/startup.txt"
grep -q 'max 0.0 %' "$dir/startup.txt" || { echo "smoke-aarch64: a start was not cold" >&2; exit 1; }
run "lab down A"
echo "smoke-aarch64: the aarch64 binary ran in the rig under qemu-user: lab, trace bio, evicting starts"
