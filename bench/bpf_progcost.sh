#!/bin/bash
# What each BPF program of `iolab trace bio --hist --tracer bpf` costs by the
# kernel's own accounting (kernel.bpf_stats_enabled): run_time_ns per I/O of
# a 3 s randread 4 KiB load on a fresh lab; `raw` forces the raw-tracepoint
# rung (IOLAB_BPF_ATTACH=raw), for the same numbers one rung down;
# `floor-empty` and `floor-clock` measure bench/bpf_floor's programs instead
# of iolab's (two tp_btf programs doing nothing, or only reading the clock:
# the least any BPF latency collector costs here; needs clang-14).
#
#   bash bench/bpf_progcost.sh IOLAB zram [raw|floor-empty|floor-clock]   # zram, psync QD1
#   bash bench/bpf_progcost.sh IOLAB loop [raw|floor-empty|floor-clock]   # loop, io_uring QD32
set -e
I=$1
kind=${2:?usage: bpf_progcost.sh IOLAB zram|loop [raw|floor-empty|floor-clock]}
what=${3:-}
case $what in
'' | raw | floor-empty | floor-clock) ;;
*) echo "bpf_progcost.sh: $what: expected raw, floor-empty or floor-clock" >&2; exit 2 ;;
esac
[ "$what" = raw ] && export IOLAB_BPF_ATTACH=raw
case $kind in
zram) lab=(--zram) engine=(--ioengine psync --iodepth 1) ;;
loop) lab=() engine=(--ioengine io_uring --iodepth 32) ;;
*) echo "bpf_progcost.sh: $kind: expected zram or loop" >&2; exit 2 ;;
esac
export T=${TMPDIR:-/tmp}/iolab-progcost
name=progcost
# Statistics off, the tracer stopped and the lab down whatever happens.
trap '[ -n "${tp:-}" ] && kill -TERM $tp 2>/dev/null; sysctl -qw kernel.bpf_stats_enabled=0; $I lab down $name >/dev/null 2>&1 || true' EXIT
$I lab up --name $name "${lab[@]}" --size 1GiB --fs none --json > $T.json
dev=$(python3 -c 'import json,os;j=json.load(open(os.environ["T"]+".json"));print(j.get("device") or j["lab"]["device"])')
dd if=/dev/urandom of=$dev bs=1M count=256 oflag=direct status=none
sysctl -qw kernel.bpf_stats_enabled=1
if [[ $what == floor-* ]]; then
    flags=(-DCLOCK)
    [ "$what" = floor-empty ] && flags=()
    [ "$kind" = loop ] && flags+=(-DRQ)
    here=$(dirname "$0")/bpf_floor
    clang-14 -O2 -g -target bpf -I/usr/include/"$(uname -m)"-linux-gnu "${flags[@]}" \
        -c "$here/floor.bpf.c" -o $T.floor.o
    echo '{"attach": "tp_btf (bench/bpf_floor, '"$what"')"}' > $T.out
    python3 "$here/load.py" $T.floor.o 2>$T.err &
else
    $I trace bio -d $dev --hist --tracer bpf --json > $T.out 2>$T.err &
fi
tp=$!
sleep 3
if [[ $what == floor-* ]] && ! grep -q "attached 2 programs" $T.err; then
    echo "bpf_progcost.sh: the floor programs did not attach: $(cat $T.err)" >&2
    exit 1
fi
$I load --filename $dev --rw randread --bs 4k --direct --size $((256<<20)) --runtime 3 --time-based --json "${engine[@]}" > $T.load.json
bpftool prog show -j > $T.progs.json
kill -INT $tp; wait $tp || true
tp=  # reaped: its pid is no longer ours to signal
FLOOR=$([[ $what == floor-* ]] && echo 1 || echo 0) python3 - <<'P'
import json,os
T=os.environ["T"]
floor=os.environ["FLOOR"]=="1"
ps=json.load(open(T+".progs.json"))
ios=json.load(open(T+".load.json"))["jobs"][0]["read"]["total_ios"]
print("attach:", json.load(open(T+".out")).get("attach"))
tot=0
for p in ps:
    name=p.get("name","")
    mine=name in ("start","done") if floor else name.startswith(("raw_","rq_","bio_","btf_"))
    if mine and p.get("run_cnt"):
        ns=p["run_time_ns"]/p["run_cnt"]; per=p["run_time_ns"]/ios; tot+=per
        print(f'{p["name"]:20} runs {p["run_cnt"]:9} {ns:7.0f} ns/run {per:7.0f} ns/IO')
print("ios",ios,"total ns/IO",round(tot))
P
