#!/usr/bin/env bash
# A static x86-64 iolab, for `init=/path/to/iolab -- boot-init ...`: as
# the kernel's init it runs before any filesystem with shared libraries is
# there (an initramfs, a root not yet mounted), and a dynamically linked
# init that cannot load its libraries panics the kernel. glibc's static
# libc (libc6-dev) and rustc's crt-static; then the proof: boot-init as
# PID 1 of a pid namespace, chrooted into a directory that holds nothing
# but this binary and a static busybox, reaches its init.
#
#   bash scripts/build-static-x86_64.sh            # debug build
#   IOLAB_STATIC_PROFILE=release bash scripts/...   # release build
#   IOLAB_STATIC_STEP=build bash scripts/...        # only compile
#
# The binary: target/static/x86_64-unknown-linux-gnu/<profile>/iolab.
set -euo pipefail
cd "$(dirname "$0")/.."
T=x86_64-unknown-linux-gnu
profile=${IOLAB_STATIC_PROFILE:-dev}
dir=$([ "$profile" = dev ] && echo debug || echo "$profile")
export CARGO_TARGET_DIR=${IOLAB_STATIC_TARGET_DIR:-target/static}
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+crt-static"
for p in libc6-dev busybox-static file; do
    dpkg -s "$p" >/dev/null 2>&1 || { apt-get update -qq; apt-get install -y -qq "$p" >/dev/null; }
done
cargo build --profile "$profile" --locked --target "$T" -p iolab --bin iolab
[ "${IOLAB_STATIC_STEP:-all}" = build ] && exit 0
bin="$CARGO_TARGET_DIR/$T/$dir/iolab"
file "$bin"
file "$bin" | grep -Eq "statically linked|static-pie linked" || { echo "not statically linked: $bin"; exit 1; }

# boot-init as PID 1 with no library and no /proc anywhere, as the
# kernel's init before anything is mounted: the helper starts (argv[0] is
# its program) and reports the missing list, init runs, nothing panics.
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/proc" "$root/run"
cp "$bin" "$root/bin/iolab"
cp "$(command -v busybox)" "$root/bin/busybox"
out=$(timeout 60 unshare --pid --fork chroot "$root" /bin/iolab splash boot-init \
    --prefetch /missing.list -- /bin/busybox sh -c 'echo "init ran as pid $$"' 2>&1) || true
echo "$out"
echo "$out" | grep -q "init ran as pid 1" || { echo "boot-init as PID 1 without libraries did not reach init"; exit 1; }
echo "$out" | grep -q "boot-init: helper [0-9]*: iolab prefetch" || { echo "boot-init without /proc did not start its helper"; exit 1; }
echo "static x86-64 iolab: $(stat -c %s "$bin") bytes, boot-init reaches init without libraries"
