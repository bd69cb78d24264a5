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

need=()
for p in qemu-system-x86 busybox-static f2fs-tools dmsetup e2fsprogs fdisk cpio kmod; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if ((${#need[@]})); then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need[@]}" >/dev/null
fi
[ -x "$iolab" ] || { echo "no iolab binary at $iolab: build it first (cargo build -p iolab)" >&2; exit 2; }

# The kernel: the package linux-image-amd64 depends on (dm, dm-crypt,
# f2fs, ext4, virtio as modules).
pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
deb=$(ls "$debs/${pkg}"_*.deb 2>/dev/null | head -1 || true)
if [ -z "$deb" ]; then
    (cd "$debs" && apt-get download "$pkg" 2>/dev/null)
    deb=$(ls "$debs/${pkg}"_*.deb | head -1)
fi
kdir="$out/kernel"
if [ ! -d "$kdir/boot" ] || [ "$deb" -nt "$kdir/boot" ]; then
    rm -rf "$kdir"; mkdir -p "$kdir"
    dpkg-deb -x "$deb" "$kdir"
fi
kver=$(ls "$kdir/lib/modules" | head -1)
[ -f "$kdir/lib/modules/$kver/modules.dep" ] || depmod -b "$kdir" "$kver"
cp "$kdir/boot/vmlinuz-$kver" "$out/vmlinuz"

root="$out/root"
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,run,mnt,root,results,lib/modules,scenarios}
cp "$(command -v busybox)" "$root/bin/busybox"

# Modules in load order, their dependencies first.
: > "$root/modules.load"
for m in virtio_pci virtio_blk dm_mod dm_crypt xts ext4 f2fs bfq kyber_iosched overlay loop crc32c_generic; do
    modprobe -d "$kdir" -S "$kver" --show-depends "$m" 2>/dev/null | awk '/^insmod/ {print $2}'
done | awk '!seen[$0]++' | while read -r ko; do
    rel=${ko#"$kdir"/lib/modules/"$kver"/}
    mkdir -p "$root/lib/modules/$(dirname "$rel")"
    cp "$ko" "$root/lib/modules/$rel"
    echo "$rel" >> "$root/modules.load"
done

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
for b in dmsetup mke2fs mkfs.f2fs; do with_libs "$(command -v "$b")" "$b"; done
ln -s mke2fs "$root/bin/mkfs.ext4"
mkdir -p "$root/etc"
: > "$root/etc/mtab"

cp scripts/guest/init "$root/init"
chmod +x "$root/init"
cp scripts/guest/scenarios/*.sh "$root/scenarios/"
(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 > "$out/initramfs.cpio.gz"
echo "guest: $out/vmlinuz ($kver), $out/initramfs.cpio.gz ($(du -h "$out/initramfs.cpio.gz" | cut -f1))"
