# Sourced by the scenarios: the stacks, built the way users have them on
# /dev/vda (partitioned by run.sh), and a snapshot of what iolab may change.

# A phase's end, in seconds since the guest's kernel started, to
# /results/phases: the host's test prints them, so a guest run that grows
# says which phase grew.
mark() {
    echo "$(cut -d' ' -f1 /proc/uptime) $1" >> /results/phases
}

# The app under test: a 24 MiB data file on the filesystem, read whole.
make_app() {
    mkdir -p "$1/app"
    dd if=/dev/urandom of="$1/app/data" bs=1M count=24 2>/dev/null
    sync
}

# Laptop: ext4 on dm-crypt (a keyfile) on dm-linear (what an LVM logical
# volume is) on vda1, mounted at /home.
make_laptop() {
    s1=$(cat /sys/class/block/vda1/size)
    dmsetup create --noudevsync lv-home --table "0 $s1 linear /dev/vda1 0"
    dmsetup mknodes
    head -c 64 /dev/urandom > /root/home.key
    key=$(od -An -tx1 /root/home.key | tr -d ' \n')
    dmsetup create --noudevsync crypt-home \
        --table "0 $s1 crypt aes-xts-plain64 $key 0 /dev/mapper/lv-home 0"
    dmsetup mknodes
    mkfs.ext4 -q /dev/mapper/crypt-home
    mkdir -p /home && mount /dev/mapper/crypt-home /home
    mkdir -p /home/user && make_app /home/user
}

# Phone: f2fs on dm-linear on vda2 (Android's /data, without the
# dm-default-key layer Debian's kernel lacks), mounted at /data.
make_phone() {
    s2=$(cat /sys/class/block/vda2/size)
    dmsetup create --noudevsync userdata --table "0 $s2 linear /dev/vda2 0"
    dmsetup mknodes
    mkfs.f2fs -q /dev/mapper/userdata > /dev/null
    mkdir -p /data && mount -t f2fs /dev/mapper/userdata /data
    make_app /data
}

# What iolab may change, as text: every queue's scheduler and tunables,
# bdi limits, trace instances, mounts.
state() {
    for q in /sys/block/*/queue; do
        for f in scheduler nr_requests read_ahead_kb wbt_lat_usec; do
            [ -r "$q/$f" ] && echo "$q/$f $(cat "$q/$f")"
        done
    done
    for b in /sys/class/bdi/*; do
        echo "$b $(cat "$b/max_ratio" 2>/dev/null) $(cat "$b/min_ratio" 2>/dev/null)"
    done
    ls /sys/kernel/tracing/instances 2>/dev/null
    cut -d' ' -f1-3 /proc/mounts | sort
}
