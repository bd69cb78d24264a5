#!/usr/bin/env bash
# The commands a new user runs first, on their defaults (no lab size, no
# backend given), on three hosts: this one as it is, this one with
# IOLAB_NO_CGROUP_V1=1 (as a host without cgroup v1 behaves), and a qemu
# guest that mounts only cgroup v2 (scripts/guest/scenarios/v2host.sh).
# The list of commands is scripts/guest/scenarios/defaults.sh, shared with
# the guest. Prints a Markdown table: exit code, seconds and the last line
# each command printed, per host.
#
#   sudo bash bench/defaults_table.sh [ci|all|full] [OUT]
#
# MODE (default all): ci = the short list CI runs in the guest; all = with
# `demo`; full = also `startup --bw 40MiB/s -- APP` with every other option
# at its default (an hour or more in the guest). OUT (default
# /var/tmp/iolab-defaults) keeps every command's output. Builds the release
# binary unless IOLAB is set.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
out=${2:-/var/tmp/iolab-defaults}
[ "$(id -u)" = 0 ] || { echo "defaults_table.sh: needs root (labs, mounts)" >&2; exit 2; }
if [ -z "${IOLAB:-}" ]; then
    cargo build --release --locked -p iolab >&2
    IOLAB=$PWD/target/release/iolab
fi
export IOLAB
mkdir -p "$out"
# The app of `startup --in`: 24 MiB on this host's own filesystem.
app=$(mktemp -d /var/tmp/iolab-defaults-app.XXXXXX)
trap 'rm -rf "$app"' EXIT
mkdir -p "$app/app"
dd if=/dev/urandom of="$app/app/data" bs=1M count=24 status=none
sync

. scripts/guest/scenarios/defaults.sh
# IOLAB_DEFAULTS_HOSTS=guest reruns the guest alone, beside the host
# results already in OUT.
hosts=${IOLAB_DEFAULTS_HOSTS:-host no-v1 guest}
if [[ " $hosts " == *" host "* ]]; then
    echo "== this host" >&2
    rm -rf "$out/host" && mkdir -p "$out/host"
    defaults_run "$out/host" "$app" "$mode" >&2
fi
if [[ " $hosts " == *" no-v1 "* ]]; then
    echo "== this host, IOLAB_NO_CGROUP_V1=1" >&2
    rm -rf "$out/no-v1" && mkdir -p "$out/no-v1"
    IOLAB_NO_CGROUP_V1=1 defaults_run "$out/no-v1" "$app" "$mode" >&2
fi

if [[ " $hosts " == *" guest "* ]]; then
echo "== the cgroup-v2-only guest" >&2
rm -rf "$out/guest" && mkdir -p "$out/guest"
IOLAB_BIN=$IOLAB IOLAB_GUEST_DIR="$out/guest-build" IOLAB_GUEST_DEBS=/var/cache/iolab-guest \
    bash scripts/guest/build.sh >&2
# 4 GiB of RAM, as a desktop has at least (sweep --max's 1 GiB tmpfs lab
# needs twice it); 6 GiB of (sparse) disk for /var/tmp's 4 GiB lab image.
IOLAB_GUEST_DIR="$out/guest-build" IOLAB_GUEST_DISK_SIZE=6G IOLAB_GUEST_MEM=4096 IOLAB_GUEST_ARGS=$mode \
    IOLAB_GUEST_TIMEOUT=${IOLAB_GUEST_TIMEOUT:-10800} \
    bash scripts/guest/run.sh v2host "$out/guest" >&2 || true
fi

# One row per command: exit code, seconds, last line, per host.
cell() {
    local f=$1/table name=$2
    [ -f "$f" ] || { echo "not run"; return; }
    awk -F'\t' -v n="$name" '$1 == n { gsub(/\|/, "/", $4); printf "%s (%s): %s", $2, $3, substr($4, 1, 90) }' "$f"
}
echo "Command: \`sudo bash bench/defaults_table.sh $mode\` ($(date +%F), kernel $(uname -r); guest: $(head -1 "$out/guest/host" 2>/dev/null || echo none))"
echo
echo "| command | this host (cgroup v1) | IOLAB_NO_CGROUP_V1=1 | cgroup-v2-only guest |"
echo "|---|---|---|---|"
for name in $(cut -f1 "$out/host/table"); do
    echo "| $name | $(cell "$out/host" "$name") | $(cell "$out/no-v1" "$name") | $(cell "$out/guest" "$name") |"
done
