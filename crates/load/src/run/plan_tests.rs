#![allow(clippy::unwrap_used)]

use super::*;
use crate::job::kinds::Rw;

fn job_in(dir: &std::path::Path, name: &str, rw: Rw, size: Option<u64>) -> Job {
    let mut j = Job::new(name);
    j.directory = Some(dir.to_path_buf());
    j.rw = rw;
    j.size = size;
    j
}

#[test]
fn readers_need_layout_writers_do_not() {
    let d = tempfile::tempdir().unwrap();
    let mut r = job_in(d.path(), "r", Rw::Read, Some(1 << 20));
    r.numjobs = 2;
    let w = job_in(d.path(), "w", Rw::Write, Some(1 << 20));
    let p = plan(&[r, w], false).unwrap();
    assert_eq!(p.jobs.len(), 2);
    assert_eq!(p.jobs[0].files.len(), 2);
    assert_eq!(p.layout.len(), 2);
    assert!(p.layout.iter().all(|l| l.from == 0 && l.to == 1 << 20));
    assert!(p.layout[0].path.ends_with("r.0.0"));
}

#[test]
fn stonewall_starts_a_new_group() {
    let d = tempfile::tempdir().unwrap();
    let a = job_in(d.path(), "a", Rw::Write, Some(4096));
    let mut b = job_in(d.path(), "b", Rw::Write, Some(4096));
    b.stonewall = true;
    let c = job_in(d.path(), "c", Rw::Write, Some(4096));
    let p = plan(&[a, b, c], false).unwrap();
    let groups: Vec<usize> = p.jobs.iter().map(|j| j.group).collect();
    assert_eq!(groups, [0, 1, 1]);
}

#[test]
fn size_comes_from_the_existing_file_or_is_required() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("data"), vec![1u8; 65536]).unwrap();
    let mut j = job_in(d.path(), "j", Rw::Read, None);
    j.filename = Some("data".into());
    let p = plan(&[j], false).unwrap();
    assert_eq!(p.jobs[0].size, 65536);
    assert!(p.layout.is_empty());
    let e = plan(&[job_in(d.path(), "k", Rw::Read, None)], false).unwrap_err();
    assert!(
        iolab_sys::is_usage(&e) && e.to_string().contains("size is not set"),
        "{e}"
    );
}

#[test]
fn files_larger_than_free_space_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let e = plan(&[job_in(d.path(), "huge", Rw::Read, Some(1 << 60))], false).unwrap_err();
    assert!(iolab_sys::is_usage(&e), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("free") && msg.contains("statvfs"), "{msg}");
    // Writers are counted too: they grow their files to `size`.
    let e = plan(&[job_in(d.path(), "huge", Rw::Write, Some(1 << 60))], false).unwrap_err();
    assert!(iolab_sys::is_usage(&e));
}

#[test]
fn named_workloads_fit_the_free_space() {
    let d = tempfile::tempdir().unwrap();
    let mut jobs = crate::job::named::generate(&crate::job::named::lookup("5r5w-seq").unwrap());
    for j in &mut jobs {
        j.directory = Some(d.path().to_path_buf());
    }
    let p = plan(&jobs, false).unwrap();
    let free = io_file::free_bytes(d.path()).unwrap();
    for pj in &p.jobs {
        assert!(pj.size <= NAMED_FILE_SIZE && pj.size >= NAMED_MIN_FILE_SIZE);
        assert_eq!(pj.size % (1 << 20), 0);
        assert!(pj.size * 10 <= free, "{} x 10 > {free}", pj.size);
    }
    // Readers get laid out; writers grow their own files.
    assert_eq!(p.layout.len(), 5);
}

#[test]
fn warns_about_options_without_effect() {
    let d = tempfile::tempdir().unwrap();
    let mut j = job_in(d.path(), "j", Rw::Write, Some(4096));
    j.iodepth = 8;
    let p = plan(&[j], false).unwrap();
    assert!(p.warnings[0].contains("iodepth=8"), "{:?}", p.warnings);
}

#[test]
fn scheduler_needs_a_block_device() {
    let d = tempfile::tempdir().unwrap();
    let mut j = job_in(d.path(), "j", Rw::Write, Some(4096));
    j.ioscheduler = Some("no-such-sched".into());
    let e = plan(&[j], false).unwrap_err();
    assert!(iolab_sys::is_usage(&e));
    // Either the temp dir is on a disk (then the name is refused with the
    // list of offered ones) or on tmpfs (no scheduler at all).
    let msg = e.to_string();
    assert!(
        msg.contains("available are") || msg.contains("not on a block device"),
        "{msg}"
    );
}

#[test]
fn cpuio_jobs_have_no_targets() {
    let mut j = Job::new("burn");
    j.ioengine = IoEngine::CpuIo;
    j.cpuload = Some(50);
    let p = plan(&[j], false).unwrap();
    assert!(p.jobs[0].files.is_empty());
    assert_eq!(p.jobs[0].size, 0);
}
