#!/bin/bash
# What each BPF program of `iolab trace bio --hist --tracer bpf` costs by the
# kernel's own accounting (kernel.bpf_stats_enabled): run_time_ns per I/O of a
# 3 s load; `raw` as the second argument forces the raw-tracepoint rung.
# usage: progcost_zram.sh IOLAB [raw] -> per-program ns/run on a zram lab, psync QD1 randread 3 s
set -e
export T=${TMPDIR:-/tmp}/iolab-pcz
I=$1
[ "${2:-}" = raw ] && export IOLAB_BPF_ATTACH=raw
$I lab up --name pcz --zram --size 1GiB --fs none --json > $T.json
dev=$(python3 -c 'import json,os;j=json.load(open(os.environ["T"]+".json"));print(j.get("device") or j["lab"]["device"])')
dd if=/dev/urandom of=$dev bs=1M count=256 oflag=direct status=none
sysctl -qw kernel.bpf_stats_enabled=1
$I trace bio -d $dev --hist --tracer bpf --json > $T.out 2>$T.err &
tp=$!
sleep 3
$I load --filename $dev --rw randread --bs 4k --direct --size $((256<<20)) --runtime 3 --time-based --json --ioengine psync --iodepth 1 > $T.load.json
bpftool prog show -j > $T.progs.json
kill -INT $tp; wait $tp || true
sysctl -qw kernel.bpf_stats_enabled=0
$I lab down pcz > /dev/null
python3 - <<'P'
import json,os
ps=json.load(open(os.environ["T"]+".progs.json"))
ios=json.load(open(os.environ["T"]+".load.json"))["jobs"][0]["read"]["total_ios"]
print("attach:", json.load(open(os.environ["T"]+".out")).get("attach"))
tot=0
for p in ps:
    if p.get("run_cnt") and p.get("name","").startswith(("raw_","rq_","bio_","btf_")):
        ns=p["run_time_ns"]/p["run_cnt"]; per=p["run_time_ns"]/ios; tot+=per
        print(f'{p["name"]:20} runs {p["run_cnt"]:9} {ns:7.0f} ns/run {per:7.0f} ns/IO')
print("ios",ios,"total ns/IO",round(tot))
P
