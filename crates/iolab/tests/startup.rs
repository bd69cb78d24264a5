//! `iolab startup` on real labs, through the real binary: the matrix runs
//! and stores every start, its JSON statistics are those of the stored raw
//! samples, a timeout is censored, a SIGKILLed matrix is resumable and its
//! lab restored, a lab's scheduler and tunables are back afterwards, start-up
//! under load is slower than idle on a throttled lab, and bad input fails
//! with one line and exit 2.
//!
//! Each test has its own run directory (`IOLAB_RUN_DIR`: journals, labs,
//! locks) and database. Tests that run a matrix hold [`MACHINE`]: they share
//! two cores and `drop_caches`/`sync` are machine-wide, so a matrix running
//! beside another would measure it.
#![allow(clippy::unwrap_used)]

mod bench_env;
mod lab_env;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use bench_env::{json_of, ok, text, Bench};
use lab_env::{have, is_mounted};
use serde_json::Value;

static MACHINE: Mutex<()> = Mutex::new(());

fn machine() -> MutexGuard<'static, ()> {
    MACHINE.lock().unwrap_or_else(|e| e.into_inner())
}

/// An 8 MiB file of random bytes in the lab: the cold read the targets time.
const PREPARE: &str = "dd if=/dev/urandom of={dir}/f bs=1M count=8 status=none";

/// Runs of `iolab startup` share a [`Bench`]'s run directory and database.
impl Bench {
    /// `iolab startup` on a small temporary lab with short defaults, then
    /// `args`, the database and the target after `--`.
    fn startup(&self, args: &[&str], target: &[&str]) -> Output {
        self.cmd()
            .arg("startup")
            .args(["--lab-size", "256MiB", "--reps", "2", "--warmup", "0.5"])
            .args(["--load-option", "size=32M"])
            .args(args)
            .arg("--db")
            .arg(&self.db)
            .arg("--")
            .args(target)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap()
    }
}

fn id_of(report: &Value) -> u64 {
    report["experiment"]["id"].as_u64().unwrap()
}

/// Runs grouped by (scheduler, workload).
fn by_cell(runs: &Value) -> BTreeMap<(String, String), Vec<&Value>> {
    let mut m: BTreeMap<(String, String), Vec<&Value>> = BTreeMap::new();
    for r in runs.as_array().unwrap() {
        let key = (
            r["scheduler"].as_str().unwrap().to_string(),
            r["workload"].as_str().unwrap().to_string(),
        );
        m.entry(key).or_default().push(r);
    }
    m
}

fn reps_of(runs: &[&Value]) -> Vec<u64> {
    let mut v: Vec<u64> = runs.iter().map(|r| r["rep"].as_u64().unwrap()).collect();
    v.sort();
    v
}

fn secs(run: &Value) -> f64 {
    run["duration_ns"].as_u64().unwrap() as f64 / 1e9
}

/// The matrix of tests 1 and 2, run once: none and mq-deadline × idle and
/// 1r1w × 2 reps, `cat` of 8 MiB cold. Its `--json` output and the export.
struct Matrix {
    json: Value,
    export: Value,
    stderr: String,
}

fn matrix() -> &'static Matrix {
    static M: OnceLock<Matrix> = OnceLock::new();
    M.get_or_init(|| {
        let _m = machine();
        let b = Bench::new("st-matrix");
        let out = b.startup(
            &[
                "--schedulers",
                "none,mq-deadline",
                "--workloads",
                "1r1w",
                "--prepare",
                PREPARE,
                "--json",
            ],
            &["cat", "{dir}/f"],
        );
        ok(&out);
        let json = json_of(&out.stdout);
        let export = b.export(id_of(&json));
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        Matrix {
            json,
            export,
            stderr,
        }
    })
}

