//! `startup --am-start` with a stand-in `am` that prints what Android 14's
//! `am start -W -S` printed for a cold start of Settings (recorded): the
//! run's time is am's TotalTime, not the command's wall time, and the
//! launch state is stored. No phone here: what this leaves untested is the
//! real am and the phone's storage, said in docs/remote.md.
#![allow(clippy::unwrap_used)]

mod bench_env;
mod lab_env;

use std::time::Duration;

use bench_env::{json_of, ok, Bench};

/// What Android 14's `am start -W -S` printed (also the parser's unit test input).
const RECORDED: &str = include_str!("fixtures/android/am_start_cold.txt");

/// What every phone stand-in has besides am and pm: `settings` (a file
/// per namespace, `null` for a key never set) and `svc power stayon`,
/// which writes `global stay_on_while_plugged_in`; the screen is on and
/// unlocked (`dumpsys power`'s and KeyguardController's lines).
/// `cmd` and `dumpsys` of the package service come from `package_cmd`
/// and `package_dumpsys`.
fn phone_basics(
    dir: &std::path::Path,
    write: &dyn Fn(&str, String),
    package_cmd: &str,
    package_dumpsys: &str,
) {
    let d = dir.display();
    write(
        "settings",
        format!(
            "f={d}/settings_$2\n\
             case $1 in get) v=$(grep \"^$3=\" $f 2>/dev/null | tail -n 1 | cut -d= -f2-); echo ${{v:-null}} ;;\n\
             put) echo \"$3=$4\" >> $f ;; delete) grep -v \"^$3=\" $f > $f.t; mv $f.t $f ;; *) exit 1 ;; esac\n"
        ),
    );
    write(
        "svc",
        "[ \"$*\" = 'power stayon true' ] || exit 1\nsettings put global stay_on_while_plugged_in 7\n".to_string(),
    );
    write("cmd", package_cmd.to_string());
    write(
        "dumpsys",
        format!(
            "[ \"$1\" = power ] && {{ echo '  mWakefulness=Awake'; exit 0; }}\n\
                 [ \"$1 $2\" = 'activity activities' ] && {{ echo '  KeyguardController:'; echo '    mKeyguardShowing=false'; exit 0; }}\n{package_dumpsys}"
        ),
    );
}

/// A directory of stand-ins for Android's `am`, `pm` and (optionally)
/// `logcat`, each checking it was called as iolab must call it, and the
/// PATH that puts them first.
fn phone(logcat: Option<&str>) -> (tempfile::TempDir, String) {
    let bin = tempfile::tempdir().unwrap();
    let write = |name: &str, body: String| {
        let p = bin.path().join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}")).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    };
    // Settings runs as the system uid (android:sharedUserId
    // android.uid.system).
    phone_basics(
        bin.path(),
        &write,
        "[ \"$*\" = 'package list packages -U com.android.settings' ] || exit 1\necho package:com.android.settings uid:1000\n",
        "exit 1\n",
    );
    write(
        "am",
        format!(
            "[ \"$*\" = 'force-stop com.android.settings' ] && exit 0\n\
             [ \"$*\" = 'start -W -S -n com.android.settings/.Settings' ] || \
             {{ echo \"Error: unexpected $*\"; exit 1; }}\nsleep 0.2\ncat <<'EOF'\n{RECORDED}\nEOF\n"
        ),
    );
    // The APK pm names exists (written back, as an installed app's is):
    // each cold start is checked on it.
    let apk = bin.path().join("Settings.apk");
    let mut f = std::fs::File::create(&apk).unwrap();
    std::io::Write::write_all(&mut f, &vec![7u8; 1 << 20]).unwrap();
    f.sync_all().unwrap();
    write(
        "pm",
        format!(
            "[ \"$*\" = 'path com.android.settings' ] || exit 1\n\
             echo package:{}\n",
            apk.display()
        ),
    );
    if let Some(line) = logcat {
        // `logcat -v epoch -T SECONDS.MS`: the line is printed 0.3 s after
        // the call with the log time of that moment, then logcat runs on
        // (as the real one does) until iolab kills its group.
        write(
            "logcat",
            format!(
                "echo $$ >> {dir}/logcat.pids\n\
                 case \"$*\" in '-v epoch -T '[0-9]*.[0-9][0-9][0-9]) ;; *) echo \"bad args $*\" >&2; exit 1;; esac\n\
                 sleep 0.3\n[ -n '{line}' ] && echo \"$(date +%s.%N | cut -c1-14)  1402  1433 I ActivityTaskManager: {line}\"\n\
                 exec sleep 600\n",
                dir = bin.path().display()
            ),
        );
    }
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap()
    );
    (bin, path)
}

