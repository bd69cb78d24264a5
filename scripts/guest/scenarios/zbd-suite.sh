#!/bin/sh
# fio's own zoned-device suite, t/zbd/test-zbd-support (fio's source tree
# gives it: bench/zbd_suite.py builds the guest with it as /extra), on a
# zoned null_blk made as fio's t/zbd/run-tests-against-nullb makes one,
# run once with the installed fio and once with `iolab load` as the fio
# the suite calls. iolab.args=SIZE_MB,ZONE_MB,CAP_MB,CONV_PERCENT,MAX_OPEN
# (run-tests-against-nullb's sections; default 256,1,1,10,0). Left in
# /results: TOOL.out (the suite's PASS/FAIL/SKIP lines) and TOOL.logs/
# (its log of each test).
set -u
R=/results
args=$(sed -n 's/.*iolab\.args=\([^ ]*\).*/\1/p' /proc/cmdline)
[ -n "$args" ] || args=256,1,1,10,0
IFS=, read -r size zone cap conv maxopen <<EOF
$args
EOF
echo "$args" > $R/config

# bash's process substitution needs /dev/fd (devtmpfs has none).
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
mount -t configfs none /sys/kernel/config
n=/sys/kernel/config/nullb/zsuite
mkdir $n
echo 0 > $n/completion_nsec
echo 4096 > $n/blocksize
echo "$size" > $n/size
echo 1 > $n/memory_backed
if [ "$conv" -lt 100 ]; then
    echo 1 > $n/zoned
    echo "$zone" > $n/zone_size
    [ "$cap" -lt "$zone" ] && echo "$cap" > $n/zone_capacity
    [ "$conv" -gt 0 ] && echo $((size / zone * conv / 100)) > $n/zone_nr_conv
    [ "$maxopen" -gt 0 ] && echo "$maxopen" > $n/zone_max_open
fi
echo 1 > $n/power
name=zsuite
[ -d /sys/block/$name ] || name=nullb$(cat $n/index)
D=/dev/$name
i=0
while [ ! -b "$D" ] && [ $i -lt 50 ]; do mdev -s; sleep 0.1; i=$((i+1)); done
cat /sys/block/$name/queue/zoned > $R/zoned

opt=""
[ "$maxopen" -gt 0 ] && opt="-o $maxopen"
for tool in fio iolab; do
    t=/tmp/$tool
    mkdir -p $t/t
    cp -r /extra/zbd $t/t/zbd
    if [ $tool = fio ]; then
        ln -s /bin/fio $t/fio
    else
        # The suite writes the device it is given, as fio does; iolab
        # writes a device it did not make only with --force.
        printf '#!/bin/sh\nexec iolab load --force "$@"\n' > $t/fio
        chmod +x $t/fio
    fi
    [ "$conv" -lt 100 ] && blkzone reset $D
    start=$(cut -d. -f1 /proc/uptime)
    (cd $t/t/zbd && bash ./test-zbd-support $opt $D) > $R/$tool.out 2>&1
    echo $? > $R/$tool.rc
    echo $(( $(cut -d. -f1 /proc/uptime) - start )) > $R/$tool.seconds
    mkdir -p $R/$tool.logs
    cp $t/t/zbd/test-zbd-support.log.* $R/$tool.logs/ 2>/dev/null
done
echo done
