//! fio's command-line conventions through the real binary, as fio's test
//! harness and people's scripts use them: several jobs from repeated
//! --name, --readonly, --debug=random, --status-interval, --bandwidth-log,
//! per_job_logs=0, an empty stderr, and fio's per-job statistics (samples,
//! depths, latency buckets) checked against the files and the clock.
#![allow(clippy::unwrap_used)]

mod load_env;

use load_env::{fio_or_skip, json, stderr, Env};

/// A client that checks its fio (a benchmark tool's preflight runs
/// `fio --version` and parses `fio-MAJOR.MINOR`) gets fio's answer, byte
/// for byte, from `iolab load --version` and `-v`, with exit 0 and nothing
/// on stderr (it is not a terminal here).
#[test]
fn version_answers_as_the_installed_fio_does() {
    if !fio_or_skip("version_answers_as_the_installed_fio_does") {
        return;
    }
    let fio = std::process::Command::new("fio")
        .arg("--version")
        .output()
        .unwrap();
    assert!(fio.status.success());
    let theirs = String::from_utf8_lossy(&fio.stdout).into_owned();
    // fio's shape, which clients parse: one line `fio-MAJOR.MINOR`.
    let shape = regex::Regex::new(r"^fio-\d+\.\d+\n$").unwrap();
    assert!(shape.is_match(&theirs), "the installed fio says {theirs:?}");
    let env = Env::new();
    for flag in ["--version", "-v"] {
        let out = env.run(&[flag]);
        assert_eq!(out.status.code(), Some(0), "{flag}: {}", stderr(&out));
        let ours = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(shape.is_match(&ours), "{flag}: {ours:?}");
        // The release iolab follows; byte for byte where it is installed.
        assert_eq!(ours, "fio-3.33\n", "{flag}");
        if theirs == "fio-3.33\n" {
            assert_eq!(ours, theirs, "{flag}");
        }
        assert!(out.stderr.is_empty(), "{flag}: {}", stderr(&out));
    }
}

