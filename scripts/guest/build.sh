#!/usr/bin/env bash
# Builds a small x86-64 qemu guest for what this machine's kernel lacks
# (device-mapper, f2fs, partitions of a disk): Debian's own kernel and
# modules (linux-image-amd64, from the package archive), a busybox
# initramfs holding iolab (static, or dynamic with its libraries), dmsetup,
# mkfs.ext4 and mkfs.f2fs, and the scenarios under scenarios/. Boot and run
# one with run.sh. Reusable: other work (Android-shaped namespaces, LAVA)
# adds scenarios or binaries.
#
#   bash scripts/guest/build.sh                 # iolab from target/debug
#   IOLAB_BIN=path/to/iolab bash scripts/guest/build.sh
#   IOLAB_GUEST_FIO=1 bash scripts/guest/build.sh  # with the installed fio
#                                                  # (its libraries: ~80 MiB)
#   IOLAB_GUEST_EXTRA=DIR bash ...                 # DIR as /extra, and bash
#
# Output in ${IOLAB_GUEST_DIR:-target/guest}: vmlinuz, initramfs.cpio.gz.
# The kernel package is downloaded once and kept in ${IOLAB_GUEST_DEBS:-
# the output's debs/}.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${IOLAB_GUEST_DIR:-target/guest}
iolab=${IOLAB_BIN:-target/debug/iolab}
# Where the kernel package is kept between builds.
debs=${IOLAB_GUEST_DEBS:-$out/debs}
mkdir -p "$out" "$debs"
out=$(cd "$out" && pwd)

. scripts/guest/kernel.sh
guest_need qemu-system-x86 busybox-static f2fs-tools dmsetup e2fsprogs fdisk cpio kmod util-linux
[ -x "$iolab" ] || { echo "no iolab binary at $iolab: build it first (cargo build -p iolab)" >&2; exit 2; }

# The kernel: the package linux-image-amd64 depends on (dm, dm-crypt,
# f2fs, ext4, virtio as modules).
guest_kernel "$out" "$debs"

root="$out/root"
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,run,mnt,root,results,lib/modules,scenarios}
cp "$(command -v busybox)" "$root/bin/busybox"

# Modules in load order, their dependencies first.
# null_blk: zoned devices (scenarios/zbd.sh makes one through configfs).
# fuse: the device model (a cgroup-v2-only host's slow lab; scenarios/v2host.sh).
guest_modules "$root" virtio_pci virtio_blk dm_mod dm_crypt xts ext4 f2fs bfq kyber_iosched overlay loop crc32c_generic configfs null_blk fuse

# A binary and the shared libraries it needs, at the same paths.
with_libs() {
    cp "$1" "$root/bin/$(basename "$2")"
    ldd "$1" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do
        [ -e "$root$lib" ] || { mkdir -p "$root$(dirname "$lib")"; cp -L "$lib" "$root$lib"; }
    done
}
# Debug info is most of a debug build's size, and guest RAM holds it.
strip --strip-debug -o "$out/iolab" "$iolab"
with_libs "$out/iolab" iolab
for b in dmsetup mke2fs mkfs.f2fs blkzone; do with_libs "$(command -v "$b")" "$b"; done
if [ "${IOLAB_GUEST_FIO:-0}" = 1 ]; then
    command -v fio >/dev/null || guest_need fio
    with_libs "$(command -v fio)" fio
fi
# IOLAB_GUEST_EXTRA=DIR: a directory copied to /extra, with bash and GNU
# grep and sed for its scripts (bench/zbd_suite.py puts fio's t/zbd there;
# it greps with -P, which busybox lacks).
if [ -n "${IOLAB_GUEST_EXTRA:-}" ]; then
    cp -r "$IOLAB_GUEST_EXTRA" "$root/extra"
    for b in bash grep sed; do with_libs "$(command -v "$b")" "$b"; done
fi
ln -s mke2fs "$root/bin/mkfs.ext4"
mkdir -p "$root/etc"
: > "$root/etc/mtab"

cp scripts/guest/init "$root/init"
chmod +x "$root/init"
cp scripts/guest/scenarios/*.sh "$root/scenarios/"
(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 > "$out/initramfs.cpio.gz"
echo "guest: $out/vmlinuz ($kver), $out/initramfs.cpio.gz ($(du -h "$out/initramfs.cpio.gz" | cut -f1))"
