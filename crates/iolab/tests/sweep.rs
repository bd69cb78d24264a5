//! `iolab sweep` through the real binary: a tiny sweep runs and stores one
//! run per cell whose throughput bytes match the device's own
//! /proc/diskstats counters; `results show` prints its table; Ctrl-C keeps
//! the recorded runs, restores the machine and `--resume` completes it;
//! a mounted device, a device holding a filesystem and an unknown scheduler
//! are refused with exit 2 and one line.
//!
//! Each test has its own run directory and database; the temporary labs
//! are named after the sweep's pid, so tests running at the same time
//! never share one. Sweeps hold [`MACHINE`]: they drop caches machine-wide.
#![allow(clippy::unwrap_used)]

mod bench_env;
mod lab_env;

use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bench_env::{json_of, ok, text, Bench};

static MACHINE: Mutex<()> = Mutex::new(());

fn machine() -> MutexGuard<'static, ()> {
    MACHINE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sweeps share a [`Bench`]'s run directory and database.
impl Bench {
    fn sweep(&self, args: &[&str]) -> Output {
        self.cmd()
            .arg("sweep")
            .args(args)
            .arg("--db")
            .arg(&self.db)
            .timeout(Duration::from_secs(180))
            .output()
            .unwrap()
    }
}

/// A refusal: exit 2 and exactly one line on stderr.
fn refused(out: &Output) -> String {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    err
}

/// Loop devices whose backing file is a sweep lab image of `pid`.
fn sweep_loops(pid: u32) -> Vec<String> {
    iolab_guard::loops_backed_by(&PathBuf::from(format!("/var/tmp/iolab/sweep-{pid}.img")))
}

/// 2 schedulers × 1 pattern × 1 rep, reads and random writes, 16 MiB per
/// run on a 100 MiB/s lab: every run stored with a throughput whose bytes
/// the device's /proc/diskstats saw within 3 %.
#[test]
fn tiny_sweep_stores_runs_whose_bytes_match_diskstats() {
    if !iolab_testkit::root_or_skip(
        "tiny_sweep_stores_runs_whose_bytes_match_diskstats",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let _m = machine();
    let b = Bench::new("sw-tiny");
    let out = b.sweep(&[
        "--schedulers",
        "none,mq-deadline",
        "--patterns",
        "1/1",
        "--rw",
        "read,randwrite",
        "--reps",
        "1",
        "--size",
        "16M",
        "--lab-size",
        "256MiB",
        "--bw",
        "100MiB/s",
        "--json",
    ]);
    ok(&out);
    let doc = json_of(&out.stdout);
    assert_eq!(doc["status"], "done");
    assert_eq!(doc["runs_recorded"], 4);
    assert_eq!(doc["sizing"]["total_bytes"], 16 << 20);
    assert!(
        text(&out.stderr).contains("each run moves 16MiB"),
        "the scaling note: {}",
        text(&out.stderr)
    );
    let cells = doc["tables"]["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4, "2 schedulers x 2 kinds x 1 pattern");

    let id = doc["experiment"].as_u64().unwrap();
    let e = b.export(id);
    assert_eq!(e["experiment"]["kind"], "sweep");
    let runs = e["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    let mut seen = Vec::new();
    for r in runs {
        let sched = r["scheduler"].as_str().unwrap();
        let wl = r["workload"].as_str().unwrap();
        seen.push(format!("{sched}/{wl}"));
        assert_eq!(r["rep"], 1);
        assert_eq!(r["config"]["scheduler"], sched);
        assert_eq!(r["config"]["job"]["ioengine"], "io_uring");
        assert_eq!(r["config"]["job"]["direct"], true);
        let x = &r["extra"];
        let bw = x["bw_bytes"].as_f64().unwrap();
        assert!(bw > 0.0, "{r}");
        let io = x["io_bytes"].as_f64().unwrap();
        assert_eq!(io, (16u64 << 20) as f64, "the run moved its bytes: {r}");
        assert!(x["clat_ns"]["percentile"]["99.000000"].as_u64().unwrap() > 0);
        // The kernel's count of the device's bytes over the run.
        let dev = if wl.contains("read") {
            r["background"]["read_bytes"].as_f64().unwrap()
        } else {
            r["background"]["write_bytes"].as_f64().unwrap()
        };
        assert!(
            (dev - io).abs() <= io * 0.03,
            "{sched}/{wl}: engine {io} B, /proc/diskstats {dev} B"
        );
        // The block trace saw the same requests, and lost none.
        let op = if wl.contains("read") { "R" } else { "W" };
        assert_eq!(x["bio"]["lost_events"], 0, "{r}");
        let traced = x["bio"][op]["bytes"].as_f64().unwrap();
        assert!(
            (traced - io).abs() <= io * 0.03,
            "{sched}/{wl}: engine {io} B, block trace {traced} B"
        );
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "mq-deadline/rand-write-1j-1qd",
            "mq-deadline/seq-read-1j-1qd",
            "none/rand-write-1j-1qd",
            "none/seq-read-1j-1qd"
        ]
    );
    let kinds: Vec<&str> = e["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "load").count(),
        4,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "cpu").count(),
        4,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "latency_hist").count(),
        4,
        "{kinds:?}"
    );

    // `results show` prints the sweep's own table, not start-up times.
    let show = b.results(&["show", &id.to_string()]);
    ok(&show);
    let s = text(&show.stdout);
    assert!(
        s.contains("sequential read, bs 1MiB: throughput [MiB/s]"),
        "{s}"
    );
    assert!(s.contains("random write"), "{s}");
    assert!(!s.contains("start-up time"), "{s}");

    // Nothing of the lab is left.
    let pid_note = text(&out.stderr);
    let lab = pid_note
        .split("temporary lab sweep-")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|p| p.parse::<u32>().ok())
        .unwrap();
    assert!(sweep_loops(lab).is_empty());
}

