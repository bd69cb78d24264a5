//! `iolab load` through the real binary, without root: short real loads
//! in temp directories (fio-compatible JSON, consistent numbers), job
//! files, named workloads, Ctrl-C, and bad input (exit 2 with the line).
//! The root-only tests (devices, full disks, diskstats) are in
//! `load_devices.rs`.
#![allow(clippy::unwrap_used)]

mod load_env;

use std::time::Duration;

use load_env::{assert_consistent, assert_fio_shape, json, stderr, Env};

#[test]
fn a_short_real_load_reports_fio_json() {
    let env = Env::new();
    let dir = env.dir().to_str().unwrap();
    let t0 = std::time::Instant::now();
    let out = env.run(&[
        "--rw",
        "randrw",
        "--bs",
        "4k",
        "--size",
        "8m",
        "--runtime",
        "1",
        "--time-based",
        "--directory",
        dir,
        "--json",
    ]);
    let wall = t0.elapsed();
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    let job = &v["jobs"][0];
    assert_fio_shape(job);
    assert_eq!(job["jobname"], "job");
    assert_eq!(job["error"], 0);
    for dir in ["read", "write"] {
        let d = &job[dir];
        assert!(d["io_bytes"].as_u64().unwrap() > 0, "{dir}");
        assert_consistent(d, wall, 4096);
        let p = &d["clat_ns"]["percentile"];
        let keys = [
            "50.000000",
            "90.000000",
            "99.000000",
            "99.900000",
            "99.990000",
        ];
        let vals: Vec<u64> = keys.iter().map(|k| p[k].as_u64().unwrap()).collect();
        assert!(vals.windows(2).all(|w| w[0] <= w[1]), "{vals:?}");
        assert!(vals[4] <= d["lat_ns"]["max"].as_u64().unwrap());
    }
    // The laid-out file, named like fio's.
    assert_eq!(
        std::fs::metadata(env.dir().join("job.0.0")).unwrap().len(),
        8 << 20
    );
}

#[test]
fn fios_report_by_default_and_the_table_on_request() {
    let env = Env::new();
    let dir = env.dir().to_str().unwrap();
    let args = [
        "--rw",
        "write",
        "--bs",
        "64k",
        "--size",
        "4m",
        "--directory",
        dir,
    ];
    let out = env.run(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("job: (groupid=0, jobs=1): err= 0:"),
        "{text}"
    );
    assert!(text.contains("(4096KiB/"), "{text}");
    let mut table = args.to_vec();
    table.extend(["--output-format", "table"]);
    let out = env.run(&table);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("JOB") && text.contains("P99.99"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("job") && l.contains("write") && l.contains("4MiB")),
        "{text}"
    );
}

