#!/usr/bin/env bash
# An Android-shaped rig on this machine's own kernel, as strict as a GKI
# phone with a user build: a mount namespace (unshare, no container
# runtime) whose root has what a rooted phone's adb shell has and nothing
# else:
#   /                a read-only root (system-as-root): no /run, no /tmp,
#                    no HOME; the environment is PATH=/system/bin only
#   /system/bin      toybox (Debian's) with its applets, mksh as sh, mke2fs;
#                    no util-linux, no coreutils; the framework's commands
#                    standing in (am, pm, cmd, dumpsys, getprop, setprop,
#                    input, logcat), zygote64 and Magisk's su (rig.c)
#   /system/build.prop, /system_ext (an EROFS image holding an app: APK zip,
#                    oat/arm64 odex and vdex, lib/arm64 .so)
#   /data            ext4 on a loop "disk", /dev/block/by-name/userdata;
#                    /data/local/tmp owned by shell (2000), as on a phone
#   /dev             a tmpfs with /dev/block/* nodes (as ueventd makes them:
#                    for the devices present when the rig came up; a later
#                    loop device gets none), loop-control, fuse, null, zero,
#                    urandom, /dev/socket
#   /proc            the kernel's, less what a GKI kernel lacks:
#                    /proc/sys/kernel/ns_last_pid (GKI configs have
#                    `# CONFIG_PID_NS is not set`, and the file needs
#                    CONFIG_CHECKPOINT_RESTORE)
#   /sys             the kernel's, tracefs mounted at /sys/kernel/tracing
#                    (as Android's init mounts it), /sys/kernel/debug empty
#                    and debugfs not mountable: every process of the rig runs
#                    under a seccomp filter whose supervisor (rig.c) refuses
#                    mount(2)/fsopen(2) of debugfs with EPERM, as a user
#                    build's SELinux policy does; refusals are logged to
#                    DIR/denied.log
# Processes: zygote64 (rig.c), which forks apps (as their packages' uids,
# from /data/system/packages.list) or, with
# persist.device_config.runtime_native.usap_pool_enabled=true, hands a
# launch to a process forked before it (the USAP pool); webview_zygote,
# which forks WebView renderers as isolated uids; the parts of
# system_server that act on apps from outside (the top app's priority
# boost, the screen's timeout and keyguard); magiskd, the root daemon
# behind `su` (root processes in a session of their own).
# The libraries the Debian binaries link (/usr/lib, /lib64) are bound in
# read-only: they stand for bionic in /system/lib64.
#
#   bash scripts/android/rig.sh up DIR          # brings the rig up in DIR
#   bash scripts/android/rig.sh exec DIR CMD... # runs CMD in it, as adb shell
#                                               # (RIG_UID=2000: as the shell
#                                               # user of a production build)
#   bash scripts/android/rig.sh push DIR SRC DST
#   bash scripts/android/rig.sh pull DIR SRC DST
#   bash scripts/android/rig.sh down DIR        # takes it all down
#   RIG_ARCH=aarch64 bash scripts/android/rig.sh up DIR
#                    # an arm64 phone: `uname -m` says aarch64, and aarch64
#                    # binaries run through qemu-aarch64-static, registered
#                    # with binfmt_misc for as long as the rig is up (the
#                    # registration is the rig's, removed by `down`)
#
# The host side (this script) uses util-linux (unshare, nsenter, losetup)
# and gcc (rig.c): it plays the phone's init, vold and adbd, not what runs
# on the phone.
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