fn startup(b: &Bench, path: &str, extra: &[&str]) -> std::process::Output {
    b.cmd()
        .env("PATH", path)
        .args([
            "startup",
            "--lab-size",
            "64MiB",
            "--reps",
            "2",
            "--schedulers",
            "none",
        ])
        .args([
            "--workloads",
            "idle",
            "--am-start",
            "com.android.settings/.Settings",
        ])
        .args(extra)
        .args(["--json", "--db"])
        .arg(&b.db)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap()
}

#[test]
fn an_activitys_start_is_ams_total_time() {
    if !iolab_testkit::root_or_skip(
        "an_activitys_start_is_ams_total_time",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let b = Bench::new("android");
    let (_bin, path) = phone(None);
    let out = startup(&b, &path, &[]);
    ok(&out);
    let report = b.export(1);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        assert_eq!(r["duration_ns"], 1_131_000_000u64, "{r}");
        assert_eq!(r["outcome"], "ok");
        let am = &r["extra"]["am_start"];
        assert_eq!(am["result"]["launch_state"], "COLD");
        assert_eq!(am["result"]["wait_ms"], 1134);
        // The command itself took its 0.2 s sleep and more.
        assert!(am["am_wall_ns"].as_u64().unwrap() >= 200_000_000, "{am}");
    }
    let target = &report["experiment"]["config"]["startup"]["target"];
    assert_eq!(target["kind"], "activity");
    assert_eq!(target["am"]["component"], "com.android.settings/.Settings");
    let _ = json_of(&out.stdout);
}

fn pids_gone(bin: &std::path::Path) -> usize {
    let pids = std::fs::read_to_string(bin.join("logcat.pids")).unwrap();
    for pid in pids.split_whitespace() {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "logcat {pid} outlived its start"
        );
    }
    pids.split_whitespace().count()
}

