#!/usr/bin/env python3
"""Where a BPF block collector's time goes: the same zram psync 4 KiB load
(iolab load, 3 s) untraced, under empty bpftrace programs on the classic
and on the raw block_bio_* tracepoints, under a classic program that
filters by device and stores a timestamp, and under a raw pair that only reads the clock at each end (the floor of any
collector that times a bio), and under `iolab trace bio
--hist --tracer bpf`; 3 rounds, alternating order; prints the load
thread's CPU per I/O (getrusage per thread, from the load's JSON) and
what each adds. Needs root, bpftrace, a release build.

    python3 bench/bpf_where.py
"""
import subprocess, json, time, os, sys, statistics
iolab="/work/main/target/release/iolab"
def sh(c, **k): return subprocess.run(c, check=True, **k)
lab=json.loads(subprocess.run([iolab,"lab","up","--name","where","--zram","--size","1GiB","--fs","none","--json"],capture_output=True,text=True,check=True).stdout)
dev=lab.get("device") or lab["lab"]["device"]
st=os.stat(dev); devno=(os.major(st.st_rdev)<<20)|os.minor(st.st_rdev)
sh(["dd","if=/dev/urandom",f"of={dev}","bs=1M","count=512","oflag=direct","status=none"])
scripts={
 "empty-tp": "tracepoint:block:block_bio_queue { } tracepoint:block:block_bio_complete { }",
 "empty-rawtp": "rawtracepoint:block_bio_queue { } rawtracepoint:block_bio_complete { }",
 "tp-filter-ktime": "tracepoint:block:block_bio_queue /args->dev == %d/ { @x = nsecs; } tracepoint:block:block_bio_complete /args->dev == %d/ { @y = nsecs; }" % (devno, devno),
 # The least any collector that times a bio can do: a clock read at each
 # end into a global (no pairing, no device check, no histogram).
 "rawtp-ktime": "rawtracepoint:block_bio_queue { @x = nsecs; } rawtracepoint:block_bio_complete { @y = nsecs; }",
}
modes=["off","empty-tp","empty-rawtp","rawtp-ktime","tp-filter-ktime","iolab-bpf"]
res={m:[] for m in modes}
try:
  for rnd in range(3):
    for m in (modes if rnd%2==0 else modes[::-1]):
        p=None
        if m in scripts:
            p=subprocess.Popen(["bpftrace","-e",scripts[m]],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL,start_new_session=True); time.sleep(3)
        elif m=="iolab-bpf":
            p=subprocess.Popen([iolab,"trace","bio","-d",dev,"--hist","--tracer","bpf","--json"],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL,start_new_session=True); time.sleep(2)
        out=subprocess.run([iolab,"load","--filename",dev,"--rw","randread","--bs","4k","--direct","--size",str(512<<20),"--runtime","3","--time-based","--json","--ioengine","psync","--iodepth","1"],capture_output=True,text=True,check=True).stdout
        j=json.loads(out)["jobs"][0]; rt=j["job_runtime"]/1000; cpu=(j["usr_cpu"]+j["sys_cpu"])/100*rt/j["read"]["total_ios"]*1e6
        res[m].append(cpu)
        if p: os.killpg(p.pid,2); p.wait()
        print(rnd,m,round(cpu,2),flush=True)
finally:
  subprocess.run([iolab,"lab","down","where"])
off=statistics.median(res["off"])
# The IOPS a CPU-bound load keeps is the untraced CPU per I/O over the
# traced one.
for m in modes: print(f"| {m} | {statistics.median(res[m]):.2f} | {statistics.median(res[m])-off:+.2f} | {off/statistics.median(res[m]):.3f} |")
