//! Shared by the `iolab load` integration tests: a private run directory
//! and work directory per test, the binary, and checks of fio's JSON.
#![allow(clippy::unwrap_used, dead_code)]

use std::path::Path;
use std::process::{Command, Output};

use iolab_guard::Guard;
use serde_json::Value;

/// Each test's own run directory, so children never meet other runs'
/// journals.
pub struct Env {
    run: tempfile::TempDir,
    work: tempfile::TempDir,
}

impl Env {
    /// Fresh directories.
    pub fn new() -> Env {
        Env {
            run: tempfile::tempdir().unwrap(),
            work: tempfile::tempdir_in("/var/tmp").unwrap(),
        }
    }

    /// The work directory (on /var/tmp, a real disk).
    pub fn dir(&self) -> &Path {
        self.work.path()
    }

    /// `iolab load ARGS` with the private run directory.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
        c.env("IOLAB_RUN_DIR", self.run.path())
            .arg("load")
            .args(args);
        c
    }

    /// Runs `iolab load ARGS` to completion.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// A guard journaling in this test's own run directory.
    pub fn guard(&self) -> Guard {
        Guard::in_dir(self.run.path().join("fixture"))
    }
}

/// fio is one of the packages `.ci/run` installs; without it the test says
/// so and, in CI, fails.
pub fn fio_or_skip(test: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("fio").is_file()));
    if !found {
        iolab_testkit::skip(test, "needs fio in PATH (apt-get install fio)");
    }
    found
}

pub fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): stdout {} stderr {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The fio fields a script would read, checked for presence and type.
pub fn assert_fio_shape(job: &Value) {
    assert!(job["jobname"].is_string());
    assert!(job["error"].is_i64());
    assert!(job["usr_cpu"].is_f64() && job["sys_cpu"].is_f64());
    for dir in ["read", "write"] {
        let d = &job[dir];
        for f in ["io_bytes", "bw_bytes", "runtime", "total_ios"] {
            assert!(d[f].is_u64(), "{dir}.{f}: {d}");
        }
        assert!(d["iops"].is_f64(), "{dir}.iops");
        for f in ["min", "max", "N"] {
            assert!(d["lat_ns"][f].is_u64(), "{dir}.lat_ns.{f}");
        }
        assert!(d["lat_ns"]["mean"].is_f64() && d["lat_ns"]["stddev"].is_f64());
    }
}

/// Checks one direction of a fio-style result against outside truths: the
/// wall clock the test measured around the whole command (`wall`), and the
/// fixed block size the job asked for (`bs`). The runtime cannot exceed the
/// wall clock; so the reported bandwidth and IOPS cannot be below bytes and
/// I/Os over the wall clock; every I/O moved exactly `bs` bytes.
pub fn assert_consistent(d: &Value, wall: std::time::Duration, bs: u64) {
    let ios = d["total_ios"].as_u64().unwrap();
    let bytes = d["io_bytes"].as_u64().unwrap();
    let runtime_ms = d["runtime"].as_u64().unwrap();
    let wall_ms = iolab_sys::cast::duration_ms(wall);
    assert!(
        runtime_ms <= wall_ms,
        "runtime {runtime_ms} ms > wall clock {wall_ms} ms"
    );
    assert_eq!(bytes, ios * bs, "{ios} I/Os of {bs} B but {bytes} B");
    let floor_bw = bytes as f64 / wall.as_secs_f64();
    let bw = d["bw_bytes"].as_u64().unwrap() as f64;
    assert!(
        bw >= floor_bw * 0.99,
        "bw {bw} B/s below bytes/wall {floor_bw}"
    );
    let floor_iops = ios as f64 / wall.as_secs_f64();
    let iops = d["iops"].as_f64().unwrap();
    assert!(
        iops >= floor_iops * 0.99,
        "iops {iops} below ios/wall {floor_iops}"
    );
}