#[test]
fn ready_logcat_times_the_fully_drawn_line() {
    if !iolab_testkit::root_or_skip(
        "ready_logcat_times_the_fully_drawn_line",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    // With the system's own delay in the line: that is the start's time.
    let b = Bench::new("android-logcat");
    let (bin, path) = phone(Some("Fully drawn com.android.settings/.Settings: +1s500ms"));
    ok(&startup(
        &b,
        &path,
        &["--ready-logcat", "Fully drawn com\\.android\\.settings"],
    ));
    let report = b.export(1);
    for r in report["runs"].as_array().unwrap() {
        assert_eq!(r["duration_ns"], 1_500_000_000u64, "{r}");
        assert_eq!(r["outcome"], "ok");
        let seen = &r["extra"]["am_start"]["logcat"];
        assert_eq!(seen["reported_ms"], 1500, "{seen}");
        // The line was logged 0.3 s after logcat started, which was a few
        // ms before the launch began (the wall clock is the outside truth).
        let delay = seen["log_delay_ms"].as_f64().unwrap();
        assert!((250.0..5000.0).contains(&delay), "{seen}");
        assert_eq!(r["extra"]["am_start"]["result"]["total_ms"], 1131);
    }
    assert_eq!(pids_gone(bin.path()), 2);

    // Without a delay in the line: its log time after the launch began.
    let b = Bench::new("android-logcat-plain");
    let (bin, path) = phone(Some("settings: ready"));
    ok(&startup(&b, &path, &["--ready-logcat", "settings: ready$"]));
    for r in b.export(1)["runs"].as_array().unwrap() {
        let seen = &r["extra"]["am_start"]["logcat"];
        let delay = seen["log_delay_ms"].as_f64().unwrap();
        assert_eq!(
            r["duration_ns"].as_f64().unwrap(),
            (delay * 1e6).trunc(),
            "{r}"
        );
        assert!((250.0..5000.0).contains(&delay), "{seen}");
    }
    assert_eq!(pids_gone(bin.path()), 2);

    // Never logged: censored at the timeout, and logcat still ends.
    let b = Bench::new("android-logcat-never");
    let (bin, path) = phone(Some(""));
    ok(&startup(
        &b,
        &path,
        &["--ready-logcat", "Fully drawn", "--timeout", "2"],
    ));
    for r in b.export(1)["runs"].as_array().unwrap() {
        assert_eq!(r["outcome"], "censored", "{r}");
        assert_eq!(r["duration_ns"], 2_000_000_000u64);
    }
    assert_eq!(pids_gone(bin.path()), 2);
}

/// zygote, standing in: a server the test starts (not iolab's child, as
/// zygote is not) that forks the app for each line on its fifo. The child
/// specialises for 50 ms, then takes the package name as argv[0] (as
/// zygote's child does) by exec, maps the app's APK and stays alive until
/// force-stopped.
const ZYGOTE: &str = r#"
import os, signal, sys, time
fifo, pkg, apk = sys.argv[1], sys.argv[2], sys.argv[3]
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
APP = "import mmap, time, sys\nf = open(sys.argv[1], 'rb')\nm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\nsum(m[i] for i in range(0, len(m), 4096))\ntime.sleep(600)\n"
print("ready", flush=True)
while True:
    with open(fifo) as f:
        for line in f:
            if os.fork() == 0:
                time.sleep(0.05)
                os.execv(sys.executable, [pkg, "-c", APP, apk])
"#;

/// A phone whose `am start -S` force-stops the app and has zygote fork
/// it; `cmd package compile` says Success and, unless `skip` (as when
/// dexopt is skipped), sets the state `dumpsys package` then shows.
struct Zygote {
    dir: tempfile::TempDir,
    path: String,
    server: std::process::Child,
    /// One zygote at a time: each one's am kills every process named
    /// as the app, the other tests' apps included.
    _one: std::sync::MutexGuard<'static, ()>,
}

static ONE_ZYGOTE: std::sync::Mutex<()> = std::sync::Mutex::new(());

const PKG: &str = "com.example.rigapp";

impl Zygote {
    fn start(skip_dexopt: bool) -> Zygote {
        let one = ONE_ZYGOTE.lock().unwrap_or_else(|p| p.into_inner());
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let d = dir.path();
        let app = d.join("app");
        std::fs::create_dir_all(app.join("oat/arm64")).unwrap();
        // Written back, as an installed app's files are: drop_caches
        // cannot drop dirty pages.
        for (f, b) in [("base.apk", 3u8), ("oat/arm64/base.odex", 4u8)] {
            let mut file = std::fs::File::create(app.join(f)).unwrap();
            std::io::Write::write_all(&mut file, &vec![b; 3 << 20]).unwrap();
            file.sync_all().unwrap();
        }
        std::fs::write(d.join("zygote.py"), ZYGOTE).unwrap();
        let fifo = d.join("zygote.fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        std::fs::write(d.join("dexopt"), "verify install").unwrap();
        let bin = d.join("bin");
        std::fs::create_dir(&bin).unwrap();
        let write = |name: &str, body: String| {
            let p = bin.join(name);
            std::fs::write(&p, format!("#!/bin/sh\n{body}")).unwrap();
            std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
        };
        // am: force-stop (and start's -S) kill the app by its name; start
        // then asks ActivityManager, here zygote, and waits as -W does.
        write(
            "am",
            format!(
                "for p in /proc/[0-9]*; do [ \"$(tr '\\0' '\\n' < $p/cmdline 2>/dev/null | head -n 1)\" = {PKG} ] && kill -9 ${{p#/proc/}}; done\n\
                 [ \"$*\" = 'force-stop {PKG}' ] && exit 0\n\
                 [ \"$*\" = 'start -W -S -n {PKG}/.Main' ] || {{ echo \"Error: unexpected $*\"; exit 1; }}\n\
                 echo start > {fifo}\nsleep 0.3\n\
                 printf 'Starting: Intent {{ cmp={PKG}/.Main }}\\nStatus: ok\\nLaunchState: COLD\\nActivity: {PKG}/.Main\\nTotalTime: 250\\nWaitTime: 260\\nComplete\\n'\n",
                fifo = fifo.display()
            ),
        );
        write("pm", format!("echo package:{}/base.apk\n", app.display()));
        // The app is this test's zygote's child: root's uid here.
        // dumpsys package: the Dexopt state section as ART service prints it.
        phone_basics(
            &bin,
            &write,
            &format!(
                "[ \"$*\" = 'package list packages -U {PKG}' ] && {{ echo package:{PKG} uid:0; exit 0; }}\n\
                 [ \"$1 $2 $3 $5 $6\" = 'package compile -m -f {PKG}' ] || exit 1\n\
                 {}echo \"$4 cmdline\" > {d}/dexopt\necho Success\n",
                if skip_dexopt {
                    "echo Success; exit 0\n"
                } else {
                    ""
                },
                d = d.display()
            ),
            &format!(
                "read status reason < {d}/dexopt\n\
                 printf 'Dexopt state:\\n  [{PKG}]\\n    path: {app}/base.apk\\n      arm64: [status=%s] [reason=%s] [primary-abi]\\n        [location is {app}/oat/arm64/base.odex]\\n' \"$status\" \"$reason\"\n",
                d = d.display(),
                app = app.display()
            ),
        );
        let mut server = std::process::Command::new("python3")
            .arg(d.join("zygote.py"))
            .arg(&fifo)
            .arg(PKG)
            .arg(app.join("base.apk"))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(server.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        assert_eq!(line.trim(), "ready");
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        Zygote {
            dir,
            path,
            server,
            _one: one,
        }
    }

    /// The app's live processes.
    fn apps(&self) -> Vec<i32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| c.split(|&b| b == 0).next() == Some(PKG.as_bytes()))
            })
            .collect()
    }
}

