# Sourced by build.sh and boot-build.sh: Debian's kernel for the guest.
# guest_need PACKAGE...: installs the Debian packages missing.
# guest_kernel OUT DEBS: unpacks the package linux-image-amd64 depends on
# (downloaded once into DEBS) into OUT/kernel, copies its image to
# OUT/vmlinuz and sets kdir and kver; guest_modules ROOT MODULE...: copies
# the modules with their dependencies into ROOT/lib/modules and lists
# them, in load order, in ROOT/modules.load.
guest_need() {
    local need=() p
    for p in "$@"; do
        dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
    done
    if ((${#need[@]})); then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq "${need[@]}" >/dev/null
    fi
}

guest_kernel() {
    local out=$1 debs=$2 pkg deb
    pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
    # One download at a time into DEBS: the guest tests build their guests
    # concurrently (tests/vm/), and a second build must not find the
    # first one's half-written package.
    exec 9>"$debs/.lock"
    flock 9
    deb=$(ls "$debs/${pkg}"_*.deb 2>/dev/null | head -1 || true)
    if [ -z "$deb" ]; then
        (cd "$debs" && apt-get download "$pkg" 2>/dev/null)
        deb=$(ls "$debs/${pkg}"_*.deb | head -1)
    fi
    exec 9>&-
    kdir="$out/kernel"
    if [ ! -d "$kdir/boot" ] || [ "$deb" -nt "$kdir/boot" ]; then
        rm -rf "$kdir"; mkdir -p "$kdir"
        dpkg-deb -x "$deb" "$kdir"
    fi
    kver=$(ls "$kdir/lib/modules" | head -1)
    [ -f "$kdir/lib/modules/$kver/modules.dep" ] || depmod -b "$kdir" "$kver"
    cp "$kdir/boot/vmlinuz-$kver" "$out/vmlinuz"
}

guest_modules() {
    local root=$1; shift
    : > "$root/modules.load"
    for m in "$@"; do
        modprobe -d "$kdir" -S "$kver" --show-depends "$m" 2>/dev/null | awk '/^insmod/ {print $2}'
    done | awk '!seen[$0]++' | while read -r ko; do
        rel=${ko#"$kdir"/lib/modules/"$kver"/}
        mkdir -p "$root/lib/modules/$(dirname "$rel")"
        cp "$ko" "$root/lib/modules/$rel"
        echo "$rel" >> "$root/modules.load"
    done
}
