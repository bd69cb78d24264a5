#!/bin/sh
# A cgroup-v2-only host, as Fedora, Ubuntu since 21.10, Debian since 11
# and Arch boot: only the unified hierarchy is mounted (the guest's init
# mounts cgroup2 at /sys/fs/cgroup and no v1 controller anywhere), /var/tmp
# on a disk (ext4 on vda2: the default 4 GiB lab's image lives there, as on
# any distribution), FUSE as a module. Every command a new user runs first,
# each with no size and no backend given: the lab is whatever iolab picks
# by itself here (the device model, as the throttle needs cgroup v1).
#
# iolab.args: `ci`, `all` or `full`, the lists of scenarios/defaults.sh
# (CI's short list; every command; and the README's `startup --bw 40MiB/s
# -- APP` with every other option at its default too). For each command
# NAME: NAME.rc, NAME.out, NAME.err (and NAME.json, its experiment) in
# /results, and `table` with a line per command: NAME, exit code, seconds,
# the last line it printed. crates/iolab/tests/vm/cgroup_v2.rs reads them;
# bench/defaults_table.sh puts them beside the same commands on the host.
set -u
R=/results
. /scenarios/common.sh
mode=$(sed -n 's/.*iolab\.args=\([^ ]*\).*/\1/p' /proc/cmdline)

# What kind of host this is, for the record.
{
    echo "kernel $(uname -r)"
    echo "cgroup mounts: $(grep cgroup /proc/mounts | cut -d' ' -f2,3 | tr '\n' ' ')"
    echo "controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
    echo "blkio v1: $(ls /sys/fs/cgroup/blkio 2>&1 | head -1)"
    echo "fuse: $(ls -l /dev/fuse 2>&1)"
} > $R/host
cat $R/host

mkfs.ext4 -q /dev/vda2
mkdir -p /var/tmp && mount /dev/vda2 /var/tmp
mkfs.ext4 -q /dev/vda1
mkdir -p /home && mount /dev/vda1 /home
mkdir -p /home/user && make_app /home/user
state > $R/state-before

. /scenarios/defaults.sh
mkdir -p /root/dbs
DB_DIR=/root/dbs defaults_run "$R" /home/user "$mode"
state > $R/state-after
ls /sys/fs/cgroup > $R/cgroups-after
cat $R/table
