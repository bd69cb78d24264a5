#!/usr/bin/env bash
# An Android-shaped rig on this machine's own kernel: a mount namespace
# (unshare, no container runtime) whose root has what a rooted phone's adb
# shell has and nothing else:
#   /system/bin      toybox (Debian's) with its applets, mksh as sh, mke2fs;
#                    no util-linux, no coreutils
#   /system/build.prop, /system_ext (an EROFS image holding an app: APK zip,
#                    oat/arm64 odex and vdex, lib/arm64 .so)
#   /data            ext4 on a loop "disk", /dev/block/by-name/userdata
#   /dev             a tmpfs with /dev/block/* nodes (as ueventd makes them:
#                    for the devices present when the rig came up; a later
#                    loop device gets none), loop-control, fuse, null, zero,
#                    urandom
#   /proc, /sys      the kernel's (tracefs and debugfs under /sys)
#   no /run, /tmp or HOME; the environment is PATH=/system/bin only.
# The libraries the Debian binaries link (/usr/lib, /lib64) are bound in
# read-only: they stand for bionic in /system/lib64.
#
#   bash scripts/android/rig.sh up DIR          # brings the rig up in DIR
#   bash scripts/android/rig.sh exec DIR CMD... # runs CMD in it, as adb shell
#   bash scripts/android/rig.sh push DIR SRC DST
#   bash scripts/android/rig.sh pull DIR SRC DST
#   bash scripts/android/rig.sh down DIR        # takes it all down
#   RIG_ARCH=aarch64 bash scripts/android/rig.sh up DIR
#                    # an arm64 phone: `uname -m` says aarch64, and aarch64
#                    # binaries run through qemu-aarch64-static, registered
#                    # with binfmt_misc for as long as the rig is up (the
#                    # registration is the rig's, removed by `down`)
#
# The host side (this script) uses util-linux (unshare, nsenter, losetup):
# it plays the phone's init, vold and adbd, not what runs on the phone.
set -euo pipefail