# Runs "$@" in the rig: its namespace, its root (entered by rig.c, which
# puts the process under the rig's seccomp filter), its environment; as
# RIG_UID/RIG_GID when set (the shell user, 2000). The calling process
# becomes the rig's (exec), so a signal to its pid reaches the command.
in_rig() {
    local pid; pid=$(holder_pid)
    [ -n "$pid" ] && [ -d "/proc/$pid" ] || die "no rig up in $dir"
    local who=()
    if [ -n "${RIG_UID:-}" ]; then who=(--uid "$RIG_UID" --gid "${RIG_GID:-$RIG_UID}"); fi
    exec nsenter --mount --target "$pid" -- "$dir/img/system/bin/rig" enter \
        --root "$dir/root" --sock "$dir/seccomp.sock" "${who[@]}" -- \
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
    # The WebView provider's APK, which its renderer reads.
    mkdir -p "$src/app/WebViewRig"
    head -c 2097152 /dev/urandom > "$src/app/WebViewRig/WebViewRig.apk"
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
    : > "$dir/loops"
    data_loop=$(attach_loop "$dir/img/userdata.img" --direct-io=on)
    ext_loop=$(attach_loop "$dir/img/system_ext.img" --direct-io=on --read-only)

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
    # source for what it prints): am, pm, cmd, dumpsys, getprop, setprop,
    # input, logcat; zygote64 and Magisk's su and daemon (rig.c).
    cp "$(dirname "$0")"/system/bin/* "$sys/bin/"
    gcc -O2 -Wall -o "$sys/bin/rig" "$(dirname "$0")/system/src/rig.c" -lpthread
    ln -sf rig "$sys/bin/su"
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

    # The supervisor of the rig's seccomp filter (debugfs refused), up
    # before anything enters the rig.
    "$sys/bin/rig" seccomp-supervisor "$dir/seccomp.sock" "$dir/denied.log" </dev/null >"$dir/supervisor.out" 2>&1 &
    echo $! > "$dir/supervisor.pid"
    for _ in $(seq 100); do [ -S "$dir/seccomp.sock" ] && break; sleep 0.05; done
    [ -S "$dir/seccomp.sock" ] || { down_quiet; die "the seccomp supervisor did not start: $(cat "$dir/supervisor.out")"; }

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
        mkdir -p "$r/data/local/tmp" "$r/data/data/com.example.iolab.rigapp" "$r/data/data/org.example.iolab.rigapp" "$r/data/system"
        # /data/local/tmp is the shell user (system/core/rootdir/init.rc:
        # mkdir /data/local/tmp 0771 shell shell).
        chown 2000:2000 "$r/data/local/tmp"; chmod 771 "$r/data/local/tmp"
        head -c 1048576 /dev/urandom > "$r/data/data/com.example.iolab.rigapp/settings.db"
        head -c 524288 /dev/urandom > "$r/data/data/com.example.iolab.rigapp/cache.db"
        # Two packages, each its own uid and data directory (its owner),
        # in the packages.list PackageManager writes: the app, and another
        # whose names share its last 15 characters.
        printf "%s\n" "com.example.iolab.rigapp 10123 0 /data/user/0/com.example.iolab.rigapp platform:privapp:targetSdkVersion=34 3003" \
            "org.example.iolab.rigapp 10124 0 /data/user/0/org.example.iolab.rigapp default:targetSdkVersion=34 3003" > "$r/data/system/packages.list"
        chown -R 10123:10123 "$r/data/data/com.example.iolab.rigapp"
        chown -R 10124:10124 "$r/data/data/org.example.iolab.rigapp"
        # What the framework and the apps share over binder on a phone is
        # files here; the apps, as their own uids, write theirs.
        chmod 1777 "$r/data/system"
        : > "$r/data/system/logcat.log"; chmod 666 "$r/data/system/logcat.log"
        # A test phone: its screen times out after 30 minutes (a test that
        # wants it sooner sets system screen_off_timeout), so a run that
        # ends does not take the app off the top while a test reads it.
        echo screen_off_timeout=1800000 > "$r/data/system/settings_system"
        mount --rbind /sys "$r/sys"
        # A user build: no debugfs mounted (the seccomp supervisor refuses
        # mounting one); tracefs where the init of Android mounts it.
        while mountpoint -q "$r/sys/kernel/debug"; do umount -l "$r/sys/kernel/debug"; done
        mountpoint -q "$r/sys/kernel/tracing" || mount -t tracefs tracefs "$r/sys/kernel/tracing"
        mount -t proc proc "$r/proc"
        # A GKI kernel has no ns_last_pid: /proc/sys/kernel is a read-only
        # tmpfs holding every other entry of the real one, bound in.
        k="$r/proc/sys/kernel"
        mount -t tmpfs -o mode=555 rig-sysctl "$k"
        for e in /proc/sys/kernel/*; do
            n=${e##*/}
            [ "$n" = ns_last_pid ] && continue
            if [ -d "$e" ]; then mkdir "$k/$n"; else touch "$k/$n"; fi
            mount --bind "$e" "$k/$n"
        done
        mount -o remount,ro "$k"
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
        mkdir -m 755 "$r/dev/socket"
        # System-as-root: / is read-only.
        mount -o remount,ro "$r"
        echo ready > "$d/ready"
        exec sleep infinity
    ' rig-init "$r" "$dir" "$data_loop" "$ext_loop" </dev/null >"$dir/init.log" 2>&1 &
    echo $! > "$dir/holder.pid"
    for _ in $(seq 100); do [ -f "$dir/ready" ] && break; sleep 0.1; done
    [ -f "$dir/ready" ] || { down_quiet; die "the rig did not come up"; }
    # zygote64 and magiskd, started as init starts them (app_process's
    # own arguments leave argv room for the names its children take).
    ( in_rig /system/bin/rig zygote --zygote --start-system-server --socket-name=zygote </dev/null >/dev/null 2>&1 ) &
    ( in_rig /system/bin/rig magiskd </dev/null >/dev/null 2>&1 ) &
    ( in_rig /system/bin/rig webview_zygote --zygote --socket-name=webview_zygote --abi-list=arm64-v8a </dev/null >/dev/null 2>&1 ) &
    ( in_rig /system/bin/rig system_server --nice-name=system_server </dev/null >/dev/null 2>&1 ) &
    for _ in $(seq 100); do
        ( in_rig /system/bin/sh -c '[ -p /data/system/zygote.fifo ] && [ -S /dev/socket/magisk ] && [ -p /data/system/webview_zygote.fifo ] && [ -p /data/system/ams.fifo ]' ) && break
        sleep 0.05
    done
    echo "rig up in $dir: data on $data_loop (/dev/block/by-name/userdata), system_ext on $ext_loop; app $PKG"
}

