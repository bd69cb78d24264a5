#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;
use crate::job::kinds::{CpuMode, IoEngine, Rw};

fn ok(text: &str) -> Vec<Job> {
    parse(text, Path::new("t.fio")).unwrap()
}

fn err(text: &str) -> String {
    let e = parse(text, Path::new("t.fio")).unwrap_err();
    assert!(iolab_sys::is_usage(&e), "{e}");
    e.to_string()
}

#[test]
fn global_is_inherited_and_overridden() {
    let jobs = ok("\
; the EROFS seed's job
[global]
directory=/mnt/lab
bs=4k
size=500m

[reader]
rw=randread
direct=1

[writer]
rw=write
bs=1M
");
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0].name, "reader");
    assert_eq!(jobs[0].directory, Some(PathBuf::from("/mnt/lab")));
    assert_eq!(jobs[0].bs, 4096);
    assert!(jobs[0].direct);
    assert_eq!(jobs[1].bs, 1 << 20);
    assert_eq!(jobs[1].size, Some(500 << 20));
    assert!(!jobs[1].direct);
    // Only the job's own options are reported as its options.
    assert_eq!(jobs[0].options.len(), 2);
}

#[test]
fn a_later_global_applies_to_later_jobs_only() {
    let jobs = ok("[a]\nsize=1m\n[global]\nbs=8k\n[b]\nsize=1m\n");
    assert_eq!(jobs[0].bs, 4096);
    assert_eq!(jobs[1].bs, 8192);
}

#[test]
fn every_supported_option() {
    std::env::set_var("IOLAB_TEST_RUNTIME", "7");
    let jobs = ok("\
[all]
name=renamed
description=everything at once
filename=data.bin
directory=/tmp
rw=randrw
rwmixread=70
bs=64k
size=1g
numjobs=3
iodepth=32
ioengine=io_uring
direct=1
runtime=${IOLAB_TEST_RUNTIME}
time_based
ramp_time=500ms
rate=10m,5m
rate_iops=100
fsync=8
fdatasync=4
end_fsync=1
loops=2
thread
group_reporting=1
invalidate=0
ioscheduler=bfq
stonewall
randrepeat=0

[burn]
ioengine=cpuio
cpuload=90
cpumode=qsort
cpuchunks=10000
buffered=0
wait_for_previous=1
readwrite=write
rwmixwrite=20
blocksize=8k
");
    let a = &jobs[0];
    assert_eq!(a.name, "renamed");
    assert_eq!(a.description.as_deref(), Some("everything at once"));
    assert_eq!(a.filename, Some(PathBuf::from("data.bin")));
    assert_eq!(a.rw, Rw::RandRw);
    assert_eq!(a.rwmixread, 70);
    assert_eq!(a.bs, 64 << 10);
    assert_eq!(a.size, Some(1 << 30));
    assert_eq!((a.numjobs, a.iodepth), (3, 32));
    assert_eq!(a.ioengine, IoEngine::IoUring);
    assert!(a.direct && a.time_based && a.end_fsync && a.stonewall && !a.invalidate);
    assert!(!a.randrepeat && jobs[1].randrepeat);
    assert_eq!(a.runtime, Some(Duration::from_secs(7)));
    assert_eq!(a.ramp_time, Duration::from_millis(500));
    assert_eq!(a.rate.read, Some(10 << 20));
    assert_eq!(a.rate.write, Some(5 << 20));
    assert_eq!(a.rate_iops.read, Some(100));
    assert_eq!((a.fsync, a.fdatasync, a.loops), (8, 4, 2));
    assert_eq!(a.ioscheduler.as_deref(), Some("bfq"));
    let b = &jobs[1];
    assert_eq!(b.ioengine, IoEngine::CpuIo);
    assert_eq!(b.cpuload, Some(90));
    assert_eq!(b.cpumode, CpuMode::Qsort);
    assert_eq!(b.cpuchunks, Duration::from_millis(10));
    assert!(b.direct && b.stonewall);
    assert_eq!(b.rw, Rw::Write);
    assert_eq!(b.rwmixread, 80);
    assert_eq!(b.bs, 8192);
}

#[test]
fn comments_and_blank_lines() {
    let jobs = ok("# header\n\n[j] ; trailing\n  ; indented comment\nsize = 4m # spaces and comment\nfilename=a#b\n");
    assert_eq!(jobs[0].size, Some(4 << 20));
    assert_eq!(jobs[0].filename, Some(PathBuf::from("a#b")));
}

#[test]
fn unknown_option_names_file_line_and_option() {
    let e = err("[global]\nbs=4k\n\n[j]\nnrfilez=2\n");
    assert!(
        e.starts_with("t.fio:5: [j] unknown option \"nrfilez\": did you mean nrfiles?"),
        "{e}"
    );
    assert!(e.contains("--help"), "{e}");
}

#[test]
fn bad_value_names_the_option_and_line() {
    let e = err("[j]\nbs=four\n");
    assert!(e.starts_with("t.fio:2:") && e.contains("bs=four"), "{e}");
    let e = err("[j]\nrw=discard\n");
    assert!(e.contains("t.fio:2:") && e.contains("randrw"), "{e}");
    let e = err("[j]\nruntime=soon\n");
    assert!(e.contains("runtime=soon"), "{e}");
}

#[test]
fn missing_value() {
    let e = err("[j]\nsize=\n");
    assert!(
        e.starts_with("t.fio:2:") && e.contains("needs a value"),
        "{e}"
    );
    let e = err("[j]\nbs\n");
    assert!(e.contains("needs a value"), "{e}");
}

#[test]
fn bad_sections() {
    assert!(err("[j\nsize=1m\n").starts_with("t.fio:1: bad section header"));
    assert!(err("[]\n").contains("empty section name"));
    let e = err("size=1m\n[j]\n");
    assert!(
        e.starts_with("t.fio:1:") && e.contains("outside a section"),
        "{e}"
    );
    assert!(err("[global]\nbs=4k\n").contains("no jobs"));
    assert!(err("").contains("no jobs"));
}

#[test]
fn combinations_are_checked_at_the_job_header() {
    let e = err("[global]\nsize=1m\n[burn]\nioengine=cpuio\n");
    assert!(
        e.starts_with("t.fio:3: [burn]") && e.contains("cpuload"),
        "{e}"
    );
}

#[test]
fn unset_environment_variables_are_errors() {
    let e = err("[j]\ndirectory=${IOLAB_SURELY_UNSET_VAR}\n");
    assert!(
        e.contains("IOLAB_SURELY_UNSET_VAR") && e.contains("not set"),
        "{e}"
    );
    assert!(err("[j]\ninclude other.fio\n").contains("include"));
}

#[test]
fn reads_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("j.fio");
    std::fs::write(&p, "[j]\nsize=1m\n").unwrap();
    assert_eq!(read(&p).unwrap()[0].size, Some(1 << 20));
    let e = read(&dir.path().join("missing.fio")).unwrap_err();
    assert!(
        iolab_sys::is_usage(&e) && e.to_string().contains("1r1w"),
        "{e}"
    );
}
