#!/usr/bin/env bash
# Builds the boot guest `iolab boot` runs (seed 001): Debian's kernel, a
# small initramfs that mounts the root image and hands over to init (or to
# `iolab boot-init`, as the kernel command line says), and root.img, an
# ext4 root filesystem with busybox, iolab, and a boot that reads like
# Android's (scripts/guest/boot/init): ~110 MiB read by native services,
# zygote's class preload, system_server's services.jar and a scan of 200
# packages.
#
#   bash scripts/guest/boot-build.sh            # iolab from target/debug
#   iolab boot --guest target/boot-guest
#   bash scripts/guest/boot-build.sh --debian   # a Debian (bookworm) root
#   iolab boot --guest target/boot-guest-debian  # made by mmdebstrap, booted
#                                                # by systemd to multi-user
#
# Output in ${IOLAB_GUEST_DIR:-target/boot-guest}: vmlinuz,
# initramfs.cpio.gz, root.img. The kernel package is kept in
# ${IOLAB_GUEST_DEBS:-the output's debs/}.
set -euo pipefail
cd "$(dirname "$0")/../.."
debian= ssh=
for a in "$@"; do
    case $a in
    --debian) debian=1 ;;
    --ssh) debian=1 ssh=1 ;;
    *) echo "usage: boot-build.sh [--debian | --ssh]" >&2; exit 2 ;;
    esac
done
out=${IOLAB_GUEST_DIR:-target/boot-guest${debian:+-debian}${ssh:+-ssh}}
iolab=${IOLAB_BIN:-target/debug/iolab}
debs=${IOLAB_GUEST_DEBS:-$out/debs}
mkdir -p "$out" "$debs"
out=$(cd "$out" && pwd)

. scripts/guest/kernel.sh
guest_need qemu-system-x86 busybox-static e2fsprogs cpio kmod fio gcc libc6-dev ${debian:+mmdebstrap} ${ssh:+openssh-client}
[ -x "$iolab" ] || { echo "no iolab binary at $iolab: build it first (cargo build -p iolab)" >&2; exit 2; }

guest_kernel "$out" "$debs"

# The initramfs: busybox, the disk's modules, the hand-over.
ird="$out/initramfs"
rm -rf "$ird"
mkdir -p "$ird"/{bin,sbin,dev,proc,sys,run,newroot,lib/modules}
cp "$(command -v busybox)" "$ird/bin/busybox"
guest_modules "$ird" virtio_pci virtio_blk ext4 crc32c_generic bfq kyber_iosched ${ssh:+virtio_net}
cp scripts/guest/boot/initramfs-init "$ird/init"
chmod +x "$ird/init"
(cd "$ird" && find . | cpio -o -H newc --quiet) | gzip -1 > "$out/initramfs.cpio.gz"

# The root filesystem.
root="$out/rootfs"
rm -rf "$root"
if [ -n "$debian" ]; then
    # Debian as debootstrap makes it (minbase, systemd as init), booted
    # to multi-user; the marker is a unit after multi-user.target.
    mmdebstrap --quiet --variant=minbase --include=systemd-sysv,udev,kmod${ssh:+,openssh-server} \
        "${IOLAB_DEBIAN_SUITE:-bookworm}" "$root" "${IOLAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
    mkdir -p "$root/var/lib/iolab" "$root/usr/local/sbin"
    strip --strip-debug -o "$root/usr/bin/iolab" "$iolab"
    cp scripts/guest/boot/debian/iolab-boot-done "$root/usr/local/sbin/"
    chmod +x "$root/usr/local/sbin/iolab-boot-done"
    cp scripts/guest/boot/debian/iolab-boot-done.service "$root/etc/systemd/system/"
    ln -s ../iolab-boot-done.service "$root/etc/systemd/system/multi-user.target.wants/iolab-boot-done.service"
    echo iolab-guest > "$root/etc/hostname"
    # No login prompt on the console: nothing waits for one.
    ln -sf /dev/null "$root/etc/systemd/system/serial-getty@ttyS0.service"
    if [ -n "$ssh" ]; then
        # A board `iolab boot --ssh` drives: sshd on DHCP (qemu's user
        # network), root's key made here, the prefetch unit reading what
        # the host asks for the next boot.
        rm -f "$out/id_ed25519" "$out/id_ed25519.pub"
        ssh-keygen -q -t ed25519 -N '' -C iolab-boot -f "$out/id_ed25519"
        install -d -m 700 "$root/root/.ssh"
        install -m 600 "$out/id_ed25519.pub" "$root/root/.ssh/authorized_keys"
        mkdir -p "$root/etc/systemd/network" "$root/etc/systemd/system/sysinit.target.wants"
        printf '[Match]\nName=en* eth*\n\n[Network]\nDHCP=yes\n' > "$root/etc/systemd/network/20-dhcp.network"
        ln -sf /lib/systemd/system/systemd-networkd.service \
            "$root/etc/systemd/system/multi-user.target.wants/systemd-networkd.service"
        cp scripts/guest/boot/debian/iolab-boot-start "$root/usr/local/sbin/"
        chmod +x "$root/usr/local/sbin/iolab-boot-start"
        cp scripts/guest/boot/debian/iolab-boot-start.service "$root/etc/systemd/system/"
        ln -s ../iolab-boot-start.service "$root/etc/systemd/system/sysinit.target.wants/iolab-boot-start.service"
        echo none > "$root/var/lib/iolab/boot.next"
    fi
    rm -f "$out/root.img"
    truncate -s 1G "$out/root.img"
    mke2fs -q -t ext4 -d "$root" -L bootroot "$out/root.img"
    rm -rf "$root"
    echo "boot guest (Debian): $out/vmlinuz ($kver), $out/initramfs.cpio.gz, $out/root.img"
    exit 0
