#!/bin/sh
# The fault campaign's in-place case (bench/fault_campaign.py): startup in
# place on the laptop stack (common.sh), SIGKILLed after each delay named
# on the kernel command line (iolab.args=1.5,7.2,...), then `iolab restore`
# as the next run would. For kill N: the state before and after
# (state-before, N.state-after), the progress lines printed before the
# kill (N.lines: each is printed after its start is stored), the runs the
# database holds (N.json), and the directory's listing after (N.ls).
set -u
R=/results
. /scenarios/common.sh
make_laptop
state > "$R/state-before"
delays=$(sed -n 's/.*iolab\.args=\([^ ]*\).*/\1/p' /proc/cmdline | tr ',' ' ')
n=0
for d in $delays; do
    n=$((n+1))
    iolab startup --in /home/user --schedulers mq-deadline,bfq --workloads idle,1r --reps 4 \
        --warmup 1 --timeout 60 --load-option size=48M --progress plain --db "$R/$n.db" \
        -- sh -c "cat /home/user/app/data > /dev/null" > /dev/null 2> "$R/$n.err" &
    pid=$!
    sleep "$d"
    kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    grep -c ' starts: ' "$R/$n.err" > "$R/$n.lines"
    iolab restore > "$R/$n.restore" 2>&1
    state > "$R/$n.state-after"
    ls -a /home/user > "$R/$n.ls"
    iolab results export 1 --format json --db "$R/$n.db" > "$R/$n.json" 2>/dev/null || echo '{"runs":[]}' > "$R/$n.json"
done
echo "$n" > "$R/kills"