impl Drop for Zygote {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
        for p in self.apps() {
            // SAFETY: kill(2) of the app processes this test's zygote made.
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
        let _ = &self.dir;
    }
}

fn zygote_startup(b: &Bench, z: &Zygote, extra: &[&str]) -> std::process::Output {
    b.cmd()
        .env("PATH", &z.path)
        .args(["startup", "--lab-size", "64MiB", "--reps", "2"])
        .args(["--schedulers", "none", "--workloads", "idle"])
        .args(["--am-start", &format!("{PKG}/.Main")])
        .args(extra)
        .arg("--db")
        .arg(&b.db)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap()
}

#[test]
fn the_app_zygote_forks_gets_the_targets_ioprio_and_nice_and_compile_is_checked() {
    if !iolab_testkit::root_or_skip(
        "the_app_zygote_forks_gets_the_targets_ioprio_and_nice_and_compile_is_checked",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let z = Zygote::start(false);
    let b = Bench::new("android-zygote");
    let out = zygote_startup(
        &b,
        &z,
        &[
            "--target-ioprio",
            "idle",
            "--target-nice",
            "5",
            "--compile",
            "speed",
        ],
    );
    ok(&out);
    let report = b.export(1);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let mut pids = Vec::new();
    for r in runs {
        assert_eq!(r["outcome"], "ok", "{r}");
        let app = &r["extra"]["app_process"];
        assert_eq!(app["ioprio"], "idle", "{app}");
        assert_eq!(app["nice"], 5, "{app}");
        // Named 50 ms after its fork; set within the next poll or two.
        let age = app["set_after_birth_ms"].as_f64().unwrap();
        assert!(age < 1000.0, "{app}");
        // Its own reads, from cold: the 3 MiB APK it maps whole (am's
        // wait4 would have said nothing of them).
        let read = app["io"]["read_bytes"].as_u64().unwrap();
        assert!(read >= 2 << 20, "{app}");
        pids.push(i32::try_from(app["pid"].as_i64().unwrap()).unwrap());
    }
    // The kernel's view of the app still running (the last start's; the
    // first was force-stopped by the second's am): what iolab stored.
    assert_ne!(pids[0], pids[1]);
    let live = z.apps();
    assert_eq!(live, vec![pids[1]], "live apps");
    let (class, nice) = lab_env::kernel_priorities(pids[1].into());
    assert_eq!(class, 3, "ioprio class of the app: idle (3)");
    assert_eq!(nice, 5);
    // am itself ran with the defaults: only the app is the target.
    // The dexopt state --compile produced is stored with the experiment.
    let dexopt = &report["experiment"]["config"]["dexopt"];
    assert_eq!(dexopt["dexopt"][0]["status"], "speed", "{dexopt}");
    assert_eq!(dexopt["dexopt"][0]["reason"], "cmdline", "{dexopt}");
    // The compiled code is among the files each cold start checks.
    let learnt = runs[1]["extra"]["cold"]["files"].as_u64().unwrap();
    assert!(learnt >= 2, "{}", runs[1]["extra"]["cold"]);
}

#[test]
fn a_compile_that_said_success_but_did_not_take_is_refused() {
    if !iolab_testkit::root_or_skip(
        "a_compile_that_said_success_but_did_not_take_is_refused",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let z = Zygote::start(true);
    let b = Bench::new("android-skipped");
    let out = zygote_startup(&b, &z, &["--compile", "speed"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        bench_env::text(&out.stderr)
    );
    let err = bench_env::text(&out.stderr);
    assert!(
        err.contains("did not take") && err.contains("status=verify"),
        "{err}"
    );
}

#[test]
fn ready_rss_stable_weighs_the_app_not_am() {
    if !iolab_testkit::root_or_skip(
        "ready_rss_stable_weighs_the_app_not_am",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let z = Zygote::start(false);
    let b = Bench::new("android-rss");
    // am (a shell script, about 1 MiB) never reaches 6 MiB; the app (a
    // python that maps its 3 MiB APK) does, after am is gone.
    let out = zygote_startup(&b, &z, &["--ready-rss-stable", "6M,1M,300ms"]);
    ok(&out);
    let report = b.export(1);
    for r in report["runs"].as_array().unwrap() {
        assert_eq!(r["outcome"], "ok", "{r}");
        let app = &r["extra"]["app_process"];
        // Ready when the app had reached its size: after it was named.
        let found_ns = app["set_after_ms"].as_f64().unwrap() * 1e6;
        assert!(r["duration_ns"].as_f64().unwrap() >= found_ns - 2e6, "{r}");
    }
}

#[test]
fn explain_follows_the_app_zygote_forks_not_only_am() {
    if !iolab_testkit::root_or_skip(
        "explain_follows_the_app_zygote_forks_not_only_am",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let z = Zygote::start(false);
    let b = Bench::new("android-explain");
    ok(&zygote_startup(&b, &z, &["--explain"]));
    let e = b.export(1);
    let arts = e["artifacts"].as_array().unwrap();
    for r in e["runs"].as_array().unwrap() {
        let app = r["extra"]["app_process"]["pid"].as_i64().unwrap();
        let a = arts
            .iter()
            .find(|a| a["kind"] == "explain" && a["rep"] == r["rep"])
            .unwrap_or_else(|| panic!("run {r} has no explain artifact"));
        // The app's own task is in the attribution, with time traced:
        // its cold read of the APK it maps.
        let tasks = a["json"]["tasks"].as_array().unwrap();
        let t = tasks
            .iter()
            .find(|t| t["tid"].as_i64() == Some(app))
            .unwrap_or_else(|| panic!("the app {app} is not among {tasks:?}"));
        assert!(t["on_cpu_ns"].as_u64().unwrap() > 0, "{t}");
    }
}

/// `--sched` takes on the app zygote forks, as `--explain` does: its
/// task's scheduling delays are measured, not only am's.
#[test]
fn sched_follows_the_app_zygote_forks_not_only_am() {
    if !iolab_testkit::root_or_skip(
        "sched_follows_the_app_zygote_forks_not_only_am",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let z = Zygote::start(false);
    let b = Bench::new("android-sched");
    ok(&zygote_startup(&b, &z, &["--sched"]));
    let e = b.export(1);
    let arts = e["artifacts"].as_array().unwrap();
    for r in e["runs"].as_array().unwrap() {
        assert_eq!(r["outcome"], "ok", "{r}");
        let app = r["extra"]["app_process"]["pid"].as_i64().unwrap();
        let a = arts
            .iter()
            .find(|a| a["kind"] == "sched" && a["rep"] == r["rep"])
            .unwrap_or_else(|| panic!("run {r} has no sched artifact"));
        let tasks = a["json"]["tasks"].as_array().unwrap();
        assert!(
            tasks.iter().any(|t| t["tid"].as_i64() == Some(app)),
            "the app {app} is not among {tasks:?}"
        );
    }
}
