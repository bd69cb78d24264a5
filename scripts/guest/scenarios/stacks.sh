#!/bin/sh
# In-place experiments on the storage stacks users have (see common.sh):
# - laptop: ext4 on dm-crypt on dm-linear on vda1;
# - phone: f2fs on dm-linear on vda2;
# - fault: the laptop experiment SIGKILLed mid-load, then the next iolab
#   run restores the disk's scheduler and removes the scratch directory;
# - refused: tmpfs and overlay, exit 2.
# What the host-side test (crates/iolab/tests/vm/stacks.rs) checks is
# left in /results.
set -u
R=/results
. /scenarios/common.sh

# iolab startup in place in $2 (named $1), vda's scheduler sampled while
# it runs.
run_in() {
    name=$1 dir=$2
    cat /sys/block/vda/queue/scheduler > "$R/$name.sched-before"
    iolab startup --in "$dir" --schedulers mq-deadline,bfq --workloads idle,1r --reps 2 \
        --warmup 1 --timeout 60 --load-option size=48M --progress plain --db "$R/$name.db" \
        -- sh -c "cat $dir/app/data > /dev/null" > "$R/$name.out" 2> "$R/$name.err" &
    pid=$!
    while kill -0 $pid 2>/dev/null; do
        cat /sys/block/vda/queue/scheduler >> "$R/$name.sched-seen"
        sleep 0.2
    done
    wait $pid
    echo $? > "$R/$name.rc"
    cat /sys/block/vda/queue/scheduler > "$R/$name.sched-after"
    ls -a "$dir" > "$R/$name.ls-after"
    iolab results export 1 --format json --db "$R/$name.db" > "$R/$name.json" 2>> "$R/$name.err"
}

echo "== laptop"
make_laptop
run_in laptop /home/user

echo "== delayacct: the main thread's D-state I/O against the kernel's delay accounting"
# dd is the main thread and does the reads itself (cold, through dm-crypt);
# Debian's kernel accounts blkio soundly (the host's 6.18 did not).
iolab startup --in /home/user --schedulers mq-deadline --workloads idle --reps 2 --warmup 0 \
    --timeout 60 --explain --progress plain --db "$R/delayacct.db" \
    -- dd if=/home/user/app/data of=/dev/null bs=1M > /dev/null 2> "$R/delayacct.err"
echo $? > "$R/delayacct.rc"
iolab results export 1 --format json --db "$R/delayacct.db" > "$R/delayacct.json" 2>> "$R/delayacct.err"

echo "== fault: SIGKILL during the loaded cell's second start"
state > "$R/fault.state-before"
iolab startup --in /home/user --schedulers bfq --workloads idle,1r --reps 3 --warmup 1 \
    --timeout 60 --load-option size=48M --progress plain --db "$R/fault.db" \
    -- sh -c "cat /home/user/app/data > /dev/null" > /dev/null 2> "$R/fault.err" &
pid=$!
i=0
while ! grep -q '/ 1r rep 1:' "$R/fault.err" 2>/dev/null && [ $i -lt 1500 ]; do
    sleep 0.1; i=$((i+1))
done
kill -9 $pid
wait $pid 2>/dev/null
grep -c ' starts: ' "$R/fault.err" > "$R/fault.lines-at-kill"
cat /sys/block/vda/queue/scheduler > "$R/fault.sched-at-kill"
ls -a /home/user > "$R/fault.ls-at-kill"
iolab restore > "$R/fault.restore" 2>&1
echo $? > "$R/fault.restore-rc"
state > "$R/fault.state-after"
ls -a /home/user > "$R/fault.ls-after"
iolab results export 1 --format json --db "$R/fault.db" > "$R/fault.json" 2>> "$R/fault.err"
umount /home

echo "== phone"
make_phone
run_in phone /data
umount /data

echo "== refused: tmpfs and overlay"
mkdir -p /mnt/t /mnt/lower /mnt/ov
mount -t tmpfs t /mnt/t
mkdir -p /mnt/t/u /mnt/t/w
iolab startup --in /mnt/t --db "$R/refused.db" -- true > /dev/null 2> "$R/tmpfs.err"
echo $? > "$R/tmpfs.rc"
mount -t overlay ov -o lowerdir=/mnt/lower,upperdir=/mnt/t/u,workdir=/mnt/t/w /mnt/ov
iolab startup --in /mnt/ov --db "$R/refused.db" -- true > /dev/null 2> "$R/overlay.err"
echo $? > "$R/overlay.rc"
echo "== done"