die() { echo "rig: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "needs root (loop devices, mounts, a mount namespace)"

cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: rig.sh up|exec|push|pull|down DIR ..."
shift 2

# The app on /system_ext, as a phone's system app with compiled code.
PKG=com.example.iolab.rigapp

holder_pid() { cat "$dir/holder.pid" 2>/dev/null || true; }

BINFMT=/proc/sys/fs/binfmt_misc
BINFMT_NAME=iolab-rig-aarch64

# aarch64 ELF executables to qemu (the magic and mask of qemu's own
# scripts/qemu-binfmt-conf.sh); F: the interpreter is opened now, so it
# works inside the rig's root.
binfmt_up() {
    local qemu; qemu=$(command -v qemu-aarch64-static) || die "RIG_ARCH=aarch64 needs qemu-user-static"
    if ! grep -q "^binfmt_misc $BINFMT " /proc/mounts; then
        mount -t binfmt_misc binfmt_misc "$BINFMT"
        touch "$dir/binfmt.mounted"
    fi
    # A registration of the machine's own (qemu-user-binfmt) serves as well.
    if ! grep -qs "^interpreter .*qemu-aarch64" "$BINFMT"/*; then
        # The escapes are binfmt_misc's to decode: written as text.
        echo ":$BINFMT_NAME:M::"'\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'":$qemu:F" > "$BINFMT/register"
        touch "$dir/binfmt.registered"
    fi
}

binfmt_down() {
    if [ -f "$dir/binfmt.registered" ]; then
        [ -e "$BINFMT/$BINFMT_NAME" ] && echo -1 > "$BINFMT/$BINFMT_NAME"
        rm -f "$dir/binfmt.registered"
    fi
    if [ -f "$dir/binfmt.mounted" ]; then
        umount "$BINFMT" 2>/dev/null || true
        rm -f "$dir/binfmt.mounted"
    fi
}

# Runs "$@" in the rig: its namespace, its root, its environment.
in_rig() {
    local pid; pid=$(holder_pid)
    [ -n "$pid" ] && [ -d "/proc/$pid" ] || die "no rig up in $dir"
    nsenter --mount --target "$pid" -- chroot "$dir/root" \
        /system/bin/env -i PATH=/system/bin ANDROID_ROOT=/system ANDROID_DATA=/data "$@"
}

make_app() {
    local src=$1
    mkdir -p "$src/priv-app/RigApp/oat/arm64" "$src/priv-app/RigApp/lib/arm64"
    python3 - "$src/priv-app/RigApp" <<'EOF'
import os, sys, zipfile, random
d = sys.argv[1]
r = random.Random(26)
def blob(n):
    return bytes(r.getrandbits(8) for _ in range(n))
# An APK is a zip: a manifest, dex code, resources (stored, as aapt does
# for resources.arsc, so it can be mapped).
with zipfile.ZipFile(os.path.join(d, "RigApp.apk"), "w") as z:
    z.writestr("AndroidManifest.xml", blob(4096))
    z.writestr("classes.dex", blob(2 << 20), zipfile.ZIP_DEFLATED)
    z.writestr(zipfile.ZipInfo("resources.arsc"), blob(1 << 20))
open(os.path.join(d, "oat/arm64/RigApp.odex"), "wb").write(blob(3 << 20))
open(os.path.join(d, "oat/arm64/RigApp.vdex"), "wb").write(blob(1 << 20))
open(os.path.join(d, "lib/arm64/librigapp.so"), "wb").write(blob(1 << 20))
EOF
}

up() {
    [ ! -e "$dir/holder.pid" ] || die "$dir already holds a rig: rig.sh down $dir first"
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    local r="$dir/root"
    mkdir -p "$r" "$dir/img"
    # /data's disk and /system_ext's image, attached here (vold's part).
    truncate -s 1G "$dir/img/userdata.img"
    mke2fs -q -t ext4 -F "$dir/img/userdata.img"
    rm -rf "$dir/img/system_ext"
    make_app "$dir/img/system_ext"
    mkfs.erofs "$dir/img/system_ext.img" "$dir/img/system_ext" >/dev/null
    local data_loop ext_loop
    data_loop=$(losetup --find --show --direct-io=on "$dir/img/userdata.img")
    echo "$data_loop" > "$dir/loops"
    ext_loop=$(losetup --find --show --direct-io=on --read-only "$dir/img/system_ext.img")
    echo "$ext_loop" >> "$dir/loops"

    # The system partition: toybox and its applets, mksh as sh, mke2fs.
    local sys="$dir/img/system"
    rm -rf "$sys"; mkdir -p "$sys/bin"
    cp /usr/bin/toybox "$sys/bin/toybox"
    for a in $(/usr/bin/toybox); do
        [ "$a" = toybox ] || ln -sf toybox "$sys/bin/$a"
    done
    cp /usr/bin/mksh "$sys/bin/mksh"; ln -sf mksh "$sys/bin/sh"
    cp /usr/sbin/mke2fs "$sys/bin/mke2fs"
    # Android's /etc is a link to /system/etc. bionic knows the AIDs
    # (root 0, shell 2000) without a passwd file; glibc's toybox reads one.
    mkdir -p "$sys/etc"
    printf 'root:x:0:0::/:/system/bin/sh\nshell:x:2000:2000::/:/system/bin/sh\n' > "$sys/etc/passwd"
    printf 'root:x:0:\nshell:x:2000:\n' > "$sys/etc/group"
    # The framework's commands, standing in (each cites the real one's
    # source for what it prints): am, pm, cmd, dumpsys, getprop, and the
    # zygote that forks the app.
    cp "$(dirname "$0")"/system/bin/* "$sys/bin/"
    if [ "${RIG_ARCH:-}" = aarch64 ]; then
        # An arm64 phone's uname; the kernel underneath stays this one.
        # (uname is a link to toybox: replaced, not written through.)
        rm -f "$sys/bin/uname"
        printf '#!/system/bin/sh\nif [ "$*" = -m ]; then echo aarch64; else exec toybox uname "$@"; fi\n' > "$sys/bin/uname"
        chmod 755 "$sys/bin/uname"
        binfmt_up
    fi
    # The serial (androidboot.serialno on a phone) for getprop.
    echo "ro.serialno=RIGSERIAL01" > "$sys/etc/prop.default"
    cat > "$sys/build.prop" <<EOF
# The rig's build.prop (format as in AOSP's build/make/tools/buildinfo.sh)
ro.build.version.sdk=34
ro.build.version.release=14
ro.product.model=iolab rig
ro.product.manufacturer=iolab
ro.product.cpu.abi=arm64-v8a
ro.hardware=rig
EOF

    # The namespace's init: mounts its world, then waits to be killed.
    # Its mounts die with it; the loop devices are detached by `down`.
    unshare --mount --propagation private -- bash -c '
        set -e
        r=$1; d=$2; data=$3; ext=$4
        mount -t tmpfs -o mode=755 rig-root "$r"
        mkdir -p "$r"/{system,system_ext,data,dev,proc,sys,usr/lib,lib64}
        mount --bind -o ro "$d/img/system" "$r/system" 2>/dev/null || mount --bind "$d/img/system" "$r/system"
        mount -o remount,bind,ro "$r/system"
        mount -t erofs -o ro "$ext" "$r/system_ext"
        mount -t ext4 "$data" "$r/data"
        mkdir -p "$r/data/local/tmp" "$r/data/data/com.example.iolab.rigapp" "$r/data/system"
        head -c 1048576 /dev/urandom > "$r/data/data/com.example.iolab.rigapp/settings.db"
        mount --rbind /sys "$r/sys"
        mount -t proc proc "$r/proc"
        mount --bind -o ro /usr/lib "$r/usr/lib"; mount -o remount,bind,ro "$r/usr/lib"
        mount --bind -o ro /lib64 "$r/lib64"; mount -o remount,bind,ro "$r/lib64"
        ln -s usr/lib "$r/lib"
        ln -s system/etc "$r/etc"
        # /dev as ueventd leaves it: block nodes under /dev/block only.
        mount -t tmpfs -o mode=755 rig-dev "$r/dev"
        mkdir -p "$r/dev/block/by-name"
        for b in /sys/class/block/*; do
            n=${b##*/}; IFS=: read -r ma mi < "$b/dev"
            mknod "$r/dev/block/$n" b "$ma" "$mi"
        done
        ln -s "../${data#/dev/}" "$r/dev/block/by-name/userdata"
        ln -s "../${ext#/dev/}" "$r/dev/block/by-name/system_ext"
        mknod "$r/dev/loop-control" c 10 237
        mknod "$r/dev/fuse" c 10 229
        mknod -m 666 "$r/dev/null" c 1 3
        mknod -m 666 "$r/dev/zero" c 1 5
        mknod -m 666 "$r/dev/urandom" c 1 9
        echo ready > "$d/ready"
        exec sleep infinity
    ' rig-init "$r" "$dir" "$data_loop" "$ext_loop" </dev/null >"$dir/init.log" 2>&1 &
    echo $! > "$dir/holder.pid"
    for _ in $(seq 100); do [ -f "$dir/ready" ] && break; sleep 0.1; done
    [ -f "$dir/ready" ] || { down_quiet; die "the rig did not come up"; }
    # zygote, started as init starts it.
    in_rig /system/bin/sh /system/bin/zygote </dev/null >/dev/null 2>&1 &
    for _ in $(seq 100); do
        in_rig /system/bin/sh -c '[ -p /data/system/zygote.fifo ]' && break; sleep 0.05
    done
    echo "rig up in $dir: data on $data_loop (/dev/block/by-name/userdata), system_ext on $ext_loop; app $PKG"
}