#[test]
fn a_job_file_from_disk() {
    let env = Env::new();
    let file = env.dir().join("mix.fio");
    std::fs::write(
        &file,
        format!(
            "; two I/O jobs and a CPU burner, like the EROFS seed's\n\
             [global]\n\
             directory={}\n\
             size=4m\n\
             runtime=1\n\
             \n\
             [seq-reader]\n\
             rw=read\n\
             ioengine=sync\n\
             bs=64k\n\
             time_based\n\
             \n\
             [uring-writer]\n\
             rw=randwrite\n\
             ioengine=io_uring\n\
             iodepth=4\n\
             \n\
             [burn]\n\
             ioengine=cpuio\n\
             cpuload=20\n\
             cpumode=qsort\n",
            env.dir().display()
        ),
    )
    .unwrap();
    let out = env.run(&[file.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    let names: Vec<&str> = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["jobname"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["seq-reader", "uring-writer", "burn"]);
    assert!(v["jobs"][0]["read"]["io_bytes"].as_u64().unwrap() > 0);
    // randwrite without time_based: exactly one pass over 4 MiB.
    assert_eq!(v["jobs"][1]["write"]["io_bytes"], 4 << 20);
    assert_eq!(v["jobs"][1]["job options"]["ioengine"], "io_uring");
    let burn = &v["jobs"][2];
    assert_eq!(burn["read"]["io_bytes"], 0);
    assert!(burn["usr_cpu"].as_f64().unwrap() + burn["sys_cpu"].as_f64().unwrap() > 0.0);
    assert_fio_shape(&v["total"]);
}

#[test]
fn a_bad_job_file_exits_2_naming_the_line() {
    let env = Env::new();
    let file = env.dir().join("bad.fio");
    std::fs::write(&file, "[global]\nbs=4k\n\n[j]\nexec_prerun=true\n").unwrap();
    let out = env.run(&[file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("bad.fio:5:") && err.contains("exec_prerun"),
        "{err}"
    );
    std::fs::write(&file, "[j]\nbs=lots\n").unwrap();
    let err = stderr(&env.run(&[file.to_str().unwrap()]));
    assert!(
        err.contains("bad.fio:2:") && err.contains("bs=lots"),
        "{err}"
    );
}

#[test]
fn bad_flags_exit_2() {
    let env = Env::new();
    let dir = env.dir().to_str().unwrap();
    for (args, want) in [
        (
            vec!["--rw", "sideways", "--size", "1m", "--directory", dir],
            "--rw sideways",
        ),
        (
            vec![
                "--rw",
                "read",
                "--size",
                "1m",
                "--ioprio",
                "be:9",
                "--directory",
                dir,
            ],
            "rt:N",
        ),
        (vec![], "nothing to run"),
        (vec!["no-such-workload-or-file"], "1r1w"),
        (
            vec!["--readers", "1", "--pattern", "zigzag", "--directory", dir],
            "seq or rand",
        ),
        (
            vec!["--rw", "read", "--size", "1024t", "--directory", dir],
            "free",
        ),
    ] {
        let out = env.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
    }
}

/// `iolab load` takes its observers from the collector registry: those
/// that follow a target's processes are refused by name (a load has no
/// target), before anything is laid out.
#[test]
fn collectors_that_follow_a_target_are_refused_on_a_load() {
    let env = Env::new();
    let dir = env.dir().to_str().unwrap();
    for flag in ["--sched", "--explain"] {
        let out = env.run(&["--rw", "read", "--size", "1m", "--directory", dir, flag]);
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(flag) && err.contains("iolab load runs have none"),
            "{flag}: {err}"
        );
        assert!(
            std::fs::read_dir(env.dir()).unwrap().next().is_none(),
            "{flag}: nothing is laid out"
        );
    }
}

#[test]
fn named_workloads_lay_out_and_loop() {
    let env = Env::new();
    let dir = env.dir().to_str().unwrap();
    let out = env.run(&[
        "1r1w",
        "--directory",
        dir,
        "--size",
        "8m",
        "--runtime",
        "1",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    let reader = &v["jobs"][0];
    let writer = &v["jobs"][1];
    assert_eq!(
        (reader["jobname"].as_str(), writer["jobname"].as_str()),
        (Some("reader"), Some("writer"))
    );
    assert!(reader["read"]["io_bytes"].as_u64().unwrap() > 0);
    assert!(writer["write"]["io_bytes"].as_u64().unwrap() > 0);
    assert_eq!(
        std::fs::metadata(env.dir().join("reader.0.0"))
            .unwrap()
            .len(),
        8 << 20
    );
    // The writer rewrites its file from the start: it never grows past size.
    assert_eq!(
        std::fs::metadata(env.dir().join("writer.0.0"))
            .unwrap()
            .len(),
        8 << 20
    );
    let out = env.run(&[
        "--readers",
        "2",
        "--pattern",
        "rand",
        "--directory",
        dir,
        "--size",
        "8m",
        "--runtime",
        "500ms",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out)["jobs"][0]["job options"]["rw"], "randread");
}

#[test]
fn ctrl_c_prints_partial_results() {
    let env = Env::new();
    let dir = env.dir().to_str().unwrap();
    // Runs until stopped: only the signal ends it.
    let child = env
        .cmd(&["1r", "--directory", dir, "--size", "8m", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = i32::try_from(child.id()).unwrap();
    let file = env.dir().join("reader.0.0");
    for _ in 0..200 {
        if std::fs::metadata(&file).is_ok_and(|m| m.len() == 8 << 20) {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let v = json(&out);
    assert!(v["jobs"][0]["read"]["io_bytes"].as_u64().unwrap() > 0);
}

/// `iolab load --help` prints the help and exits 0, as the error messages
/// that point to it promise (it was taken for a fio option named "help").
#[test]
fn help_works_and_names_the_options() {
    let env = Env::new();
    let out = env.cmd(&["--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Usage: iolab load"), "{text}");
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}

/// fio's `--max-jobs` (its test harness passes `--max-jobs=16` every time):
/// accepted, and a run of more clones than it allows is refused before
/// anything runs.
#[test]
fn max_jobs_is_fios_limit() {
    let env = Env::new();
    let dir = env.dir().to_str().unwrap().to_string();
    let base = [
        "--name",
        "m",
        "--rw",
        "read",
        "--bs",
        "4k",
        "--size",
        "64k",
        "--directory",
        &dir,
    ];
    let ok = env.run(&[&base[..], &["--max-jobs=16", "--json"]].concat());
    assert!(ok.status.success(), "{}", stderr(&ok));
    let out = env.run(&[&base[..], &["--numjobs=4", "--max-jobs=2"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--max-jobs 2"), "{}", stderr(&out));
}