fi
mkdir -p "$root"/{bin,sbin,usr/bin,dev,proc,sys,run,tmp,root,etc,var/lib/iolab}
mkdir -p "$root"/system/{bin,framework,etc} "$root/data/app"
cp "$(command -v busybox)" "$root/bin/busybox"
for a in $("$root/bin/busybox" --list); do
    [ -e "$root/bin/$a" ] || ln -s busybox "$root/bin/$a"
done
# iolab and the shared libraries it needs, at the same paths (debug info
# stripped: the boot reads what it runs).
strip --strip-debug -o "$root/usr/bin/iolab" "$iolab"
ldd "$iolab" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do
    [ -e "$root$lib" ] || { mkdir -p "$root$(dirname "$lib")"; cp -L "$lib" "$root$lib"; }
done
: > "$root/etc/mtab"
# fio and its libraries (run in a chroot by the initramfs to calibrate a
# modelled boot disk from inside the guest: iolab boot --disk).
mkdir -p "$root/opt/fio"
cp "$(command -v fio)" "$root/opt/fio/fio"
ldd "$(command -v fio)" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do
    [ -e "$root$lib" ] || { mkdir -p "$root$(dirname "$lib")"; cp -L "$lib" "$root$lib"; }
done
cp scripts/guest/boot/calibrate.fio "$root/opt/fio/calibrate.fio"
# The boot's page-faulting processes (iolab.workload=faults), static.
gcc -static -O2 -Wall -o "$root/usr/bin/androidboot" scripts/guest/boot/androidboot.c
cp scripts/guest/boot/init "$root/sbin/init"
cp scripts/guest/boot/workload "$root/sbin/boot-workload"
cp scripts/guest/boot/relayout-init "$root/sbin/relayout-init"
chmod +x "$root/sbin/init" "$root/sbin/relayout-init" "$root/sbin/boot-workload"

# What the boot reads (random bytes: nothing compresses or dedups).
rnd() { head -c "$2" /dev/urandom > "$1"; }
for i in $(seq 1 8); do rnd "$root/system/bin/svc$i" 4M; done          # 32 MiB
rnd "$root/system/framework/boot.art" 48M
rnd "$root/system/framework/services.jar" 24M
# Zygote's preload: 120 of boot.art's 192 pieces of 256 KiB (30 MiB), in
# a fixed scattered order.
seq 0 191 | awk 'BEGIN { srand(1) } { print rand() "\t" $1 }' | sort -n | cut -f2 \
    | head -120 > "$root/system/etc/preloaded-classes"
# 200 packages of 256 KiB; the scan reads each one's first 64 KiB and its
# last 16 KiB (20 MiB with readahead's share, below).
for i in $(seq -w 1 200); do
    mkdir -p "$root/data/app/com.example.app$i"
    rnd "$root/data/app/com.example.app$i/base.apk" 256K
done
# A safety boot's stale list: deleted packages beside one that exists.
{
    echo "/data/app/com.example.gone1/base.apk 0:65536"
    echo "/data/app/com.example.gone2/base.apk 0:65536,196608:16384"
    echo "/data/app/com.example.app001/base.apk 0:65536"
} > "$root/var/lib/iolab/stale.list"
rm -f "$out/root.img"
# The root filesystem fills 512 MiB; 128 MiB past its end are scratch for
# calibrate.fio's writes.
truncate -s 640M "$out/root.img"
mke2fs -q -t ext4 -d "$root" -L bootroot "$out/root.img" 512M
rm -rf "$root"
echo "boot guest: $out/vmlinuz ($kver), $out/initramfs.cpio.gz ($(du -h "$out/initramfs.cpio.gz" | cut -f1)), $out/root.img ($(du -h --apparent-size "$out/root.img" | cut -f1))"