# A loop device keeps the queue attributes attaching gave it (read_ahead_kb
# and rotational, taken from the backing file's disk) after it is detached:
# they are saved here, beside the device in $dir/loops, and written back at
# down, as iolab's guard does for its own loops.
attach_loop() {  # attach_loop FILE [losetup options...]: prints the device
    local f=$1 l q; shift
    l=$(losetup --find)
    q=/sys/block/${l#/dev/}/queue
    echo "$l $(cat "$q/read_ahead_kb") $(cat "$q/rotational")" >> "$dir/loops"
    losetup "$@" "$l" "$f"
    echo "$l"
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
        local ra rot q
        while read -r l ra rot; do
            # Written back while the device is still the rig's (the kernel
            # keeps the queue through the detach), so no one finds it free
            # with the backing file's values.
            q=/sys/block/${l#/dev/}/queue
            [ -n "$ra" ] && echo "$ra" > "$q/read_ahead_kb" 2>/dev/null
            [ -n "$rot" ] && echo "$rot" > "$q/rotational" 2>/dev/null
            for _ in $(seq 50); do losetup -d "$l" 2>/dev/null && break; sleep 0.1; done
        done < "$dir/loops"
    fi
    local sup; sup=$(cat "$dir/supervisor.pid" 2>/dev/null || true)
    [ -n "$sup" ] && kill -KILL "$sup" 2>/dev/null
    rm -f "$dir/holder.pid" "$dir/loops" "$dir/ready" "$dir/supervisor.pid" "$dir/seccomp.sock"
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