#[test]
fn repeated_names_run_one_job_each_with_the_global_options_before_them() {
    let env = Env::new();
    let d = env.dir().to_str().unwrap();
    let out = env.run(&[
        "--output-format=json",
        &format!("--directory={d}"),
        "--size=1M",
        "--bs=64k",
        "--name=a",
        "--rw=write",
        "--name=b",
        "--rw",
        "write",
        "--size=2M",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    // Outside truth: the files the two jobs left.
    let a = std::fs::metadata(env.dir().join("a.0.0")).unwrap().len();
    let b = std::fs::metadata(env.dir().join("b.0.0")).unwrap().len();
    assert_eq!((a, b), (1 << 20, 2 << 20));
    assert_eq!(jobs[0]["write"]["io_bytes"], 1 << 20);
    assert_eq!(jobs[1]["write"]["io_bytes"], 2 << 20);
    assert_eq!(jobs[1]["job options"]["name"], "b");
}

#[test]
fn readonly_refuses_a_writing_job_before_it_writes() {
    let env = Env::new();
    let f = env.dir().join("f");
    let fname = format!("--filename={}", f.display());
    let out = env.run(&[
        "--readonly",
        "--name=w",
        "--rw=randwrite",
        "--size=1M",
        &fname,
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--readonly"), "{}", stderr(&out));
    assert!(!f.exists(), "a refused job created its file");
    let out = env.run(&[
        "--name=r",
        "--rw=randread",
        "--size=1M",
        &fname,
        "--readonly",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The offsets a run read, from its latency log (log_offset=1).
fn offsets(env: &Env, tag: &str, extra: &[&str]) -> (Vec<u64>, Vec<u64>) {
    let prefix = env.dir().join(tag);
    let mut args = vec![
        "--debug=random".to_string(),
        "--name=r".into(),
        "--ioengine=null".into(),
        "--size=1M".into(),
        "--rw=randread".into(),
        "--log_offset=1".into(),
        format!("--write_lat_log={}", prefix.display()),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = env.run(&a);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let seeds: Vec<u64> = text
        .lines()
        .filter(|l| l.starts_with("random") && l.contains("rand_seeds["))
        .map(|l| l.rsplit('=').next().unwrap().parse().unwrap())
        .collect();
    assert!(!seeds.is_empty(), "{text}");
    let log = std::fs::read_to_string(format!("{}_lat.1.log", prefix.display())).unwrap();
    let offs = log
        .lines()
        .map(|l| l.split(", ").nth(4).unwrap().trim().parse().unwrap())
        .collect();
    (seeds, offs)
}

#[test]
fn debug_random_prints_the_seeds_that_drive_the_offsets() {
    let env = Env::new();
    let (s1, o1) = offsets(&env, "a", &["--randrepeat=1"]);
    let (s2, o2) = offsets(&env, "b", &["--randrepeat=1"]);
    assert_eq!(s1, s2);
    assert_eq!(o1, o2, "same seeds, different offsets");
    let (s3, o3) = offsets(&env, "c", &["--randrepeat=0"]);
    let (s4, o4) = offsets(&env, "d", &["--randrepeat=0"]);
    assert_ne!(s3, s4);
    assert_ne!(o3, o4, "different seeds, same offsets");
    let (s5, _) = offsets(&env, "e", &["--randseed=1234"]);
    assert_ne!(s5, s1);
    // 256 blocks of 4 KiB, each read once (the random map).
    let mut all = o1.clone();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 256);
}

#[test]
fn notes_go_into_the_report_and_stderr_stays_empty() {
    let env = Env::new();
    let f = env.dir().join("f");
    let out = env.run(&[
        "--output-format=json",
        "--name=j",
        "--ioengine=libaio",
        "--iodepth=4",
        "--rw=randread",
        "--size=1M",
        &format!("--filename={}", f.display()),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "fio's harness takes stderr for a failure");
    let v = json(&out);
    let notes = v["iolab notes"].as_array().unwrap();
    assert!(notes[0].as_str().unwrap().contains("direct=1"), "{notes:?}");
    assert_eq!(v["fio version"], "fio-3.33");
}

#[test]
fn samples_buckets_and_depths_add_up_against_the_clock() {
    let env = Env::new();
    let f = env.dir().join("f");
    let t0 = std::time::Instant::now();
    let out = env.run(&[
        "--output-format=json",
        "--name=j",
        "--ioengine=io_uring",
        "--iodepth=8",
        "--rw=randrw",
        "--size=8M",
        "--time_based",
        "--runtime=2",
        "--rate_iops=2000",
        &format!("--filename={}", f.display()),
    ]);
    let wall = t0.elapsed().as_secs_f64();
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    let j = &v["jobs"][0];
    for d in ["read", "write"] {
        let x = &j[d];
        // One sample per 500 ms of the 2 s measured: 3 or 4 (fio: 3).
        let n = x["bw_samples"].as_u64().unwrap();
        assert!((3..=4).contains(&n), "{d}: {n} samples in {wall:.1} s");
        assert_eq!(x["iops_samples"], n);
        // Paced at 2000 IOPS: each sample is near it, and so their mean.
        let mean = x["iops_mean"].as_f64().unwrap();
        assert!((1500.0..=2500.0).contains(&mean), "{d}: iops_mean {mean}");
        assert!(x["iops_min"].as_u64().unwrap() <= iolab_sys::cast::floor_u64(mean) + 1);
        let kib = x["bw_mean"].as_f64().unwrap();
        assert!(
            (kib / 4.0 - mean).abs() < mean * 0.05,
            "{d}: {kib} KiB/s vs {mean} IOPS"
        );
        let agg = x["bw_agg"].as_f64().unwrap();
        assert!((80.0..=120.0).contains(&agg), "{d}: bw_agg {agg}");
    }
    let sum = |k: &str| -> f64 {
        j[k].as_object()
            .unwrap()
            .values()
            .map(|v| v.as_f64().unwrap())
            .sum()
    };
    let lat = sum("latency_ns") + sum("latency_us") + sum("latency_ms");
    assert!((lat - 100.0).abs() < 0.01, "latency buckets sum to {lat}");
    for k in ["iodepth_level", "iodepth_submit", "iodepth_complete"] {
        assert!((sum(k) - 100.0).abs() < 0.01, "{k}: {}", sum(k));
    }
    assert_eq!(j["latency_depth"], 8);
}

#[test]
fn status_interval_writes_a_document_per_interval_and_bandwidth_logs_add_up() {
    let env = Env::new();
    let out = env
        .cmd(&[
            "--output-format=json",
            "--status-interval=1",
            "--bandwidth-log",
            "--name=t",
            "--ioengine=null",
            "--filesize=1T",
            "--rw=read",
            "--time_based",
            "--runtime=3s",
            "--rate=100m",
        ])
        .current_dir(env.dir())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let docs: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&text)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    // Statuses at 1 s and 2 s (and perhaps at 3 s), then the report.
    assert!((3..=4).contains(&docs.len()), "{} documents", docs.len());
    let last = docs.last().unwrap();
    let total = last["jobs"][0]["read"]["io_bytes"].as_u64().unwrap();
    let first = docs[0]["jobs"][0]["read"]["io_bytes"].as_u64().unwrap();
    assert!(first > 0 && first < total, "{first} of {total}");
    // The aggregate log: a line per 500 ms; KiB/s × 0.5 s adds up to the
    // bytes the report counts, within one sample.
    let log = std::fs::read_to_string(env.dir().join("agg-read_bw.log")).unwrap();
    let kib: Vec<f64> = log
        .lines()
        .map(|l| l.split(", ").nth(1).unwrap().parse().unwrap())
        .collect();
    assert!((5..=7).contains(&kib.len()), "{} lines", kib.len());
    let logged = kib.iter().sum::<f64>() * 0.5 * 1024.0;
    let one = 100e6 * 0.5;
    assert!(
        (logged - total as f64).abs() <= one * 1.5,
        "log {logged} vs report {total}"
    );
    assert!(env.dir().join("agg-write_bw.log").exists());
}

#[test]
fn per_job_logs_0_names_the_log_without_the_clone_number() {
    let env = Env::new();
    let prefix = env.dir().join("test");
    let out = env.run(&[
        "--name=t",
        "--ioengine=null",
        "--filesize=1M",
        "--per_job_logs=0",
        &format!("--write_bw_log={}", prefix.display()),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(env.dir().join("test_bw.log").exists());
    assert!(!env.dir().join("test_bw.1.log").exists());
    let out = env.run(&[
        "--name=t",
        "--ioengine=null",
        "--filesize=1M",
        "--numjobs=2",
        "--per_job_logs=0",
        &format!("--write_bw_log={}", prefix.display()),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn a_compressed_log_inflates_to_one_line_per_io() {
    // fio's t/log_compression.py: 1000 MiB in 128 KiB writes on the null
    // engine, one bw log line per I/O at offsets 0, 128 KiB, ...
    let env = Env::new();
    let prefix = env.dir().join("test");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "--name=job".to_string(),
            "--ioengine=null".into(),
            "--filesize=1000M".into(),
            "--bs=128K".into(),
            "--rw=write".into(),
            "--per_job_logs=0".into(),
            "--log_offset=1".into(),
            "--log_compression=10K".into(),
            format!("--write_bw_log={}", prefix.display()),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = env.run(&a);
        assert!(out.status.success(), "{}", stderr(&out));
    };
    run(&[]);
    run(&["--log_store_compressed=1"]);
    let fz = env.dir().join("test_bw.log.fz");
    let plain = std::fs::read(env.dir().join("test_bw.log")).unwrap();
    assert!(std::fs::metadata(&fz).unwrap().len() * 2 < plain.len() as u64);
    let out = env.run(&["--inflate-log", fz.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let offsets: Vec<u64> = text
        .lines()
        .map(|l| l.split(", ").nth(4).unwrap().parse().unwrap())
        .collect();
    assert_eq!(offsets.len(), 8000);
    assert!(offsets
        .iter()
        .enumerate()
        .all(|(i, &o)| o == i as u64 * 131_072));
    let bad = env.dir().join("bad.fz");
    std::fs::write(&bad, b"not zlib").unwrap();
    let out = env.run(&["--inflate-log", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn normal_output_is_fios_report_of_the_same_run() {
    let env = Env::new();
    let f = env.dir().join("f");
    let out = env.run(&[
        "--output-format=normal,json",
        "--name=j",
        "--rw=write",
        "--bs=64k",
        "--size=4M",
        "--fsync=16",
        &format!("--filename={}", f.display()),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let at = text.find("\n{").unwrap();
    let (normal, doc) = (&text[..at], &text[at + 1..]);
    let v: serde_json::Value = serde_json::from_str(doc).unwrap();
    assert!(
        normal.starts_with("j: (groupid=0, jobs=1): err= 0: pid="),
        "{normal}"
    );
    // 4 MiB written, as the file on disk says; fio prints it as 4096KiB,
    // and fio 3.33 ends every write line with its zone resets.
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 4 << 20);
    let ms = v["jobs"][0]["write"]["runtime"].as_u64().unwrap();
    assert!(
        normal.contains(&format!(")(4096KiB/{ms}msec); 0 zone resets\n")),
        "{normal}"
    );
    assert!(normal.contains("  write: IOPS="), "{normal}");
    assert!(normal.contains("    clat percentiles ("), "{normal}");
    // 64 writes, an fsync every 16: 4 syncs with their latencies.
    assert!(
        normal.contains("  fsync/fdatasync/sync_file_range:\n    sync ("),
        "{normal}"
    );
    assert_eq!(v["jobs"][0]["sync"]["total_ios"], 4);
    assert_eq!(v["jobs"][0]["sync"]["lat_ns"]["N"], 4);
    assert!(
        normal.contains("     issued rwts: total=0,64,0,0 short=0,0,0,0 dropped=0,0,0,0\n"),
        "{normal}"
    );
    assert!(
        normal.contains("\nRun status group 0 (all jobs):\n  WRITE: bw="),
        "{normal}"
    );
    assert!(normal.contains("io=4096KiB (4194kB)"), "{normal}");
}

#[test]
fn with_fio_runs_a_job_iolab_refuses_and_adds_its_checks() {
    if !fio_or_skip("with_fio_runs_a_job_iolab_refuses_and_adds_its_checks") {
        return;
    }
    let env = Env::new();
    let (f1, f2) = (env.dir().join("wf1"), env.dir().join("wf2"));
    // Commands run from a job file are something iolab does not do.
    let job = env.dir().join("two.fio");
    std::fs::write(
        &job,
        format!(
            "[j]\nrw=write\nbs=64k\nsize=2m\nfilename={}:{}\nioengine=psync\nend_fsync=1\nexec_prerun=true\n",
            f1.display(),
            f2.display()
        ),
    )
    .unwrap();
    let job = job.to_str().unwrap();
    let out = env.run(&[job]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--with-fio"), "{}", stderr(&out));
    let out = env.run(&["--with-fio", job, "--output-format=json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert!(v["fio version"].as_str().unwrap().starts_with("fio-"));
    // fio wrote the files: 1 MiB each on disk, 2 MiB in its report and ours.
    assert_eq!(std::fs::metadata(&f1).unwrap().len(), 1 << 20);
    assert_eq!(std::fs::metadata(&f2).unwrap().len(), 1 << 20);
    assert_eq!(v["jobs"][0]["write"]["io_bytes"], 2 << 20);
    let io = &v["iolab"];
    assert_eq!(io["fio_write_bytes"], 2 << 20);
    assert!(io["status"].as_array().unwrap().last().is_some(), "{io}");
    assert_eq!(io["stalls"].as_array().unwrap().len(), 0, "{io}");
    // The device under /var/tmp saw at least the bytes fio wrote (end_fsync).
    let dev_w: u64 = io["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["write_bytes"].as_u64().unwrap())
        .sum();
    assert!(dev_w >= 2 << 20, "{io}");
    // The normal report is fio's layout, rendered from fio's own numbers.
    let out = env.run(&["--with-fio", job]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("j: (groupid=0, jobs=1): err= 0:"),
        "{text}"
    );
    assert!(text.contains("(2048KiB/"), "{text}");
}

#[test]
fn iologs_go_both_ways_between_iolab_and_fio() {
    if !fio_or_skip("iologs_go_both_ways_between_iolab_and_fio") {
        return;
    }
    let env = Env::new();
    let f = env.dir().join("data");
    let fname = format!("--filename={}", f.display());
    let log = |n: &str| env.dir().join(n).to_string_lossy().into_owned();
    let ios = |p: &str| -> Vec<String> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .filter(|l| l.contains(" read ") || l.contains(" write "))
            .map(|l| l.split_once(' ').unwrap().1.to_string())
            .collect()
    };
    let bytes = |v: &serde_json::Value| {
        (
            v["jobs"][0]["read"]["io_bytes"].as_u64().unwrap(),
            v["jobs"][0]["write"]["io_bytes"].as_u64().unwrap(),
        )
    };
    // iolab records; fio replays iolab's log and moves the same bytes.
    let a = log("a.log");
    let out = env.run(&[
        "--output-format=json",
        "--name=w",
        "--rw=randrw",
        "--bs=4k",
        "--size=256k",
        &fname,
        &format!("--write_iolog={a}"),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let recorded = bytes(&json(&out));
    assert_eq!(ios(&a).len(), 64);
    let fio = std::process::Command::new("fio")
        .args([
            "--name=r",
            &format!("--read_iolog={a}"),
            "--output-format=json",
        ])
        .current_dir(env.dir())
        .output()
        .unwrap();
    assert!(
        fio.status.success(),
        "{}",
        String::from_utf8_lossy(&fio.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&fio.stdout).unwrap();
    assert_eq!(bytes(&v), recorded);
    // fio records; iolab replays fio's log, recording what it issues: the
    // same I/O, in the same order.
    let b = log("b.log");
    let fio = std::process::Command::new("fio")
        .args([
            "--name=w",
            "--rw=randrw",
            "--bs=8k",
            "--size=256k",
            &fname,
            &format!("--write_iolog={b}"),
            "--output-format=json",
        ])
        .output()
        .unwrap();
    assert!(
        fio.status.success(),
        "{}",
        String::from_utf8_lossy(&fio.stderr)
    );
    let c = log("c.log");
    let out = env.run(&[
        "--output-format=json",
        "--name=r",
        &format!("--read_iolog={b}"),
        &format!("--write_iolog={c}"),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(ios(&c), ios(&b));
}

#[test]
fn a_replay_keeps_the_logged_time_unless_told_not_to() {
    let env = Env::new();
    let f = env.dir().join("data");
    std::fs::write(&f, vec![0u8; 8192]).unwrap();
    let log = env.dir().join("v2.log");
    let p = f.display();
    std::fs::write(
        &log,
        format!("fio version 2 iolog\n{p} add\n{p} open\n{p} read 0 4096\n{p} wait 400000 0\n{p} read 4096 4096\n{p} close\n"),
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let l = format!("--read_iolog={}", log.display());
        let mut args = vec!["--output-format=json", "--name=r", l.as_str()];
        args.extend_from_slice(extra);
        // The replay records what it issues: when its second read went
        // out, on the clone's own clock (process start-up left out).
        let rec = env
            .dir()
            .join(format!("rec{}.log", extra.len() + extra.concat().len()));
        let w = format!("--write_iolog={}", rec.display());
        args.push(w.as_str());
        let t0 = std::time::Instant::now();
        let out = env.run(&args);
        let wall = t0.elapsed().as_secs_f64();
        assert!(out.status.success(), "{}", stderr(&out));
        let v = json(&out);
        assert_eq!(v["jobs"][0]["read"]["io_bytes"], 8192);
        let at: Vec<f64> = std::fs::read_to_string(&rec)
            .unwrap()
            .lines()
            .filter(|l| l.contains(" read "))
            .map(|l| l.split(' ').next().unwrap().parse::<f64>().unwrap() / 1e6)
            .collect();
        (wall, at[1])
    };
    let (wall, logged) = run(&[]);
    let (_, fast) = run(&["--replay_no_stall=1"]);
    let (wall2, double) = run(&["--replay_time_scale=200"]);
    // The wall clock bounds what cannot be shorter: the 0.4 s wait, halved
    // at twice the rate.
    assert!(wall >= 0.4 && wall2 >= 0.2, "{wall} {wall2}");
    // The second read on the replay's own clock: at the logged 0.4 s,
    // at half of it, or at once.
    assert!(logged >= 0.4, "{logged}");
    assert!((0.2..0.4).contains(&double), "{double}");
    assert!(fast < 0.1, "{fast}");
}

#[test]
fn trims_punch_holes_and_trimwrite_writes_each_trimmed_block() {
    use std::os::unix::fs::MetadataExt;
    let env = Env::new();
    let f = env.dir().join("t");
    std::fs::write(&f, vec![0x5au8; 4 << 20]).unwrap();
    std::fs::File::open(&f).unwrap().sync_all().unwrap();
    let blocks = || std::fs::metadata(&f).unwrap().blocks() * 512;
    let before = blocks();
    let fname = format!("--filename={}", f.display());
    let out = env.run(&[
        "--output-format=json",
        "--name=t",
        "--rw=trim",
        "--bs=256k",
        "--size=2m",
        &fname,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["jobs"][0]["trim"]["io_bytes"], 2 << 20);
    assert_eq!(v["jobs"][0]["trim"]["total_ios"], 8);
    assert!(v["jobs"][0]["trim"]["lat_ns"]["N"].as_u64().unwrap() == 8);
    // Outside truth: the file system freed the first 2 MiB, kept the size.
    assert!(before - blocks() >= 2 << 20, "{before} -> {}", blocks());
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 4 << 20);
    let data = std::fs::read(&f).unwrap();
    assert!(data[..2 << 20].iter().all(|&b| b == 0));
    assert!(data[2 << 20..].iter().all(|&b| b == 0x5a));
    // trimwrite (fio's t0023 check): every write is preceded by a trim of
    // the same block, and the blocks are all written back.
    let prefix = env.dir().join("tw");
    let out = env.run(&[
        "--name=tw",
        "--rw=randtrimwrite",
        "--bs=64k",
        "--size=1m",
        "--log_offset=1",
        &fname,
        &format!("--write_bw_log={}", prefix.display()),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = std::fs::read_to_string(format!("{}_bw.1.log", prefix.display())).unwrap();
    let rows: Vec<(u32, u64)> = log
        .lines()
        .map(|l| {
            let v: Vec<&str> = l.split(", ").collect();
            (v[2].parse().unwrap(), v[4].parse().unwrap())
        })
        .collect();
    assert_eq!(rows.len(), 32);
    for pair in rows.chunks(2) {
        assert_eq!((pair[0].0, pair[1].0), (2, 1), "{log}");
        assert_eq!(pair[0].1, pair[1].1, "{log}");
    }
    let data = std::fs::read(&f).unwrap();
    assert!(
        data[..1 << 20].iter().any(|&b| b != 0),
        "written back after the trims"
    );
}

#[test]
fn serialize_overlap_runs_a_deep_queue_over_a_few_blocks() {
    // 16 blocks, 16 in flight, random with repeats: most new I/Os overlap
    // one in flight and must wait for it; the job must neither hang nor
    // lose an I/O (the bytes match the blocks written, pass after pass).
    let env = Env::new();
    let f = env.dir().join("so");
    let out = env.run(&[
        "--output-format=json",
        "--name=so",
        "--ioengine=io_uring",
        "--iodepth=16",
        "--rw=randwrite",
        "--norandommap",
        "--bs=4k",
        "--size=64k",
        "--loops=50",
        "--serialize_overlap=1",
        &format!("--filename={}", f.display()),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["jobs"][0]["write"]["io_bytes"], 50 * (64 << 10));
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 64 << 10);
    // Held back, the queue almost never fills: 16 distinct blocks in
    // flight needs 16 draws without a repeat (p ~ 1e-6 per refill).
    let lvl = &v["jobs"][0]["iodepth_level"];
    let full = lvl["16"].as_f64().unwrap() + lvl["32"].as_f64().unwrap();
    assert!(full < 1.0, "{lvl}");
}

/// `iodepth=8` keeps 8 in flight, as fio does (fio reaps one completion
/// per call by default and refills it at once): fio's own iodepth_level
/// for the same job is the outside truth. Reaping every ready completion
/// at once, iolab ran this job at 2-7 in flight (8=25 %).
#[test]
fn iodepth_keeps_the_queue_as_full_as_fio_does() {
    if !fio_or_skip("iodepth_keeps_the_queue_as_full_as_fio_does") {
        return;
    }
    let env = Env::new();
    let f = env.dir().join("qd");
    std::fs::write(&f, vec![7u8; 32 << 20]).unwrap();
    for engine in ["io_uring", "libaio"] {
        let args = [
            "--name=qd".to_string(),
            format!("--filename={}", f.display()),
            format!("--ioengine={engine}"),
            "--rw=randread".into(),
            "--bs=4k".into(),
            "--direct=1".into(),
            "--iodepth=8".into(),
            "--time_based".into(),
            "--runtime=1".into(),
            "--output-format=json".into(),
        ];
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let fio = std::process::Command::new("fio")
            .args(&refs)
            .output()
            .unwrap();
        assert!(fio.status.success(), "{}", stderr(&fio));
        let out = env.run(&refs);
        assert!(out.status.success(), "{}", stderr(&out));
        let at8 = |v: &serde_json::Value| {
            let l = &v["jobs"][0]["iodepth_level"];
            l["8"].as_f64().unwrap() + l["16"].as_f64().unwrap()
        };
        let (theirs, ours) = (at8(&json(&fio)), at8(&json(&out)));
        assert!(theirs >= 95.0, "{engine}: fio {theirs} % at 8");
        assert!(
            ours >= theirs - 2.0,
            "{engine}: iolab {ours} % at 8, fio {theirs} %"
        );
    }
}

#[test]
fn strided_zones_walk_the_file_as_fio_does() {
    // fio's t/strided.py rule: zonesize bytes in a zone of zonerange, then
    // the next zone; past the end of the file, back to the first at offset;
    // with the random map every block of a zone once per zonerange bytes.
    let env = Env::new();
    let prefix = env.dir().join("st");
    let out = env.run(&[
        "--name=st",
        "--zonemode=strided",
        "--ioengine=null",
        "--rw=randread",
        "--bs=4k",
        "--offset=32k",
        "--size=64k",
        "--io_size=256k",
        "--zonerange=8k",
        "--zonesize=16k",
        "--log_offset=1",
        &format!("--write_iops_log={}", prefix.display()),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = std::fs::read_to_string(format!("{}_iops.1.log", prefix.display())).unwrap();
    let offs: Vec<u64> = log
        .lines()
        .map(|l| l.split(", ").nth(4).unwrap().parse().unwrap())
        .collect();
    assert_eq!(offs.len(), 64, "256 KiB in 4 KiB reads");
    let mut zone = 32 << 10;
    for visit in offs.chunks(4) {
        for pass in visit.chunks(2) {
            for o in pass {
                assert!(
                    (zone..zone + (8 << 10)).contains(o),
                    "{o} outside {zone}: {offs:?}"
                );
            }
            assert_ne!(pass[0], pass[1], "a block twice in one pass: {offs:?}");
        }
        zone += 8 << 10;
        if zone >= 64 << 10 {
            zone = 32 << 10;
        }
    }
}

#[test]
fn a_saved_verify_state_checks_exactly_the_blocks_written() {
    // fio's t0036: a writing job saves its verify state, a later reading
    // job checks against it. Here the write covers half of a file whose
    // other half holds bytes no verify header vouches for.
    let env = Env::new();
    let f = env.dir().join("vs");
    std::fs::write(&f, vec![0x11u8; 512 << 10]).unwrap();
    let d = format!("--directory={}", env.dir().display());
    let fname = "--filename=vs";
    let out = env.run(&[
        "--name=job",
        &d,
        fname,
        "--rw=write",
        "--size=256k",
        "--verify=md5",
        "--verify_state_save=1",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(env.dir().join("job-0-verify.state").exists());
    let read = |extra: &[&str]| {
        let mut a = vec![
            "--name=job",
            d.as_str(),
            fname,
            "--rw=read",
            "--size=512k",
            "--verify=md5",
        ];
        a.extend_from_slice(extra);
        env.run(&a)
    };
    // Without the state every block is checked: the unwritten half fails.
    assert!(!read(&[]).status.success());
    let out = read(&["--verify_state_load=1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // A byte flipped inside the written half is still caught.
    let mut bytes = std::fs::read(&f).unwrap();
    bytes[100_000] ^= 1;
    std::fs::write(&f, &bytes).unwrap();
    let out = read(&["--verify_state_load=1"]);
    assert!(!out.status.success(), "a corrupted written block passed");
    assert!(
        stderr(&out).contains("1 of 64 checked blocks"),
        "{}",
        stderr(&out)
    );
}

/// The values column of a fio latency log.
fn log_values(path: &std::path::Path) -> Vec<u64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split(", ").nth(1).unwrap().parse().unwrap())
        .collect()
}

/// A queueing engine's I/O has fio's three latencies: slat (preparation
/// to the submit's return), clat (from there to the reap) and lat (the
/// whole). Per I/O in the logs lat = slat + clat; the report's counts and
/// means are the logs'; at iodepth 1 the I/Os' latencies fit in the wall
/// clock the test measured around the run. A blocking engine has no slat,
/// as in fio: its clat is its lat and its slat log stays empty.
#[test]
fn queueing_engines_split_slat_and_clat_as_fio_does() {
    let env = Env::new();
    for engine in ["libaio", "io_uring", "psync"] {
        let prefix = env.dir().join(engine);
        let file = env.dir().join(format!("{engine}.dat"));
        let t0 = std::time::Instant::now();
        let out = env.run(&[
            "--output-format=json+",
            "--name=s",
            &format!("--ioengine={engine}"),
            "--rw=randread",
            "--bs=4k",
            "--size=4M",
            "--direct=1",
            "--iodepth=1",
            "--slat_percentiles=1",
            "--lat_percentiles=1",
            &format!("--filename={}", file.display()),
            &format!("--write_lat_log={}", prefix.display()),
        ]);
        let wall = iolab_sys::cast::duration_ns(t0.elapsed());
        assert!(out.status.success(), "{engine}: {}", stderr(&out));
        let r = &json(&out)["jobs"][0]["read"];
        let n = r["total_ios"].as_u64().unwrap();
        assert_eq!(n, 1024, "{engine}");
        let log = |kind: &str| log_values(&env.dir().join(format!("{engine}_{kind}.1.log")));
        let (lat, clat, slat) = (log("lat"), log("clat"), log("slat"));
        assert_eq!(lat.len() as u64, n, "{engine}");
        assert_eq!(r["lat_ns"]["N"], n, "{engine}");
        assert_eq!(r["clat_ns"]["N"], n, "{engine}");
        let mean = |v: &[u64]| v.iter().sum::<u64>() as f64 / v.len() as f64;
        let near = |a: f64, b: f64| (a - b).abs() <= b * 1e-6 + 1.0;
        assert!(
            near(r["lat_ns"]["mean"].as_f64().unwrap(), mean(&lat)),
            "{engine}: {r}"
        );
        assert!(
            near(r["clat_ns"]["mean"].as_f64().unwrap(), mean(&clat)),
            "{engine}: {r}"
        );
        assert!(
            lat.iter().sum::<u64>() < wall,
            "{engine}: I/Os at depth 1 outlast the run"
        );
        if engine == "psync" {
            assert_eq!(r["slat_ns"]["N"], 0, "{engine}: {r}");
            assert!(slat.is_empty(), "{engine}");
            assert_eq!(lat, clat, "{engine}");
            continue;
        }
        assert_eq!(r["slat_ns"]["N"], n, "{engine}");
        assert_eq!(slat.len() as u64, n, "{engine}");
        for i in 0..lat.len() {
            assert_eq!(lat[i], slat[i] + clat[i], "{engine}: I/O {i}");
        }
        assert!(
            near(r["slat_ns"]["mean"].as_f64().unwrap(), mean(&slat)),
            "{engine}: {r}"
        );
        // A submission is a system call, not nothing. Which part is the
        // larger is the machine's: on this VM the submit carries the
        // virtqueue kick (a VM exit), and fio 3.33 reports slat above clat
        // too (libaio QD1 here: slat 50 µs, clat 20 µs), so only the sum is
        // checked, above, and that slat never exceeds the whole.
        assert!(slat.iter().all(|&s| s > 0), "{engine}");
        assert!(slat.iter().zip(&lat).all(|(s, l)| s <= l), "{engine}");
        assert!(
            r["slat_ns"]["percentile"].is_object() && r["slat_ns"]["bins"].is_object(),
            "{engine}: {r}"
        );
    }
}

/// A private tracefs mount and instance with `block_rq_issue` on; all of
/// it undone on drop.
struct RqTrace {
    mnt: tempfile::TempDir,
    inst: std::path::PathBuf,
}

impl RqTrace {
    fn start() -> RqTrace {
        let mnt = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tracefs", "nodev"])
            .arg(mnt.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount tracefs");
        let inst = mnt
            .path()
            .join(format!("instances/iolab-test-{}", std::process::id()));
        std::fs::create_dir(&inst).unwrap();
        std::fs::write(inst.join("events/block/block_rq_issue/enable"), "1").unwrap();
        RqTrace { mnt, inst }
    }

    /// Issued requests per ioprio class name ("none", "rt", ...).
    fn classes(&self) -> std::collections::HashMap<String, u64> {
        let _ = std::fs::write(self.inst.join("events/block/block_rq_issue/enable"), "0");
        let text = std::fs::read_to_string(self.inst.join("trace")).unwrap();
        let mut m = std::collections::HashMap::new();
        for l in text.lines().filter(|l| l.contains("block_rq_issue:")) {
            // "... + 8 rt,0,0 [comm]": class,hint,level before the comm.
            let Some(cls) = l.rsplit(" [").nth(1).and_then(|s| s.rsplit(' ').next()) else {
                continue;
            };
            *m.entry(cls.split(',').next().unwrap().to_string())
                .or_insert(0) += 1;
        }
        m
    }
}

impl Drop for RqTrace {
    fn drop(&mut self) {
        let _ = std::fs::write(self.inst.join("events/block/block_rq_issue/enable"), "0");
        let _ = std::fs::remove_dir(&self.inst);
        let _ = std::process::Command::new("umount")
            .arg(self.mnt.path())
            .status();
    }
}

/// cmdprio_percentage=50 with cmdprio_class=1: about half the I/Os carry
/// a real-time priority in the request itself. The kernel's own
/// block_rq_issue events (a private tracefs instance) count as many
/// real-time requests as the report's real-time `prios` entry; the
/// entries add up to the direction's clat count, as fio's do.
#[test]
fn cmdprio_reaches_the_block_layer_per_request() {
    if !iolab_testkit::root_or_skip(
        "cmdprio_reaches_the_block_layer_per_request",
        "loop devices, mounts",
    ) {
        return;
    }
    let env = Env::new();
    for engine in ["libaio", "io_uring"] {
        let file = env.dir().join(format!("{engine}.prio"));
        // Laid out first: the layout's writes are not the job's reads.
        let lay = env.run(&[
            "--name=lay",
            "--rw=write",
            "--bs=1M",
            "--size=8M",
            &format!("--filename={}", file.display()),
        ]);
        assert!(lay.status.success(), "{}", stderr(&lay));
        let trace = RqTrace::start();
        let out = env.run(&[
            "--output-format=json+",
            "--name=p",
            &format!("--ioengine={engine}"),
            "--rw=randread",
            "--bs=4k",
            "--size=8M",
            "--direct=1",
            "--iodepth=4",
            "--cmdprio_percentage=50",
            "--cmdprio_class=1",
            &format!("--filename={}", file.display()),
        ]);
        let classes = trace.classes();
        drop(trace);
        assert!(out.status.success(), "{engine}: {}", stderr(&out));
        let r = &json(&out)["jobs"][0]["read"];
        let prios = r["prios"].as_array().unwrap();
        let n_of = |class: u64| {
            prios
                .iter()
                .find(|p| p["prioclass"] == class)
                .map_or(0, |p| p["clat_ns"]["N"].as_u64().unwrap())
        };
        let (none, rt) = (n_of(0), n_of(1));
        assert_eq!(
            none + rt,
            r["clat_ns"]["N"].as_u64().unwrap(),
            "{engine}: {r}"
        );
        assert!(
            rt > 600 && none > 600,
            "{engine}: 50% of 2048: {rt} rt, {none} other"
        );
        let k = classes.get("rt").copied().unwrap_or(0);
        eprintln!("{engine}: report {rt} rt / {none} other; kernel {classes:?}");
        assert!(
            k.abs_diff(rt) <= rt / 20 + 2,
            "{engine}: the kernel issued {k} real-time requests, the report says {rt} ({classes:?})"
        );
    }
}
