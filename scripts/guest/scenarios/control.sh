#!/bin/sh
# Settings as plan axes on cgroup v2 (the guest mounts it at /sys/fs/cgroup
# with io): an ext4 filesystem on vda1 with the app's 24 MiB file, an
# in-place startup plan (`iolab startup --in`) under a background load, its
# plan given by iolab.args as `SCHEDULERS|REPS|WORKLOADS|FLAGS` (FLAGS: the
# --vary/--point/--recipe words with `+` for a space and `~` for a `;`:
# the kernel command line splits on spaces). What tests/control.rs and
# docs/CONTROL.md read is left in /results: the experiment's JSON
# (show.json), its text (show.txt), its stderr, the state before and after
# (state-before, state-after) and the root's groups, subtree_control and
# io.cost lines before and after (groups-before, groups-after).
set -u
R=/results
. /scenarios/common.sh
args=$(sed -n 's/.*iolab\.args=\([^ ]*\).*/\1/p' /proc/cmdline)
scheds=$(echo "$args" | cut -d'|' -f1)
reps=$(echo "$args" | cut -d'|' -f2)
workloads=$(echo "$args" | cut -d'|' -f3)
flags=$(echo "$args" | cut -d'|' -f4- | tr '~' ';' | tr '+' ' ')
cat /sys/fs/cgroup/cgroup.controllers > $R/controllers
uname -r > $R/kernel
mark boot
mkfs.ext4 -q /dev/vda1
mkdir -p /home && mount /dev/vda1 /home
mkdir -p /home/user && make_app /home/user
mark mkfs+app
state > $R/state-before
{ ls /sys/fs/cgroup; echo "subtree_control: $(cat /sys/fs/cgroup/cgroup.subtree_control)"; cat /sys/fs/cgroup/io.cost.qos /sys/fs/cgroup/io.cost.model 2>/dev/null; } > $R/groups-before
# $flags splits into words here (no eval: a `;` stays inside its word).
# shellcheck disable=SC2086
iolab startup --in /home/user --schedulers "$scheds" --workloads "$workloads" \
    --reps "$reps" --warmup 2 --load-option size=64M --timeout 60 --db /root/r.db \
    $flags -- cat /home/user/app/data > $R/startup.out 2> $R/startup.err
echo $? > $R/startup.rc
mark startup
iolab results show 1 --db /root/r.db --json > $R/show.json 2>> $R/startup.err
iolab results show 1 --db /root/r.db > $R/show.txt 2>> $R/startup.err
cp /root/r.db $R/r.db
mark show
state > $R/state-after
{ ls /sys/fs/cgroup; echo "subtree_control: $(cat /sys/fs/cgroup/cgroup.subtree_control)"; cat /sys/fs/cgroup/io.cost.qos /sys/fs/cgroup/io.cost.model 2>/dev/null; } > $R/groups-after
umount /home