down_quiet() {
    local pid ns p; pid=$(holder_pid)
    if [ -n "$pid" ] && [ -d "/proc/$pid" ]; then
        # Every process in the rig's mount namespace (its init, zygote, the
        # apps, what iolab left): found by namespace, never by name.
        ns=$(readlink "/proc/$pid/ns/mnt")
        for p in /proc/[0-9]*; do
            [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$ns" ] && kill -KILL "${p#/proc/}" 2>/dev/null
        done
        for _ in $(seq 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    fi
    if [ -f "$dir/loops" ]; then
        while read -r l; do
            for _ in $(seq 50); do losetup -d "$l" 2>/dev/null && break; sleep 0.1; done
        done < "$dir/loops"
    fi
    rm -f "$dir/holder.pid" "$dir/loops" "$dir/ready"
    binfmt_down
}

case "$cmd" in
    up) up ;;
    exec) in_rig "$@" ;;
    push) [ $# = 2 ] || die "push DIR SRC DST"; in_rig /system/bin/sh -c 'cat > "$1" && chmod 755 "$1"' sh "$2" < "$1" ;;
    pull) [ $# = 2 ] || die "pull DIR SRC DST"; in_rig /system/bin/cat "$1" > "$2" ;;
    down) down_quiet; rm -rf "$dir/img" "$dir/root" ;;
    *) die "unknown command $cmd: expected up, exec, push, pull or down" ;;
esac
