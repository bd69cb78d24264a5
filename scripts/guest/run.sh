#!/usr/bin/env bash
# Boots the guest built by build.sh (qemu TCG: nested KVM fails here) with
# a fresh 1.2 GiB disk (IOLAB_GUEST_DISK_SIZE) partitioned on the host
# (vda1 700 MiB, vda2 the rest, an msdos label) and runs scenarios/SCENARIO.sh in it; what the
# scenario put in /results is copied to OUTDIR, its exit code in OUTDIR/rc.
#
#   bash scripts/guest/run.sh stacks /tmp/out
#   IOLAB_GUEST_ARGS=2.5,9 bash scripts/guest/run.sh fault /tmp/out  # iolab.args=
#   IOLAB_GUEST_DISK_OPTS=throttling.bps-total=20971520 ...  # vda as slow as
#                                    phone flash (qemu's block throttling)
#   IOLAB_GUEST_KERNEL=target/guest-kernel/bzImage ...  # custom-kernel.sh's
#   IOLAB_GUEST_APPEND=cgroup_disable=memory ...  # more kernel parameters
set -euo pipefail
cd "$(dirname "$0")/../.."
scenario=$1
outdir=$2
g=${IOLAB_GUEST_DIR:-target/guest}
[ -f "$g/initramfs.cpio.gz" ] || { echo "no guest: run scripts/guest/build.sh first" >&2; exit 2; }
mkdir -p "$outdir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# IOLAB_GUEST_DISK_SIZE: a larger disk (sparse on the host), e.g. 6G for
# v2host.sh's /var/tmp, which holds the default 4 GiB lab's image.
truncate -s "${IOLAB_GUEST_DISK_SIZE:-1200M}" "$work/disk.img"
printf 'label: dos\n,700M,L\n,,L\n' | sfdisk -q "$work/disk.img"
truncate -s 64M "$work/results.img"
# One vCPU by default: with two on a busy two-core host, qemu 7.2's TCG
# starved one for minutes and the guest kernel locked up on the other,
# waiting for it (soft lockup); one vCPU never waits on another.
timeout "${IOLAB_GUEST_TIMEOUT:-900}" qemu-system-x86_64 -accel tcg -m "${IOLAB_GUEST_MEM:-2048}" -smp "${IOLAB_GUEST_SMP:-1}" \
    -nographic -no-reboot -kernel "${IOLAB_GUEST_KERNEL:-$g/vmlinuz}" -initrd "$g/initramfs.cpio.gz" \
    -append "console=ttyS0 panic=-1 quiet iolab.scenario=$scenario iolab.args=${IOLAB_GUEST_ARGS:-}${IOLAB_GUEST_APPEND:+ $IOLAB_GUEST_APPEND}" \
    -drive "file=$work/disk.img,format=raw,if=virtio${IOLAB_GUEST_DISK_OPTS:+,$IOLAB_GUEST_DISK_OPTS}" \
    -drive "file=$work/results.img,format=raw,if=virtio" \
    > "$outdir/console.log" 2>&1 || { echo "qemu failed: see $outdir/console.log" >&2; tail -30 "$outdir/console.log" >&2; exit 1; }
tar -xf "$work/results.img" -C "$outdir" 2>/dev/null || { echo "the guest wrote no results: see $outdir/console.log" >&2; tail -30 "$outdir/console.log" >&2; exit 1; }
cat "$outdir/rc"