/// `--json` puts the report on stdout; progress still reaches stderr
/// (a pipe here, as under `> out.json 2> log`): one line per start.
/// Before, `--json` silenced it, and such a run showed nothing for minutes.
#[test]
fn json_on_stdout_keeps_progress_on_stderr() {
    if !iolab_testkit::root_or_skip(
        "json_on_stdout_keeps_progress_on_stderr",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let m = matrix();
    let runs = m.export["runs"].as_array().unwrap().len();
    let lines: Vec<&str> = m
        .stderr
        .lines()
        .filter(|l| l.starts_with("iolab: ") && l.contains(" starts: "))
        .collect();
    assert_eq!(
        lines.len(),
        runs,
        "one progress line per stored start:\n{}",
        m.stderr
    );
    let last = format!("iolab: {runs}/{runs} starts: ");
    assert!(lines.iter().any(|l| l.starts_with(&last)), "{}", m.stderr);
}

#[test]
fn matrix_runs_every_cell_and_stores_every_start() {
    if !iolab_testkit::root_or_skip(
        "matrix_runs_every_cell_and_stores_every_start",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let m = matrix();
    let e = &m.export;
    assert_eq!(e["experiment"]["status"], "done");
    assert_eq!(e["experiment"]["kind"], "startup");
    assert!(e["experiment"]["environment"]["kernel"]["release"].is_string());
    let runs = e["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 8, "2 schedulers x (idle + 1r1w) x 2 reps");
    let cells = by_cell(&e["runs"]);
    assert_eq!(cells.len(), 4, "{:?}", cells.keys());
    for ((sched, wl), runs) in &cells {
        assert!(["none", "mq-deadline"].contains(&sched.as_str()));
        assert!(["idle", "1r1w"].contains(&wl.as_str()));
        assert_eq!(reps_of(runs), [1, 2], "{sched}/{wl}");
        for r in runs {
            assert!(r["duration_ns"].as_u64().unwrap() > 0, "{r}");
            assert_eq!(r["censored"], false, "{r}");
            assert_eq!(r["exit_code"], 0, "{r}");
            assert_eq!(r["config"]["scheduler"], sched.as_str());
            assert!(r["overhead_ns"].as_u64().unwrap() > 0);
            let bg = &r["background"];
            assert!(bg["seconds"].as_f64().unwrap() > 0.0, "{r}");
        }
    }
    // The background columns measure the load: more device traffic in the
    // window of a loaded start than in that of an idle one (both include
    // the target's own 8 MiB).
    let traffic = |r: &&Value| {
        let bg = &r["background"];
        bg["read_bytes"].as_u64().unwrap() + bg["write_bytes"].as_u64().unwrap()
    };
    for sched in ["none", "mq-deadline"] {
        let idle = &cells[&(sched.to_string(), "idle".to_string())];
        let load = &cells[&(sched.to_string(), "1r1w".to_string())];
        assert!(load.iter().all(|r| traffic(r) > 0));
        let idle_max = idle.iter().map(traffic).max().unwrap();
        let load_min = load.iter().map(traffic).min().unwrap();
        assert!(
            load_min > idle_max,
            "{sched}: loaded windows moved {load_min} bytes, idle ones up to {idle_max}"
        );
    }
    // Every loaded cell is compared with its scheduler's idle baseline.
    for c in m.json["cells"].as_array().unwrap() {
        assert_eq!(c["ratio_to_idle"].is_null(), c["workload"] == "idle", "{c}");
    }
}

/// t(0.975, dof) for the dofs these tests produce.
fn t975(dof: usize) -> f64 {
    match dof {
        1 => 12.706_204_736,
        2 => 4.302_652_730,
        3 => 3.182_446_305,
        4 => 2.776_445_105,
        d => panic!("no t quantile for dof {d} in this test"),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-9)
}

/// The mean start-up of `workload`'s cell in a startup report.
fn mean_of(report: &Value, workload: &str) -> f64 {
    let cells = report["cells"].as_array().unwrap();
    let c = cells.iter().find(|c| c["workload"] == workload).unwrap();
    num(c, "mean")
}

fn num(v: &Value, k: &str) -> f64 {
    v[k].as_f64()
        .unwrap_or_else(|| panic!("no number {k} in {v}"))
}

#[test]
fn json_statistics_equal_those_recomputed_from_stored_samples() {
    if !iolab_testkit::root_or_skip(
        "json_statistics_equal_those_recomputed_from_stored_samples",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let m = matrix();
    // `--json` and the export of the stored experiment report the same.
    assert_eq!(m.json["cells"], m.export["cells"]);
    assert_eq!(m.json["runs"], m.export["runs"]);
    let cells = m.json["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4);
    let stored = by_cell(&m.export["runs"]);
    let mut means = BTreeMap::new();
    for c in cells {
        let key = (
            c["scheduler"].as_str().unwrap().to_string(),
            c["workload"].as_str().unwrap().to_string(),
        );
        let mut runs = stored[&key].clone();
        runs.sort_by_key(|r| r["rep"].as_u64().unwrap());
        let xs: Vec<f64> = runs.iter().map(|r| secs(r)).collect();
        let n = xs.len();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let sd = var.sqrt();
        let mut sorted = xs.clone();
        sorted.sort_by(f64::total_cmp);
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        let half = t975(n - 1) * sd / (n as f64).sqrt();

        let what = format!("{key:?}: {c}");
        assert_eq!(c["n"], n, "{what}");
        assert_eq!(c["censored"], 0, "{what}");
        let times: Vec<f64> = c["times"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_f64().unwrap())
            .collect();
        assert_eq!(times.len(), n);
        assert!(times.iter().zip(&xs).all(|(a, b)| close(*a, *b)), "{what}");
        assert!(close(num(c, "mean"), mean), "{what}");
        assert!(close(num(c, "median"), median), "{what}");
        assert!(close(num(c, "stddev"), sd), "{what}");
        assert!(close(num(c, "min"), sorted[0]), "{what}");
        assert!(close(num(c, "max"), sorted[n - 1]), "{what}");
        let ci = &c["ci95"];
        assert!(close(num(ci, "half_width"), half), "{what}");
        // low = mean - half can be near 0 (half ≈ mean with n = 2): compare
        // at the scale of its terms, not of the difference.
        let near = |a: f64, b: f64| (a - b).abs() <= 1e-9 * (mean.abs() + half.abs());
        assert!(near(num(ci, "low"), mean - half), "{what}");
        assert!(near(num(ci, "high"), mean + half), "{what}");
        assert_eq!(num(ci, "dof"), (n - 1) as f64);
        means.insert(key, mean);
    }
    for c in cells.iter().filter(|c| c["workload"] != "idle") {
        let s = c["scheduler"].as_str().unwrap().to_string();
        let want = means[&(s.clone(), "1r1w".into())] / means[&(s, "idle".into())];
        let got = num(&c["ratio_to_idle"], "value");
        assert!(close(got, want), "ratio {got} != {want}: {c}");
    }
}

#[test]
fn a_timeout_is_recorded_as_censored_and_the_target_group_killed() {
    if !iolab_testkit::root_or_skip(
        "a_timeout_is_recorded_as_censored_and_the_target_group_killed",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let _m = machine();
    let b = Bench::new("st-timeout");
    let pids = b.env.run.path().join("pgids");
    // The shell leads the target's group; it logs its pid, then waits on
    // two sleeps, one of them in the background.
    let script = format!("echo $$ >> {}; sleep 30 & sleep 30", pids.display());
    let t0 = Instant::now();
    let out = b.startup(
        &[
            "--schedulers",
            "none",
            "--workloads",
            "idle",
            "--timeout",
            "1",
        ],
        &["sh", "-c", &script],
    );
    ok(&out);
    assert!(t0.elapsed() < Duration::from_secs(25), "{:?}", t0.elapsed());
    let stdout = text(&out.stdout);
    let idle_line = stdout
        .lines()
        .find(|l| l.starts_with("idle"))
        .unwrap_or_else(|| panic!("no idle row in:\n{stdout}"));
    assert!(idle_line.contains(">1"), "{idle_line}");
    assert!(idle_line.contains("[2/2]"), "{idle_line}");

    let e = b.export(1);
    let runs = e["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        assert_eq!(r["censored"], true, "{r}");
        assert_eq!(r["duration_ns"], 1_000_000_000u64, "{r}");
        assert_eq!(r["timeout_ns"], 1_000_000_000u64, "{r}");
        assert_eq!(r["signal"], 9, "{r}");
    }
    let cell = &e["cells"][0];
    assert_eq!(
        (cell["n"].as_u64(), cell["censored"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(cell["median_is_lower_bound"], true);
    assert!(cell["ci95"].is_null(), "{cell}");

    let groups: Vec<i32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(groups.len(), 2, "one target group per start");
    for g in groups {
        let left = iolab_sys::process::live_group_members(g).unwrap();
        assert!(left.is_empty(), "target group {g} survived: {left:?}");
    }
}

/// Kills the child on drop, so a failing test leaves no matrix running.
struct Child(Option<std::process::Child>);

impl Child {
    fn get(&mut self) -> &mut std::process::Child {
        self.0.as_mut().expect("child already taken")
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn a_killed_matrix_is_restored_and_resumable() {
    if !iolab_testkit::root_or_skip(
        "a_killed_matrix_is_restored_and_resumable",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let _m = machine();
    let b = Bench::new("st-resume");
    let bin = assert_cmd::cargo::cargo_bin("iolab");
    let log = b.env.run.path().join("killed.stderr");
    let reps = 3;
    let mut child = Child(Some(
        std::process::Command::new(&bin)
            .env("IOLAB_RUN_DIR", b.env.run.path())
            .args(["startup", "--lab-size", "256MiB", "--schedulers", "none"])
            .args(["--workloads", "1r", "--warmup", "0.5", "--load-option"])
            .args([
                "size=32M",
                "--reps",
                &reps.to_string(),
                "--prepare",
                PREPARE,
            ])
            .arg("--db")
            .arg(&b.db)
            .args(["--", "sh", "-c", "cat {dir}/f > /dev/null; sleep 0.3"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    ));
    let pid = child.get().id();
    let lab = format!("startup-{pid}");
    let image = PathBuf::from(format!("/var/tmp/iolab/{lab}.img"));
    let mountpoint = b.env.labs_dir().join(&lab);

    // SIGKILL once at least one start is stored, before the matrix ends.
    let until = Instant::now() + Duration::from_secs(60);
    let (id, stored) = loop {
        let list = b.list();
        let runs = list[0]["runs"].as_u64().unwrap_or(0);
        if runs >= 1 {
            break (list[0]["id"].as_u64().unwrap(), runs);
        }
        assert!(Instant::now() < until, "no run stored within 60 s");
        if let Some(st) = child.get().try_wait().unwrap() {
            let err = std::fs::read_to_string(&log).unwrap_or_default();
            panic!("the matrix ended ({st}) before storing a run:\n{err}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    child.get().kill().unwrap();
    child.get().wait().unwrap();
    assert!(stored < 2 * reps, "the matrix finished before the kill");
    // The killed run left its lab behind (what the next run must undo).
    assert!(
        !iolab_guard::loops_backed_by(&image).is_empty(),
        "no loop device over {} after the kill",
        image.display()
    );
    assert!(is_mounted(&mountpoint));
    // Read through the library: any iolab command run as root would
    // already recover the killed run's journal, and the resume must.
    let before = iolab_store::Store::open(&b.db)
        .unwrap()
        .report(iolab_store::ExperimentId(id as i64))
        .unwrap();
    assert_ne!(before.experiment.status, iolab_store::Status::Done);
    let kept: Vec<Value> = before
        .runs
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect();

    let out = b
        .cmd()
        .args(["startup", "--resume", &id.to_string(), "--json", "--db"])
        .arg(&b.db)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    ok(&out);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("left by iolab pid {pid}")),
        "no recovery of the killed run reported:\n{stderr}"
    );
    assert!(
        iolab_guard::loops_backed_by(&image).is_empty(),
        "loop devices of the killed run remain: {}",
        std::process::Command::new("losetup")
            .arg("-a")
            .output()
            .map(|o| text(&o.stdout))
            .unwrap_or_default()
    );
    assert!(!image.exists(), "{} left behind", image.display());
    assert!(
        !is_mounted(&mountpoint),
        "{} still mounted",
        mountpoint.display()
    );
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(&lab), "{lab} still in mountinfo");

    let after = json_of(&out.stdout);
    assert_eq!(id_of(&after), id);
    assert_eq!(after["experiment"]["status"], "done");
    let cells = by_cell(&after["runs"]);
    assert_eq!(cells.len(), 2, "{:?}", cells.keys());
    for (key, runs) in &cells {
        assert_eq!(reps_of(runs), [1, 2, 3], "{key:?} repeated or lost a start");
    }
    // What was stored before the kill is kept as it was, not re-measured.
    let runs = after["runs"].as_array().unwrap();
    for k in &kept {
        assert!(runs.contains(k), "run changed or lost by resume: {k}");
    }
    // One cell per (scheduler, workload): the resumed lab's other mount
    // point must not split the target into two.
    let report_cells = after["cells"].as_array().unwrap();
    assert_eq!(report_cells.len(), 2, "{}", after["cells"]);
    for c in report_cells {
        assert_eq!(c["n"], reps, "{c}");
    }
}

#[test]
fn ctrl_c_stops_early_restores_and_says_how_to_resume() {
    if !iolab_testkit::root_or_skip(
        "ctrl_c_stops_early_restores_and_says_how_to_resume",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let _m = machine();
    let b = Bench::new("st-sigint");
    let mut child = Child(Some(
        std::process::Command::new(assert_cmd::cargo::cargo_bin("iolab"))
            .env("IOLAB_RUN_DIR", b.env.run.path())
            .args(["startup", "--lab-size", "64MiB", "--schedulers", "none"])
            .args(["--workloads", "idle", "--reps", "20", "--db"])
            .arg(&b.db)
            .args(["--", "sleep", "0.3"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let pid = child.get().id();
    let image = PathBuf::from(format!("/var/tmp/iolab/startup-{pid}.img"));
    let until = Instant::now() + Duration::from_secs(30);
    while b.list()[0]["runs"].as_u64().unwrap_or(0) < 1 {
        assert!(Instant::now() < until, "no run stored within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: kill(2) with a pid we spawned and still own (not reaped).
    assert_eq!(
        unsafe { libc::kill(i32::try_from(pid).unwrap(), libc::SIGINT) },
        0
    );
    let t0 = Instant::now();
    let out = child.0.take().unwrap().wait_with_output().unwrap();
    eprintln!("stopped {:?} after SIGINT", t0.elapsed());
    assert!(t0.elapsed() < Duration::from_secs(10), "slow to stop");
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("interrupted: continue with `iolab startup --resume 1"),
        "{stdout}"
    );
    // It cleaned up after itself: nothing left for a later run to recover.
    assert!(iolab_guard::loops_backed_by(&image).is_empty());
    assert!(!image.exists(), "{} left behind", image.display());
    let journals: Vec<_> = std::fs::read_dir(b.env.run.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("journal-"))
        .map(|e| e.file_name())
        .collect();
    assert!(journals.is_empty(), "journals left: {journals:?}");
    let list = b.list();
    assert_eq!(list[0]["status"], "interrupted", "{list}");
    let runs = list[0]["runs"].as_u64().unwrap();
    assert!((1..20).contains(&runs), "{list}");
}

fn tunables(dev: &str) -> BTreeMap<String, String> {
    let dir = Path::new("/sys/block").join(dev).join("queue/iosched");
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| {
                    let v = std::fs::read_to_string(e.path()).unwrap();
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        v.trim().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn current_scheduler(dev: &str) -> String {
    let s = std::fs::read_to_string(format!("/sys/block/{dev}/queue/scheduler")).unwrap();
    iolab_sys::block::parse_schedulers(s.trim())
        .unwrap()
        .current
}

#[test]
fn a_labs_scheduler_and_tunables_are_restored_afterwards() {
    if !iolab_testkit::root_or_skip(
        "a_labs_scheduler_and_tunables_are_restored_afterwards",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let _m = machine();
    let b = Bench::new("st-sched");
    let up = b
        .env
        .up(&["--size", "256MiB", "--scheduler", "mq-deadline"]);
    let dev = lab_env::kname(lab_env::s(&up, "device"));
    // Tuned by hand (our own lab's device; multiples of 4 ms survive the
    // kernel's ms -> jiffies rounding): a scheduler switch loses such
    // values unless they are put back.
    let q = Path::new("/sys/block").join(&dev).join("queue/iosched");
    std::fs::write(q.join("read_expire"), "200").unwrap();
    std::fs::write(q.join("fifo_batch"), "8").unwrap();
    let before = tunables(&dev);
    assert_eq!(before["read_expire"], "200");

    let out = b
        .cmd()
        .args([
            "startup",
            "--lab",
            &b.env.name,
            "--reps",
            "1",
            "--workloads",
        ])
        .args(["idle", "--schedulers", "mq-deadline,bfq,none"])
        .args(["--iosched-param", "read_expire=100"])
        .args(["--iosched-param", "slice_idle=0", "--json", "--db"])
        .arg(&b.db)
        .args(["--", "true"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    ok(&out);
    let report = json_of(&out.stdout);
    // The parameters were in force in the cells whose scheduler has them.
    let set = |sched: &str| {
        let runs = report["runs"].as_array().unwrap();
        let r = runs.iter().find(|r| r["scheduler"] == sched).unwrap();
        r["config"]["iosched_params_set"].clone()
    };
    assert_eq!(
        set("mq-deadline"),
        serde_json::json!([["read_expire", "100"]])
    );
    assert_eq!(set("bfq"), serde_json::json!([["slice_idle", "0"]]));
    assert_eq!(set("none"), serde_json::json!([]));

    assert_eq!(current_scheduler(&dev), "mq-deadline");
    assert_eq!(
        tunables(&dev),
        before,
        "tunables of the lab's scheduler changed"
    );
    b.env.down();
}

#[test]
fn start_up_under_load_is_slower_than_idle_on_a_throttled_lab() {
    if !iolab_testkit::root_or_skip(
        "start_up_under_load_is_slower_than_idle_on_a_throttled_lab",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let _m = machine();
    let b = Bench::new("st-slow");
    let out = b.startup(
        &[
            "--bw",
            "20MiB/s",
            "--schedulers",
            "mq-deadline",
            "--workloads",
            "1r1w",
            "--timeout",
            "15",
            "--prepare",
            PREPARE,
            "--json",
        ],
        &["cat", "{dir}/f"],
    );
    ok(&out);
    let report = json_of(&out.stdout);
    // What the lab's device presented is stored with the run, read back.
    let place = report["experiment"]["config"]["place"].as_str().unwrap();
    assert!(
        place.contains("read_ahead_kb 128, rotational 0, write cache: write back"),
        "{place}"
    );
    let (idle, loaded) = (mean_of(&report, "idle"), mean_of(&report, "1r1w"));
    eprintln!("cold 8 MiB read at 20 MiB/s, mq-deadline: idle {idle:.2} s, 1r1w {loaded:.2} s");
    // A CI run failed here with 0.73 s against 0.50: the lab's device then
    // had the read-ahead its loop device inherits from the disk under the
    // image (2560 KiB on this VM's virtio disk), so the start read 8 MiB in
    // a few large requests that the load hardly delayed (0.79-1.9 s here).
    // The lab now sets 128 KiB, the kernel's default and Android's, on
    // every host: each 128 KiB read waits for a driver tag behind the
    // writer's 1 MiB writes, and the start takes 5.9-7.3 s against 0.37
    // (the device model gives 5.9-7.3 s too). 1.5x is far inside that.
    // A censored 1r1w start only makes its mean a lower bound.
    assert!(
        loaded > 1.5 * idle,
        "under 1r1w {loaded:.2} s is not clearly slower than idle {idle:.2} s"
    );
}

/// The same on a host without cgroup v1 (`IOLAB_NO_CGROUP_V1=1`): the
/// `--bw` lab is served by the device model at that rate, and the
/// phenomenon is there all the same.
#[test]
fn start_up_under_load_is_slower_than_idle_without_cgroup_v1() {
    if !iolab_testkit::root_or_skip(
        "start_up_under_load_is_slower_than_idle_without_cgroup_v1",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let _m = machine();
    let b = Bench::new("st-slow-v2");
    let out = b
        .cmd()
        .env("IOLAB_NO_CGROUP_V1", "1")
        .arg("startup")
        .args(["--lab-size", "256MiB", "--reps", "2", "--warmup", "0.5"])
        .args(["--load-option", "size=32M", "--bw", "20MiB/s"])
        .args([
            "--schedulers",
            "mq-deadline",
            "--workloads",
            "1r1w",
            "--timeout",
            "15",
        ])
        .args(["--prepare", PREPARE, "--json", "--db"])
        .arg(&b.db)
        .args(["--", "cat", "{dir}/f"])
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap();
    ok(&out);
    let report = json_of(&out.stdout);
    assert!(
        report["experiment"]["config"]["place"]
            .as_str()
            .unwrap()
            .contains("device model rate"),
        "{}",
        report["experiment"]["config"]
    );
    let (idle, loaded) = (mean_of(&report, "idle"), mean_of(&report, "1r1w"));
    // 8 MiB at 20 MiB/s: the idle start is the model's 0.4 s (wall clock).
    assert!((0.3..1.5).contains(&idle), "idle {idle:.2} s");
    assert!(
        loaded > 1.5 * idle,
        "under 1r1w {loaded:.2} s is not clearly slower than idle {idle:.2} s"
    );
}

/// Runs `iolab startup ARGS` and checks it fails with one line and exit 2;
/// returns that line.
fn usage_error(b: &Bench, args: &[&str]) -> String {
    let out = b
        .cmd()
        .arg("startup")
        .args(args)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: stderr:\n{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: not one line:\n{err}");
    assert!(lines[0].starts_with("iolab: "), "{err}");
    lines[0].to_string()
}

/// [`usage_error`] for a matrix on a small temporary lab: `args`, then
/// the bench's database and `target` after `--`.
fn bad_matrix(b: &Bench, args: &[&str], target: &str) -> String {
    let db = db_arg(b);
    let mut v = vec!["--lab-size", "64MiB"];
    v.extend_from_slice(args);
    v.extend(["--db", &db, "--", target]);
    usage_error(b, &v)
}

fn db_arg(b: &Bench) -> String {
    b.db.to_string_lossy().into_owned()
}

#[test]
fn unknown_scheduler_is_a_usage_error() {
    if !iolab_testkit::root_or_skip(
        "unknown_scheduler_is_a_usage_error",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("st-bad-sched");
    let line = bad_matrix(&b, &["--schedulers", "foo"], "true");
    assert!(
        line.contains("\"foo\"") && line.contains("mq-deadline"),
        "{line}"
    );
}

#[test]
fn missing_command_is_a_usage_error() {
    if !iolab_testkit::root_or_skip(
        "missing_command_is_a_usage_error",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("st-bad-cmd");
    let db = db_arg(&b);
    for args in [vec!["--db", &db], vec!["--db", &db, "--"]] {
        let line = usage_error(&b, &args);
        assert!(line.contains("no target command"), "{line}");
    }
    assert!(!b.db.exists(), "a database was made for nothing");
}

#[test]
fn unwritable_database_is_a_usage_error() {
    if !iolab_testkit::root_or_skip(
        "unwritable_database_is_a_usage_error",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("st-bad-db");
    let line = usage_error(&b, &["--db", "/proc/nope/x.db", "--", "true"]);
    assert!(
        line.contains("/proc/nope") && line.contains("--db"),
        "{line}"
    );
}

#[test]
fn not_root_is_a_usage_error() {
    let b = Bench::new("st-not-root");
    let out = if iolab_sys::is_root() {
        if !have("setpriv") {
            iolab_testkit::skip_line(
                "skip not_root_is_a_usage_error: running as root and setpriv is missing"
                    .to_string(),
            );
            return;
        }
        std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(assert_cmd::cargo::cargo_bin("iolab"))
            .env("IOLAB_RUN_DIR", b.env.run.path())
            .args(["startup", "--db", "/nonexistent/x.db", "--", "true"])
            .output()
            .unwrap()
    } else {
        b.cmd()
            .args(["startup", "--db", "/nonexistent/x.db", "--", "true"])
            .output()
            .unwrap()
    };
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("needs root"), "{err}");
}

#[test]
fn unknown_workload_is_a_usage_error_before_anything_runs() {
    if !iolab_testkit::root_or_skip(
        "unknown_workload_is_a_usage_error_before_anything_runs",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("st-bad-load");
    let args = [
        "--schedulers",
        "none",
        "--workloads",
        "1r,nope",
        "--reps",
        "1",
    ];
    let line = bad_matrix(&b, &args, "true");
    assert!(line.contains("nope") && line.contains("1r1w"), "{line}");
    // Refused before the matrix: nothing measured, nothing stored.
    let list = b.list();
    assert!(
        list.as_array().is_none_or(|l| l.is_empty()),
        "an experiment was stored: {list}"
    );
}

#[test]
fn missing_program_is_a_usage_error_before_anything_is_stored() {
    if !iolab_testkit::root_or_skip(
        "missing_program_is_a_usage_error_before_anything_is_stored",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("st-bad-prog");
    let args = ["--schedulers", "none", "--workloads", "idle"];
    let line = bad_matrix(&b, &args, "{dir}/no-such-app");
    assert!(
        line.contains("no-such-app") && line.contains("executable"),
        "{line}"
    );
    let list = b.list();
    assert!(
        list.as_array().is_none_or(|l| l.is_empty()),
        "an experiment was stored: {list}"
    );
}

#[test]
fn bad_iosched_params_are_usage_errors() {
    if !iolab_testkit::root_or_skip(
        "bad_iosched_params_are_usage_errors",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("st-bad-param");
    let run = |sched: &str, param: &str| {
        let args = [
            "--workloads",
            "idle",
            "--reps",
            "1",
            "--schedulers",
            sched,
            "--iosched-param",
            param,
        ];
        bad_matrix(&b, &args, "true")
    };
    let line = run("bfq", "slice_idle");
    assert!(line.contains("NAME=VALUE"), "{line}");
    // A tunable none of the schedulers has: a typo, not something to skip.
    let line = run("bfq,mq-deadline", "slice_idel=0");
    assert!(
        line.contains("slice_idel") && line.contains("slice_idle"),
        "{line}"
    );
    // A value the scheduler refuses.
    let line = run("bfq", "slice_idle=abc");
    assert!(
        line.contains("slice_idle") && line.contains("abc"),
        "{line}"
    );
    let list = b.list();
    assert!(
        list.as_array().is_none_or(|l| l.is_empty()),
        "an experiment was stored: {list}"
    );
}

#[test]
fn demo_help_works_without_running_it() {
    let out = assert_cmd::Command::cargo_bin("iolab")
        .unwrap()
        .args(["demo", "--help"])
        .output()
        .unwrap();
    ok(&out);
    let help = text(&out.stdout);
    for want in ["Usage: iolab demo", "--bw", "--reps", "--db", "--json"] {
        assert!(help.contains(want), "{want} missing from:\n{help}");
    }
    let out = assert_cmd::Command::cargo_bin("iolab")
        .unwrap()
        .args(["startup", "--help"])
        .output()
        .unwrap();
    ok(&out);
    assert!(text(&out.stdout).contains("--resume"));
}

#[test]
fn a_real_device_needs_force_and_a_dir_on_it() {
    if !iolab_testkit::root_or_skip(
        "a_real_device_needs_force_and_a_dir_on_it",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("st-bad-dev");
    let db = db_arg(&b);
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = dir.path().to_string_lossy().into_owned();
    let disk = iolab_sys::mounts::containing(dir.path())
        .and_then(|m| {
            let (a, b) = m.devno.split_once(':')?;
            iolab_sys::block::BlockDev::from_devno(a.parse().ok()?, b.parse().ok()?).ok()
        })
        .map(|d| d.name);
    let Some(disk) = disk else {
        iolab_testkit::skip_line(
            "skip a_real_device_needs_force_and_a_dir_on_it: /var/tmp is not on a block device"
                .to_string(),
        );
        return;
    };
    // Without --force: refused before anything is touched.
    let line = usage_error(
        &b,
        &["--device", &disk, "--dir", &d, "--db", &db, "--", "true"],
    );
    assert!(line.contains("--force"), "{line}");
    // With --force but a --dir on another device: refused too.
    let other = if disk == "loop0" { "loop1" } else { "loop0" };
    let line = usage_error(
        &b,
        &[
            "--device", other, "--dir", &d, "--force", "--db", &db, "--", "true",
        ],
    );
    assert!(
        line.contains(&format!("does not go through {other}")),
        "{line}"
    );
}

#[test]
fn trace_cpu_and_explain_are_stored_with_every_start() {
    if !iolab_testkit::root_or_skip(
        "trace_cpu_and_explain_are_stored_with_every_start",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let _m = machine();
    let b = Bench::new("st-observe");
    let out = b.startup(
        &[
            "--bw",
            "20MiB/s",
            "--schedulers",
            "mq-deadline",
            "--workloads",
            "1w",
            "--timeout",
            "20",
            "--prepare",
            PREPARE,
            "--trace",
            "bio",
            "--cpu",
            "--explain",
            "--json",
        ],
        &["cat", "{dir}/f"],
    );
    ok(&out);
    let id = id_of(&json_of(&out.stdout));
    let e = b.export(id);
    let runs = e["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "idle + 1w, 2 reps");
    let arts = e["artifacts"].as_array().unwrap();
    for r in runs {
        let of = |kind: &str| {
            arts.iter()
                .find(|a| {
                    a["kind"] == kind
                        && ["scheduler", "workload", "rep", "target"]
                            .iter()
                            .all(|k| a[k] == r[k])
                })
                .unwrap_or_else(|| panic!("run {r} has no {kind} artifact"))
        };
        // The target read 8 MiB cold: the trace saw requests, lost none.
        let h = &of("latency_hist")["json"];
        assert_eq!(h["lost_events"], 0, "{h}");
        assert!(h["requests"].as_u64().unwrap() >= 8, "{h}");
        assert!(!h["histograms"].as_array().unwrap().is_empty(), "{h}");
        // Counted in the kernel, the app's requests apart from the rest's:
        // cat's cold read of the 8 MiB file is the app's (readahead is
        // submitted in the reader's context), the load's writes the rest's,
        // and the two add up to the whole.
        assert_eq!(h["tracer"], "bpf", "{h}");
        let o = &h["by_owner"];
        assert!(o.get("unavailable").is_none(), "{o}");
        let sum = |hs: &Value, op: &str, k: &str| -> u64 {
            hs.as_array()
                .unwrap()
                .iter()
                .filter(|x| x["op"] == op)
                .map(|x| x[k].as_u64().unwrap())
                .sum()
        };
        let app_read = sum(&o["app"], "R", "bytes");
        assert!(
            (8 << 20..=9 << 20).contains(&app_read),
            "the app read {app_read} bytes of its 8 MiB file: {o}"
        );
        assert_eq!(sum(&o["app"], "W", "count"), 0, "cat wrote: {o}");
        if r["workload"] == "1w" {
            assert!(sum(&o["rest"], "W", "count") > 0, "no load writes: {o}");
        }
        for op in ["R", "W"] {
            assert_eq!(
                sum(&o["app"], op, "count") + sum(&o["rest"], op, "count"),
                sum(&h["histograms"], op, "count"),
                "{op}: {h}"
            );
        }
        // A CPU series over the start (200 ms ticks plus the end).
        let c = &of("cpu")["json"];
        assert!(c["samples"].as_array().unwrap().len() >= 2, "{c}");
        assert!(of("psi")["json"].is_object());
        // The attribution covers the start, and the cold read shows as
        // page-cache reads (the idle start has nothing else to wait for).
        let a = &of("explain")["json"];
        assert_eq!(a["trace"]["lost"], 0, "{}", a["trace"]);
        // The main thread (cat's) by state covers the measured start:
        // the five states sum to its duration within 2 %.
        let m = &r["extra"]["observed"]["explain"]["main_thread"];
        let split = &m["by_task_state"];
        let known: u64 = [
            "running_dur_ns",
            "runnable_dur_ns",
            "uninterruptible_io_sleep_dur_ns",
            "uninterruptible_non_io_sleep_dur_ns",
            "interruptible_sleep_dur_ns",
        ]
        .iter()
        .map(|k| split[k].as_u64().unwrap())
        .sum();
        let dur_ns = r["duration_ns"].as_u64().unwrap() as f64;
        assert!(
            (known as f64 - dur_ns).abs() <= 0.02 * dur_ns,
            "states sum to {known} ns of a {dur_ns} ns start: {m}\ntrace: {}\ntasks: {}",
            a["trace"],
            a["tasks"]
        );
        // Its I/O waits against the kernel's delay accounting of the same
        // thread over the same span (taskstats at release and at exit): a
        // cold 8 MiB read at 20 MiB/s waits 100s of ms. This host's 6.18
        // kernel inflates blkio (by 18 % to several times here, once by
        // its whole uptime), so agreement is checked on Debian's kernel
        // (tests/vm/stacks.rs: within 0.4 %); here the kernel's figure
        // must be there, and flagged not credible exactly when it is
        // longer than the thread lived.
        let d = &m["delayacct"];
        let traced = d["traced_io_ns"].as_u64().unwrap() as f64;
        let kernel = d["blkio_delay_ns"].as_u64().unwrap() as f64;
        let lived = d["lived_ns"].as_u64().unwrap() as f64;
        assert!(traced >= 100e6, "{m}");
        assert!(d["blkio_count"].as_u64().unwrap() > 0, "{d}");
        assert_eq!(
            d["credible"].as_bool().unwrap(),
            kernel <= lived * 1.02 + 1e6,
            "{d}"
        );
        // Most of it is the start's own, and it is named as such.
        assert!(
            split["uninterruptible_io_sleep_dur_ns"].as_u64().unwrap() as f64 >= 0.5 * traced,
            "{m}"
        );
        let wall = a["wall_ns"].as_u64().unwrap() as f64;
        let dur = r["duration_ns"].as_u64().unwrap() as f64;
        assert!(
            wall >= 0.9 * dur,
            "attributed {wall} ns of a {dur} ns start"
        );
        if r["workload"] == "idle" {
            let top = a["causes"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["kind"] != "idle")
                .max_by_key(|c| c["blocked_ns"].as_u64().unwrap())
                .unwrap();
            assert_eq!(top["cause"], "page-cache read I/O", "{top}");
        }
    }
    // The report names the causes of the loaded cell's difference.
    let out = b
        .cmd()
        .args(["results", "show", &id.to_string(), "--db"])
        .arg(&b.db)
        .output()
        .unwrap();
    ok(&out);
    let show = text(&out.stdout);
    let line = show
        .lines()
        .skip_while(|l| !l.starts_with("Where the extra time went"))
        .find(|l| l.starts_with("mq-deadline"))
        .unwrap_or_else(|| panic!("no causes table:\n{show}"));
    assert!(line.contains(" 1w ") && line.contains(" s"), "{line}");
    // And the main thread by state, per cell.
    assert!(
        show.contains("main thread by state") && show.contains("D (I/O)"),
        "{show}"
    );
}

/// `--start-mode warm` against cold on the demo's app (`iolab app`, its
/// files prepared in the lab): a warm start is a new process whose files
/// are still cached, so it reads (nearly) nothing from the device (the
/// device's own counters, over each start) and is faster than every cold
/// start; its first, priming start is not stored.
#[test]
fn warm_starts_read_nothing_from_the_device_and_beat_cold_ones() {
    if !iolab_testkit::root_or_skip(
        "warm_starts_read_nothing_from_the_device_and_beat_cold_ones",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let _m = machine();
    let b = Bench::new("st-warm");
    let iolab = env!("CARGO_BIN_EXE_iolab");
    let prepare = format!("{iolab} app --prepare --scale 0.25 --dir {{dir}}/app");
    let run = |mode: &str| {
        let out = b.startup(
            &[
                "--bw",
                "40MiB/s",
                "--schedulers",
                "none",
                "--workloads",
                "idle",
                "--start-mode",
                mode,
                "--prepare",
                &prepare,
                "--json",
            ],
            &[iolab, "app", "--dir", "{dir}/app"],
        );
        ok(&out);
        let e = b.export(id_of(&json_of(&out.stdout)));
        let runs = e["runs"].as_array().unwrap().clone();
        assert_eq!(runs.len(), 2, "{mode}: two stored starts, no priming one");
        for r in &runs {
            assert_eq!(r["outcome"], "ok", "{r}");
            assert_eq!(r["config"]["start_mode"], mode, "{r}");
        }
        runs
    };
    let cold = run("cold");
    let warm = run("warm");
    let read = |r: &Value| r["extra"]["device_read_bytes"].as_u64().unwrap();
    for r in &cold {
        assert!(read(r) >= 4 << 20, "a cold start read {} B", read(r));
    }
    for r in &warm {
        assert!(read(r) < 1 << 20, "a warm start read {} B", read(r));
    }
    let slowest_warm = warm.iter().map(secs).fold(0.0, f64::max);
    let fastest_cold = cold.iter().map(secs).fold(f64::MAX, f64::min);
    eprintln!("warm ≤ {slowest_warm:.3} s, cold ≥ {fastest_cold:.3} s");
    assert!(slowest_warm < fastest_cold, "warm {warm:?}\ncold {cold:?}");
}

#[test]
fn start_modes_that_cannot_hold_are_usage_errors() {
    let b = Bench::new("st-modes");
    let line = usage_error(&b, &["--start-mode", "hot", "--", "true"]);
    assert!(
        line.contains("--start-mode hot") && line.contains("warm"),
        "{line}"
    );
    let line = usage_error(
        &b,
        &[
            "--start-mode",
            "warm",
            "--cold",
            "drop-caches",
            "--",
            "true",
        ],
    );
    assert!(line.contains("--cold drop-caches"), "{line}");
}

/// `--full-ready-line`: each start stores its initial display (the ready
/// line, still the start-up time) and its full display (the second line,
/// 300 ms later by the target's own sleep), and the report gives both.
#[test]
fn initial_and_full_display_are_stored_per_start() {
    if !iolab_testkit::root_or_skip(
        "initial_and_full_display_are_stored_per_start",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let _m = machine();
    let b = Bench::new("st-ttfd");
    let out = b.startup(
        &[
            "--schedulers",
            "none",
            "--workloads",
            "idle",
            "--cold",
            "none",
            "--ready-line",
            "^displayed",
            "--full-ready-line",
            "^fully drawn",
            "--json",
        ],
        &[
            "sh",
            "-c",
            "echo displayed; sleep 0.3; echo fully drawn; sleep 30",
        ],
    );
    ok(&out);
    let id = id_of(&json_of(&out.stdout));
    let e = b.export(id);
    for r in e["runs"].as_array().unwrap() {
        let ttid = r["extra"]["ttid_ns"].as_u64().unwrap();
        let ttfd = r["extra"]["ttfd_ns"].as_u64().unwrap();
        assert_eq!(ttid, r["duration_ns"].as_u64().unwrap(), "{r}");
        // The target writes its lines at least 300 ms apart; iolab times
        // each when its watcher reads it, one wakeup later, so the gap it
        // sees may be short by the first wakeup's lateness (a fresh-clone
        // CI run here beside the background builds: 299.68 ms). 20 ms is
        // far beyond that and far below the gap, so a full display taken
        // from the first line still fails.
        assert!(
            ttfd >= ttid + 280_000_000 && ttfd < ttid + 5_000_000_000,
            "{r}"
        );
    }
    let show = b
        .cmd()
        .args(["results", "show", &id.to_string(), "--db"])
        .arg(&b.db)
        .output()
        .unwrap();
    ok(&show);
    let show = text(&show.stdout);
    assert!(show.contains("time to initial / full display"), "{show}");
}

/// `--vmstat`, the collector issue 49 added by its own file and one
/// registry line: each start stores /proc/vmstat's counters before and
/// after, and what a cold start of `cat` of an 8 MiB file paged in from
/// the disk is at least the file (the kernel counts pgpgin in KiB),
/// checked against the file's size, not against iolab's own numbers.
#[test]
fn vmstat_counts_at_least_the_file_a_cold_start_read() {
    if !iolab_testkit::root_or_skip(
        "vmstat_counts_at_least_the_file_a_cold_start_read",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let _m = machine();
    let b = Bench::new("st-vmstat");
    let out = b
        .cmd()
        .args(["startup", "--lab-size", "128MiB", "--reps", "2"])
        .args(["--schedulers", "none", "--workloads", "idle", "--vmstat"])
        .args([
            "--prepare",
            "dd if=/dev/urandom of={dir}/f bs=1M count=8 status=none",
        ])
        .arg("--db")
        .arg(&b.db)
        .args(["--", "cat", "{dir}/f"])
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    ok(&out);
    let report = b.export(1);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        let h = &r["extra"]["observed"]["vmstat"]["headline"];
        let kib = h["paged_in_kib"].as_i64().unwrap();
        assert!(kib >= 8 * 1024, "{r}");
        assert!(h["major_faults"].as_i64().unwrap() >= 0, "{r}");
    }
    let docs: Vec<&Value> = report["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "vmstat")
        .collect();
    assert_eq!(docs.len(), 2);
    for d in docs {
        let j = &d["json"];
        let (before, after) = (
            j["before"]["pgpgin"].as_i64(),
            j["after"]["pgpgin"].as_i64(),
        );
        assert_eq!(
            j["delta"]["pgpgin"].as_i64(),
            Some(after.unwrap() - before.unwrap()),
            "{j}"
        );
    }
}
