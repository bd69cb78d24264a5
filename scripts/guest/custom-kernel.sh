#!/usr/bin/env bash
# Builds a guest kernel from Debian's own source (linux-source-6.1) with
# what Debian's binary kernels leave out: cgroup v2's io.latency
# (CONFIG_BLK_CGROUP_IOLATENCY) and io.prio.class (CONFIG_BLK_CGROUP_IOPRIO).
# Both Debian kernels of this archive (6.1 and 6.12) are built without
# them, so docs/CONTROL.md's io.latency and io.prio.class figures come from
# this kernel. Everything the guest needs is built in (no modules), so
# build.sh takes it with IOLAB_GUEST_KERNEL=target/guest-kernel/bzImage.
#
#   bash scripts/guest/custom-kernel.sh      # ~25 min on 2 cores, once
#
# Not part of CI: a kernel build does not fit its 30 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${IOLAB_KERNEL_DIR:-target/guest-kernel}
mkdir -p "$out"
out=$(cd "$out" && pwd)
. scripts/guest/kernel.sh
guest_need linux-source-6.1 flex bison libelf-dev libssl-dev bc cpio
src="$out/src"
if [ ! -f "$src/Makefile" ]; then
    rm -rf "$src"; mkdir -p "$src"
    tar -xJf /usr/src/linux-source-6.1.tar.xz -C "$src" --strip-components=1
fi
cd "$src"
make -s defconfig
make -s kvm_guest.config
# y: built in. The block layer's cgroup controls, every scheduler, what the
# guest's scenarios mount and trace, and null_blk for zoned devices.
cat > ../iolab.config <<'EOF'
CONFIG_MODULES=n
CONFIG_CGROUPS=y
CONFIG_BLK_CGROUP=y
CONFIG_BLK_CGROUP_RWSTAT=y
CONFIG_BLK_CGROUP_IOLATENCY=y
CONFIG_BLK_CGROUP_IOCOST=y
CONFIG_BLK_CGROUP_IOPRIO=y
CONFIG_BLK_DEV_THROTTLING=y
CONFIG_BLK_WBT=y
CONFIG_BLK_WBT_MQ=y
CONFIG_MQ_IOSCHED_DEADLINE=y
CONFIG_MQ_IOSCHED_KYBER=y
CONFIG_IOSCHED_BFQ=y
CONFIG_BFQ_GROUP_IOSCHED=y
CONFIG_MEMCG=y
CONFIG_PSI=y
CONFIG_VIRTIO_BLK=y
CONFIG_VIRTIO_PCI=y
CONFIG_EXT4_FS=y
CONFIG_F2FS_FS=y
CONFIG_BLK_DEV_LOOP=y
CONFIG_BLK_DEV_NULL_BLK=y
CONFIG_BLK_DEV_ZONED=y
CONFIG_CONFIGFS_FS=y
CONFIG_DEVTMPFS=y
CONFIG_DEVTMPFS_MOUNT=y
CONFIG_FTRACE=y
CONFIG_FUNCTION_TRACER=n
CONFIG_BLK_DEV_IO_TRACE=y
CONFIG_KPROBES=y
CONFIG_KPROBE_EVENTS=y
CONFIG_BPF_SYSCALL=y
CONFIG_DEBUG_INFO=n
CONFIG_DEBUG_INFO_NONE=y
CONFIG_SCHEDSTATS=y
CONFIG_TASK_DELAY_ACCT=y
CONFIG_CRYPTO_CRC32C=y
EOF
scripts/kconfig/merge_config.sh -m .config ../iolab.config >/dev/null
make -s olddefconfig
for o in BLK_CGROUP_IOLATENCY BLK_CGROUP_IOPRIO BLK_CGROUP_IOCOST BFQ_GROUP_IOSCHED VIRTIO_BLK; do
    grep -q "^CONFIG_$o=y" .config || { echo "custom-kernel: CONFIG_$o did not stay set" >&2; exit 1; }
done
make -s -j"$(nproc)" bzImage
cp arch/x86/boot/bzImage "$out/bzImage"
echo "guest kernel: $out/bzImage ($(make -s kernelrelease))"