/// Ctrl-C mid-sweep: the runs recorded so far stay, the experiment is
/// marked interrupted, the lab is gone; `--resume` runs only the rest.
#[test]
fn interrupted_sweep_keeps_runs_and_resumes() {
    if !iolab_testkit::root_or_skip(
        "interrupted_sweep_keeps_runs_and_resumes",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let _m = machine();
    let b = Bench::new("sw-int");
    let args = [
        "--schedulers",
        "none,kyber",
        "--patterns",
        "1/1,1/4",
        "--rw",
        "write",
        "--reps",
        "2",
        "--size",
        "16M",
        "--lab-size",
        "256MiB",
        "--bw",
        "20MiB/s",
        "--json",
    ];
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("iolab"))
        .env("IOLAB_RUN_DIR", b.env.run.path())
        .arg("sweep")
        .args(args)
        .arg("--db")
        .arg(&b.db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Wait for the first recorded run (each takes about a second).
    let t0 = Instant::now();
    loop {
        let list = b.results(&["list", "--json"]);
        let runs = if list.status.success() {
            json_of(&list.stdout)[0]["runs"].as_u64().unwrap_or(0)
        } else {
            0
        };
        if runs >= 1 {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no run recorded in 60 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap(),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let doc = json_of(&out.stdout);
    assert_eq!(doc["status"], "interrupted");
    let id = doc["experiment"].as_u64().unwrap();
    let e = b.export(id);
    assert_eq!(e["experiment"]["status"], "interrupted");
    let kept = e["runs"].as_array().unwrap().len();
    assert!((1..8).contains(&kept), "{kept} runs kept");
    assert!(sweep_loops(pid).is_empty(), "lab left after Ctrl-C");
    assert!(
        text(&out.stderr).contains(&format!("--resume {id}")),
        "{}",
        text(&out.stderr)
    );

    let out = b.sweep(&["--resume", &id.to_string(), "--json"]);
    ok(&out);
    let doc = json_of(&out.stdout);
    assert_eq!(doc["status"], "done");
    assert_eq!(
        usize::try_from(doc["runs_recorded"].as_u64().unwrap()).unwrap(),
        8 - kept
    );
    let e = b.export(id);
    assert_eq!(e["runs"].as_array().unwrap().len(), 8);
    assert_eq!(e["experiment"]["status"], "done");
}

/// The whole disk holding `/` (mounted): refused before anything changes.
#[test]
fn mounted_device_is_refused_with_one_line() {
    if !iolab_testkit::root_or_skip(
        "mounted_device_is_refused_with_one_line",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let root = iolab_sys::mounts::containing(std::path::Path::new("/")).unwrap();
    let Some(disk) = root
        .devno
        .split_once(':')
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .and_then(|(a, b)| iolab_sys::block::BlockDev::from_devno(a, b).ok())
    else {
        iolab_testkit::skip_line(format!(
            "skip: / is not on a block device here ({})",
            root.source
        ));
        return;
    };
    let b = Bench::new("sw-mounted");
    let before = std::fs::read_to_string(disk.queue_path("scheduler")).unwrap();
    let out = b.sweep(&["--device", &disk.dev_path().to_string_lossy()]);
    let err = refused(&out);
    assert!(
        err.contains("refusing") && err.contains("mounted on /"),
        "{err}"
    );
    assert!(
        err.contains("destroying"),
        "says the data would be lost: {err}"
    );
    assert!(err.contains("--force"), "{err}");
    assert_eq!(
        std::fs::read_to_string(disk.queue_path("scheduler")).unwrap(),
        before
    );
}

/// A device of our own (a raw lab): the sweep runs on it (bandwidth
/// measured, as nothing says what it is); afterwards it holds ext4, so a
/// second sweep is refused unless --force.
#[test]
fn device_sweep_runs_then_refuses_a_device_holding_a_filesystem() {
    if !iolab_testkit::root_or_skip(
        "device_sweep_runs_then_refuses_a_device_holding_a_filesystem",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let _m = machine();
    let b = Bench::new("sw-dev");
    let lab = b.env.up(&["--size", "256MiB", "--fs", "none"]);
    let dev = lab["device"].as_str().unwrap().to_string();
    let args = [
        "--device",
        &dev,
        "--schedulers",
        "none",
        "--patterns",
        "1/4",
        "--rw",
        "randwrite",
        "--reps",
        "1",
        "--runtime",
        "200ms",
        "--json",
    ];
    let out = b.sweep(&args);
    ok(&out);
    let doc = json_of(&out.stdout);
    assert_eq!(doc["runs_recorded"], 1);
    assert_eq!(doc["sizing"]["bw_source"], "1 s of sequential direct reads");
    assert!(doc["sizing"]["total_bytes"].as_u64().unwrap() <= 128 << 20);
    let err = refused(&b.sweep(&args));
    assert!(
        err.contains("ext2/3/4 filesystem") && err.contains("--force"),
        "{err}"
    );
    let mut forced = args.to_vec();
    forced.push("--force");
    ok(&b.sweep(&forced));
    b.env.down();
}

/// LVM2's label checksum: CRC-32 (reflected, 0xedb88320) from its own
/// seed, no final inversion (lvm2 lib/misc/crc.c).
fn lvm_crc(buf: &[u8]) -> u32 {
    let mut crc: u32 = 0xf597_a6cf;
    for &b in buf {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xedb8_8320 & (crc & 1).wrapping_neg());
        }
    }
    crc
}

/// Signatures that are not filesystems but hold someone's data: an LVM
/// physical volume, a LUKS volume, an MBR partition table, a swap area. Each is written on a raw
/// lab device of our own; the sweep must refuse it naming what blkid
/// found (before the fix it passed them, with lazy mkfs, as blank).
#[test]
fn devices_holding_lvm_luks_or_swap_are_refused() {
    if !iolab_testkit::root_or_skip(
        "devices_holding_lvm_luks_or_swap_are_refused",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("sw-sig");
    let lab = b.env.up(&["--size", "64MiB", "--fs", "none"]);
    let dev = lab["device"].as_str().unwrap().to_string();
    let write_at = |off: u64, bytes: &[u8]| {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new().write(true).open(&dev).unwrap();
        f.write_all_at(&vec![0u8; 1 << 20], 0).unwrap();
        f.write_all_at(bytes, off).unwrap();
        f.sync_all().unwrap();
    };
    let mut lvm = vec![0u8; 512];
    lvm[..8].copy_from_slice(b"LABELONE");
    lvm[8..16].copy_from_slice(&1u64.to_le_bytes());
    lvm[20..24].copy_from_slice(&32u32.to_le_bytes());
    lvm[24..32].copy_from_slice(b"LVM2 001");
    let crc = lvm_crc(&lvm[20..]);
    lvm[16..20].copy_from_slice(&crc.to_le_bytes());
    let mut luks = b"LUKS\xba\xbe\x00\x01".to_vec();
    luks.extend_from_slice(b"aes\0");
    let args = [
        "--device",
        &dev,
        "--schedulers",
        "none",
        "--patterns",
        "1/1",
        "--rw",
        "read",
        "--reps",
        "1",
    ];
    let mut mbr = vec![0u8; 512];
    mbr[450] = 0x83;
    mbr[454..458].copy_from_slice(&2048u32.to_le_bytes());
    mbr[458..462].copy_from_slice(&8192u32.to_le_bytes());
    mbr[510..512].copy_from_slice(&[0x55, 0xAA]);
    for (off, bytes, says) in [
        (512, lvm, "LVM physical volume"),
        (0, luks, "LUKS"),
        (0, mbr, "dos partition table"),
    ] {
        write_at(off, &bytes);
        let err = refused(&b.sweep(&args));
        assert!(
            err.contains(says) && err.contains("--force"),
            "{says}: {err}"
        );
    }
    write_at(0, &[]);
    let made = std::process::Command::new("mkswap")
        .arg(&dev)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", text(&made.stderr));
    let err = refused(&b.sweep(&args));
    assert!(err.contains("swap area"), "{err}");
    b.env.down();
}

/// A scheduler the device does not offer: exit 2, naming those it does.
#[test]
fn unknown_scheduler_is_refused_naming_the_available_ones() {
    if !iolab_testkit::root_or_skip(
        "unknown_scheduler_is_refused_naming_the_available_ones",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("sw-sched");
    let out = b.sweep(&["--schedulers", "none,bfqq", "--lab-size", "64MiB"]);
    let err = refused(&out);
    assert!(err.contains("\"bfqq\""), "{err}");
    assert!(
        err.contains("available are") && err.contains("mq-deadline"),
        "{err}"
    );
    let list = b.results(&["list", "--json"]);
    if list.status.success() {
        assert_eq!(
            json_of(&list.stdout),
            serde_json::json!([]),
            "no experiment stored"
        );
    }
}

/// Bad flags fail before anything is made.
#[test]
fn bad_flags_are_usage_errors() {
    let b = Bench::new("sw-flags");
    for (args, want) in [
        (vec!["--rw", "trim"], "--rw"),
        (vec!["--patterns", "4"], "NUMJOBS/IODEPTH"),
        (vec!["--reps", "0"], "--reps"),
    ] {
        let out = b.sweep(&args);
        if !iolab_sys::is_root() {
            assert_eq!(out.status.code(), Some(2));
            continue;
        }
        let err = refused(&out);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// `--max` (seed 003's IOSpeed) on its tmpfs-backed loop device: every
/// point's I/O count is what the device's /proc/diskstats counted; the
/// kernel time it charges per I/O (all CPUs, /proc/stat) covers at least
/// the job threads' own system time (getrusage) and at most every CPU for
/// the point's wall time, which the test's own clock bounds; `results
/// show` prints the maxima; the tmpfs, image and loop device are gone.
#[test]
fn max_sweep_counts_match_diskstats_and_cpu_is_bounded() {
    if !iolab_testkit::root_or_skip(
        "max_sweep_counts_match_diskstats_and_cpu_is_bounded",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let _m = machine();
    let b = Bench::new("sw-max");
    let t0 = Instant::now();
    let out = b.sweep(&[
        "--max",
        "--schedulers",
        "none,bfq",
        "--threads",
        "1,2",
        "--rw",
        "randread,write",
        "--reps",
        "1",
        "--runtime",
        "300ms",
        "--lab-size",
        "128MiB",
        "--json",
    ]);
    let elapsed = t0.elapsed();
    ok(&out);
    let doc = json_of(&out.stdout);
    assert_eq!(doc["status"], "done");
    assert_eq!(
        doc["runs_recorded"], 8,
        "2 schedulers x 2 kinds x 2 thread counts"
    );
    let cpus = std::thread::available_parallelism().unwrap().get() as f64;
    let mut wall_sum = 0.0;
    for c in doc["tables"]["cells"].as_array().unwrap() {
        let p = &c["samples"][0];
        let ios = p["total_ios"].as_f64().unwrap();
        assert!(ios > 100.0, "{c}");
        let disk = p["disk_ios"].as_f64().unwrap();
        assert!(
            (disk - ios).abs() <= ios * 0.01,
            "engine {ios}, /proc/diskstats {disk}: {c}"
        );
        let bytes = p["io_bytes"].as_f64().unwrap();
        assert_eq!(bytes, ios * 4096.0, "4 KiB blocks: {c}");
        assert_eq!(p["disk_bytes"].as_f64().unwrap(), bytes, "{c}");
        let wall = p["wall_ns"].as_f64().unwrap();
        let kernel = p["kernel_ns"].as_f64().unwrap();
        let job_sys = p["job_sys_ns"].as_f64().unwrap();
        // One tick (10 ms at USER_HZ 100) of slack per CPU each side.
        let tick = 1e9 / 100.0;
        assert!(
            kernel + 2.0 * tick * cpus >= 0.8 * job_sys,
            "kernel {kernel} < threads' sys {job_sys}: {c}"
        );
        assert!(
            kernel <= wall * cpus + 2.0 * tick * cpus,
            "kernel {kernel} > {cpus} CPUs x wall {wall}: {c}"
        );
        let per_io = p["kernel_us_per_io"].as_f64().unwrap();
        assert!((per_io - kernel / ios / 1e3).abs() < 1e-6, "{c}");
        wall_sum += wall;
    }
    assert!(
        wall_sum / 1e9 <= elapsed.as_secs_f64(),
        "points' wall {wall_sum} ns > the test's {elapsed:?}"
    );
    let best = doc["tables"]["best"].as_array().unwrap();
    assert_eq!(best.len(), 4, "a maximum per kind and scheduler");
    assert_eq!(best[0]["iops_vs_first"], 1.0);

    let id = doc["experiment"].as_u64().unwrap();
    let show = b.results(&["show", &id.to_string()]);
    ok(&show);
    let s = text(&show.stdout);
    assert!(s.contains("random read, bs 4KiB, psync: IOPS"), "{s}");
    assert!(
        s.contains("kernel µs/IO") && s.contains("IOPS vs 1st"),
        "{s}"
    );

    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let run = b.env.run.path().to_string_lossy().into_owned();
    assert!(
        !mounts.contains(&run),
        "a mount under {run} is left: {mounts}"
    );
    let left: Vec<String> = std::fs::read_dir(b.env.run.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("max-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let loops = std::process::Command::new("losetup")
        .arg("-l")
        .output()
        .unwrap();
    assert!(
        !text(&loops.stdout).contains(&run),
        "{}",
        text(&loops.stdout)
    );
}

/// `--max` refuses what cannot apply, before making anything.
#[test]
fn max_sweep_bad_flags_are_usage_errors() {
    let b = Bench::new("sw-maxflags");
    for (args, want) in [
        (vec!["--max", "--patterns", "1/1"], "--patterns"),
        (vec!["--threads", "2"], "--max"),
        (vec!["--max", "--threads", "0"], "--threads 0"),
        (vec!["--max", "--bs", "1000"], "multiple of 512"),
        (vec!["--max", "--lab-size", "100TiB"], "lives in RAM"),
    ] {
        let out = b.sweep(&args);
        if !iolab_sys::is_root() {
            assert_eq!(out.status.code(), Some(2), "{args:?}");
            continue;
        }
        let err = refused(&out);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// `results compare` on real runs: 4 threads against 1 on the same fast
/// device is a real difference (more IOPS, which the device's diskstats
/// confirm per run), found as "better" with a ratio above 1; the values
/// compared are the stored runs' own.
#[test]
fn results_compare_finds_a_real_difference_between_cells() {
    if !iolab_testkit::root_or_skip(
        "results_compare_finds_a_real_difference_between_cells",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let _m = machine();
    let b = Bench::new("sw-cmp");
    let out = b.sweep(&[
        "--max",
        "--schedulers",
        "none",
        "--threads",
        "1,4",
        "--rw",
        "randread",
        "--reps",
        "4",
        "--runtime",
        "300ms",
        "--lab-size",
        "128MiB",
        "--json",
    ]);
    ok(&out);
    let id = json_of(&out.stdout)["experiment"]
        .as_u64()
        .unwrap()
        .to_string();
    let cmp = b.results(&[
        "compare",
        &id,
        &id,
        "--cells",
        "none/rand-read-1j-1qd,none/rand-read-4j-1qd",
        "--json",
    ]);
    ok(&cmp);
    let c = json_of(&cmp.stdout);
    let p = &c["pairs"][0];
    assert_eq!(c["metric"]["name"], "iops");
    assert_eq!(p["verdict"], "better", "{p}");
    assert!(p["ratio"]["value"].as_f64().unwrap() > 1.2, "{p}");
    // The compared values are the stored runs', which the device counted.
    let e = b.export(id.parse().unwrap());
    for (side, wl) in [("a", "rand-read-1j-1qd"), ("b", "rand-read-4j-1qd")] {
        let mut stored: Vec<f64> = e["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["workload"] == wl)
            .map(|r| {
                let x = &r["extra"];
                assert_eq!(x["total_ios"], x["disk_ios"], "{r}");
                x["iops"].as_f64().unwrap()
            })
            .collect();
        let mut compared: Vec<f64> = p[side]["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        stored.sort_by(f64::total_cmp);
        compared.sort_by(f64::total_cmp);
        assert_eq!(stored, compared, "{side}");
    }
    let text = b.results(&["compare", &id, &id]);
    ok(&text);
    let t = bench_env::text(&text.stdout);
    assert!(
        t.contains("no significant difference") && t.contains("diff %"),
        "{t}"
    );
    let bad = b.results(&["compare", &id, &id, "--cells", "none/nope"]);
    assert_eq!(bad.status.code(), Some(2));
}
