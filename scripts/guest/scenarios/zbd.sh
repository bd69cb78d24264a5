#!/bin/sh
# zonemode=zbd on a zoned device as strict as a host-managed drive or a
# zoned UFS: a null_blk device made through configfs (64 MiB, 4 MiB zones,
# the first two conventional, at most 4 open and 4 active zones, data kept
# in memory, discard on). The kernel fails any write that is not at its
# zone's write pointer and any write that would open a fifth zone, so a
# job that ends without an error placed every write where the device
# wanted it. Each job runs with the installed fio (built in with
# IOLAB_GUEST_FIO=1) and with iolab, on the same device from the same
# state; what tests/load_zbd.rs checks is left in /results:
# TOOL.JOB.json (the report), .rc, .err, .zones (blkzone report after),
# .ds (the device's diskstats before and after), .log (write_iolog).
set -u
R=/results

mount -t configfs none /sys/kernel/config
n=/sys/kernel/config/nullb/zbd
mkdir $n
for kv in size=64 blocksize=4096 memory_backed=1 zoned=1 zone_size=4 \
          zone_nr_conv=2 zone_max_open=4 zone_max_active=4 power=1; do
    echo "${kv#*=}" > "$n/${kv%%=*}"
done
# 6.1 names a configfs device after its directory (later kernels:
# nullbN).
name=zbd
[ -d /sys/block/$name ] || name=nullb$(cat $n/index)
D=/dev/$name
i=0
while [ ! -b "$D" ] && [ $i -lt 50 ]; do mdev -s; sleep 0.1; i=$((i+1)); done
q=/sys/block/$name/queue
{ cat $q/zoned; cat $q/max_open_zones; cat $q/max_active_zones; cat $q/chunk_sectors; cat $q/scheduler; } > $R/device
blkzone report $D > $R/zones-fresh

ds() { grep " $name " /proc/diskstats; }

# The device is strict: a write in the middle of an empty sequential zone
# (zone 4, 64 KiB in) fails.
dd if=/dev/zero of=$D bs=64k count=1 seek=257 oflag=direct 2> $R/strict.err
echo $? > $R/strict.rc

# run TOOL JOB ARGS...: one job with TOOL (fio | iolab), its report, exit
# code, zones and diskstats kept.
run() {
    tool=$1 job=$2; shift 2
    ds > $R/$tool.$job.ds
    case $tool in
        fio) fio --output-format=json --output=$R/$tool.$job.json "$@" 2> $R/$tool.$job.err ;;
        iolab) iolab load --output-format=json --output $R/$tool.$job.json --force "$@" 2> $R/$tool.$job.err ;;
    esac
    echo $? > $R/$tool.$job.rc
    ds >> $R/$tool.$job.ds
    blkzone report $D > $R/$tool.$job.zones
}

common="--filename=$D --zonemode=zbd --direct=1"
for tool in fio iolab; do
    echo "== $tool"
    blkzone reset $D
    # Every zone written in order, the conventional ones too.
    run $tool seq --name=seq $common --rw=write --bs=256k --ioengine=psync \
        --write_iolog=$R/$tool.seq.log
    blkzone reset $D
    # Two jobs writing at random, 1.5 times the device each, at depth 8:
    # zones fill and are reset, under the device's limit of 4 open zones.
    run $tool rand --name=a $common --rw=randwrite --bs=64k --ioengine=libaio \
        --iodepth=8 --io_size=96m --name=b $common --rw=randwrite --bs=64k \
        --ioengine=libaio --iodepth=8 --io_size=96m
    # Reads of what they left, below the write pointers only.
    run $tool read --name=read $common --rw=randread --bs=64k --ioengine=libaio \
        --iodepth=4 --io_size=32m
    # Written and read back with crc32c: zones reset first, none reset
    # while the data is needed.
    run $tool verify --name=verify $common --rw=randwrite --bs=64k --ioengine=libaio \
        --iodepth=4 --verify=crc32c
    # A trim of a sequential zone is its reset (null_blk has no discard
    # in zoned mode, so the conventional zones are left out).
    run $tool trim --name=trim $common --rw=trim --bs=4m --ioengine=psync --offset=8m
done

# Without zonemode=zbd, random writes to the sequential zones: iolab
# refuses before writing, fio fails at the device; the same writes to the
# two conventional zones run in both.
for tool in fio iolab; do
    run $tool nozbd --name=nozbd --filename=$D --rw=randwrite --bs=64k --direct=1 \
        --offset=8m --size=8m
    run $tool conv --name=conv --filename=$D --rw=randwrite --bs=64k --direct=1 --size=8m
done
echo done
