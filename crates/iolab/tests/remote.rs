//! `iolab remote` end to end over a real ssh connection: an sshd of the
//! test's own (Debian's openssh-server, its own host key, config and
//! authorized key) on 127.0.0.1. The device is this machine, which lets
//! the test read the device's database directly and compare it with what
//! came home; and the adb transport through a stand-in `adb` that runs
//! the same commands locally (no phone here: what a phone adds, adbd and
//! su, is covered by recorded outputs in the remote crate's unit tests).
#![allow(clippy::unwrap_used)]

mod bench_env;
mod lab_env;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use bench_env::{json_of, ok, text, Bench};

use serde_json::Value;

const SSHD: &str = "/usr/sbin/sshd";

/// One remote test at a time: each looks for its device's lab among the
/// machine's loop devices.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// An sshd on 127.0.0.1 accepting one key for root; stopped on drop.
struct Sshd {
    dir: tempfile::TempDir,
    child: Child,
    port: u16,
    made_privsep_dir: bool,
}

impl Sshd {
    fn start() -> Sshd {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for key in ["hostkey", "client"] {
            let st = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(d.join(key))
                .status()
                .unwrap();
            assert!(st.success());
        }
        std::fs::copy(d.join("client.pub"), d.join("authorized_keys")).unwrap();
        // A free port: bound and released (sshd binds it right after).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/hostkey\n\
                 PidFile {d}/sshd.pid\nAuthorizedKeysFile {d}/authorized_keys\n\
                 PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n",
                d = d.display()
            ),
        )
        .unwrap();
        // sshd's privilege-separation directory; removed again if we made it.
        let made_privsep_dir = !Path::new("/run/sshd").exists();
        std::fs::create_dir_all("/run/sshd").unwrap();
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stderr(std::fs::File::create(d.join("sshd.log")).unwrap())
            .spawn()
            .unwrap();
        let s = Sshd {
            dir,
            child,
            port,
            made_privsep_dir,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "sshd did not listen: {}",
                s.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        s
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// The `iolab remote` flags that reach it.
    fn flags(&self) -> Vec<String> {
        let mut v: Vec<String> = vec![
            "--ssh".into(),
            "root@127.0.0.1".into(),
            "--ssh-port".into(),
            self.port.to_string(),
            "--ssh-identity".into(),
            self.dir.path().join("client").display().to_string(),
        ];
        for o in [
            "StrictHostKeyChecking=no",
            "UserKnownHostsFile=/dev/null",
            "LogLevel=ERROR",
        ] {
            v.push("--ssh-option".into());
            v.push(o.into());
        }
        v
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if self.made_privsep_dir {
            let _ = std::fs::remove_dir("/run/sshd");
        }
    }
}

fn tools_or_skip(test: &str) -> bool {
    if !iolab_testkit::root_or_skip(test, "it makes loop devices and mounts") {
        return false;
    }
    for p in [SSHD, "/usr/bin/ssh", "/usr/bin/ssh-keygen"] {
        if !Path::new(p).exists() {
            iolab_testkit::skip_line(format!(
                "skip {test}: {p} is missing (apt-get install openssh-server openssh-client)"
            ));
            return false;
        }
    }
    true
}

/// A short startup: 2 reps of idle and 1r on a temporary lab.
fn startup_args(reps: &str, target: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "startup",
        "--lab-size",
        "64MiB",
        "--reps",
        reps,
        "--warmup",
        "0.3",
        "--schedulers",
        "none",
        "--workloads",
        "1r",
        "--load-option",
        "size=16M",
        "--",
    ]
    .map(String::from)
    .to_vec();
    v.extend(target.iter().map(|s| s.to_string()));
    v
}

fn remote(b: &Bench, transport: &[String], dir: &Path, command: &[String]) -> Output {
    b.cmd()
        .arg("remote")
        .args(transport)
        .arg("--remote-dir")
        .arg(dir)
        .arg("--db")
        .arg(&b.db)
        .arg("--")
        .args(command)
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap()
}

/// The device's own database (this machine is the device).
fn device_db(dir: &Path) -> PathBuf {
    dir.join("data/results.db")
}

fn results_json(b: &Bench, db: &Path, args: &[&str]) -> Value {
    let out = b
        .cmd()
        .arg("results")
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap();
    ok(&out);
    json_of(&out.stdout)
}

fn uname_n() -> String {
    text(&Command::new("uname").arg("-n").output().unwrap().stdout)
        .trim()
        .to_string()
}

#[test]
fn a_startup_over_ssh_comes_home_with_the_devices_identity_and_numbers() {
    if !tools_or_skip("a_startup_over_ssh_comes_home_with_the_devices_identity_and_numbers") {
        return;
    }
    let _one = serial();
    let sshd = Sshd::start();
    let b = Bench::new("remote-ssh");
    let dev = tempfile::tempdir().unwrap();
    let out = remote(
        &b,
        &sshd.flags(),
        dev.path(),
        &startup_args("2", &["cat", "/etc/hostname"]),
    );
    ok(&out);
    let err = text(&out.stderr);
    assert!(err.contains("copied"), "{err}");
    // The device's progress and table came through.
    assert!(
        text(&out.stdout).contains("start-up time"),
        "{}",
        text(&out.stdout)
    );

    // The local store has it, with where it ran, and the device's numbers.
    let list = b.list();
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["host"], uname_n());
    let here = results_json(&b, &b.db, &["show", "1", "--json"]);
    let there = results_json(&b, &device_db(dev.path()), &["show", "1", "--json"]);
    let origin = &here["experiment"]["origin"];
    assert_eq!(
        origin["via"],
        format!("ssh root@127.0.0.1 -p {}", sshd.port)
    );
    assert_eq!(origin["hostname"], uname_n());
    let machine_id = std::fs::read_to_string("/etc/machine-id")
        .map(|s| s.trim().to_string())
        .ok();
    if let Some(id) = machine_id.filter(|s| !s.is_empty()) {
        assert_eq!(origin["machine_id"], id);
    }
    assert_eq!(here["runs"], there["runs"]);
    assert_eq!(here["cells"], there["cells"]);
    assert_eq!(here["runs"].as_array().unwrap().len(), 4);

    // Again: the binary is not copied twice, the first experiment is
    // unchanged, the second new.
    let out = remote(&b, &sshd.flags(), dev.path(), &startup_args("1", &["true"]));
    ok(&out);
    let err = text(&out.stderr);
    assert!(err.contains("already there"), "{err}");
    assert!(err.contains("unchanged") && err.contains("new"), "{err}");
    assert_eq!(b.list().as_array().unwrap().len(), 2);
}

/// The pid of `parent`'s child running `comm`.
fn child_named(parent: u32, comm: &str) -> Option<u32> {
    let tasks = std::fs::read_dir(format!("/proc/{parent}/task")).ok()?;
    for t in tasks.flatten() {
        let kids = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
        for k in kids
            .split_whitespace()
            .filter_map(|k| k.parse::<u32>().ok())
        {
            let c = std::fs::read_to_string(format!("/proc/{k}/comm")).unwrap_or_default();
            if c.trim() == comm {
                return Some(k);
            }
        }
    }
    None
}

/// Loop devices whose backing file is under `dir`.
fn loops_under(dir: &Path) -> Vec<String> {
    let out = Command::new("losetup")
        .args(["-n", "-O", "NAME,BACK-FILE"])
        .output()
        .unwrap();
    text(&out.stdout)
        .lines()
        .filter(|l| l.contains(&*dir.to_string_lossy()) || l.contains("startup-"))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_lost_connection_leaves_the_device_restored_and_the_run_resumable() {
    if !tools_or_skip("a_lost_connection_leaves_the_device_restored_and_the_run_resumable") {
        return;
    }
    let _one = serial();
    let sshd = Sshd::start();
    let b = Bench::new("remote-lost");
    let dev = tempfile::tempdir().unwrap();
    let before = loops_under(dev.path());
    let child = Command::new(assert_cmd::cargo::cargo_bin("iolab"))
        .env("IOLAB_RUN_DIR", b.env.run.path())
        .arg("remote")
        .args(sshd.flags())
        .arg("--remote-dir")
        .arg(dev.path())
        .arg("--db")
        .arg(&b.db)
        .arg("--")
        .args(startup_args("6", &["sleep", "0.5"]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the device has stored a start, then cut the connection
    // (the ssh client dies as on a network loss).
    let deadline = Instant::now() + Duration::from_secs(60);
    let db = device_db(dev.path());
    loop {
        assert!(Instant::now() < deadline, "no run stored on the device");
        let runs = db
            .exists()
            .then(|| results_json(&b, &db, &["list", "--json"]));
        if runs.is_some_and(|l| l[0]["runs"].as_u64().unwrap_or(0) >= 1) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let ssh = child_named(child.id(), "ssh").expect("iolab remote's ssh client");
    // SAFETY: kill(2) on a pid we just found as our child's child.
    unsafe { libc::kill(i32::try_from(ssh).unwrap(), libc::SIGKILL) };
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("connection ended"), "{err}");

    // The device's iolab stops by itself: its experiment reads interrupted
    // and its lab is gone, within its stop time.
    let deadline = Instant::now() + Duration::from_secs(30);
    let remote_list = loop {
        let l = results_json(&b, &db, &["list", "--json"]);
        if l[0]["status"] == "interrupted" && loops_under(dev.path()) == before {
            break l;
        }
        assert!(
            Instant::now() < deadline,
            "device not restored: {l} loops {:?}",
            loops_under(dev.path())
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let partial = remote_list[0]["runs"].as_u64().unwrap();
    assert!((1..12).contains(&partial), "{remote_list}");
    // What was measured before the loss came home.
    let here = b.list();
    assert!(here[0]["runs"].as_u64().unwrap() >= 1, "{here}");

    // Resumed over a new connection: the device finishes, the local copy
    // is updated in place with all 12 runs.
    let out = remote(
        &b,
        &sshd.flags(),
        dev.path(),
        &["startup".into(), "--resume".into(), "1".into()],
    );
    ok(&out);
    assert!(
        text(&out.stderr).contains("updated"),
        "{}",
        text(&out.stderr)
    );
    let here = b.list();
    assert_eq!(here.as_array().unwrap().len(), 1, "{here}");
    assert_eq!(here[0]["runs"], 12);
    assert_eq!(here[0]["status"], "done");
    let there = results_json(&b, &db, &["show", "1", "--json"]);
    let local = results_json(&b, &b.db, &["show", "1", "--json"]);
    assert_eq!(local["runs"], there["runs"]);
}

#[test]
fn the_adb_transport_pushes_runs_and_pulls_through_adbs_commands() {
    if !iolab_testkit::root_or_skip(
        "the_adb_transport_pushes_runs_and_pulls_through_adbs_commands",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let _one = serial();
    // A stand-in adb: `-s SERIAL shell SCRIPT` runs SCRIPT with sh, push
    // and pull copy, `root` answers as an already-rooted adbd. Every call
    // is logged, so the test sees which adb commands iolab used.
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("adb.log");
    let adb = d.path().join("adb");
    std::fs::write(
        &adb,
        format!(
            "#!/bin/sh\necho \"$*\" >> {log}\n[ \"$1\" = -s ] || exit 1\nshift 2\n\
             case \"$1\" in\n  shell) shift; exec sh -c \"$1\" ;;\n\
             push) cp \"$2\" \"$3\" && echo \"$2: 1 file pushed\" ;;\n\
             pull) cp \"$2\" \"$3\" && echo \"$2: 1 file pulled\" ;;\n\
             root) echo 'adbd is already running as root' ;;\n\
             *) exit 1 ;;\nesac\n",
            log = log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&adb, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let b = Bench::new("remote-adb");
    let dev = tempfile::tempdir().unwrap();
    let transport = vec![
        "--adb".to_string(),
        "EMU5554".to_string(),
        "--adb-program".to_string(),
        adb.display().to_string(),
    ];
    let out = remote(&b, &transport, dev.path(), &startup_args("1", &["true"]));
    ok(&out);
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(
        calls.lines().any(|l| l.starts_with("-s EMU5554 push ")),
        "{calls}"
    );
    assert!(
        calls.lines().any(|l| l.starts_with("-s EMU5554 pull ")),
        "{calls}"
    );
    assert!(
        calls.lines().all(|l| l.starts_with("-s EMU5554 ")),
        "{calls}"
    );
    let here = results_json(&b, &b.db, &["show", "1", "--json"]);
    assert_eq!(here["experiment"]["origin"]["via"], "adb EMU5554");
    let there = results_json(&b, &device_db(dev.path()), &["show", "1", "--json"]);
    assert_eq!(here["runs"], there["runs"]);
    // A device's settings come home on stdout, as `--recipe device` reads
    // them: the same as read here (this machine is the device).
    let out = remote(
        &b,
        &transport,
        dev.path(),
        &["settings".into(), "--json".into()],
    );
    ok(&out);
    let came: Value = serde_json::from_slice(&out.stdout).unwrap();
    let local = b.cmd().args(["settings", "--json"]).output().unwrap();
    ok(&local);
    let here: Value = serde_json::from_slice(&local.stdout).unwrap();
    assert_eq!(came["groups"], here["groups"]);
    assert_eq!(came["disks"][0]["scheduler"], here["disks"][0]["scheduler"]);
}

#[test]
fn a_wrong_binary_or_missing_client_is_a_usage_error() {
    let b = Bench::new("remote-usage");
    let out = b
        .cmd()
        .args([
            "remote",
            "--adb",
            "X",
            "--adb-program",
            "/nonexistent/adb",
            "--",
            "results",
            "list",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("install adb"),
        "{}",
        text(&out.stderr)
    );
    let out = b.cmd().args(["remote", "--", "results"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_command_the_device_refuses_is_a_usage_error_here() {
    if !tools_or_skip("a_command_the_device_refuses_is_a_usage_error_here") {
        return;
    }
    let _one = serial();
    let sshd = Sshd::start();
    let b = Bench::new("remote-refused");
    let dev = tempfile::tempdir().unwrap();
    let out = remote(
        &b,
        &sshd.flags(),
        dev.path(),
        &[
            "startup".into(),
            "--reps".into(),
            "0x".into(),
            "--".into(),
            "true".into(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    // The device's own one-line reason came through, then ours.
    assert!(err.contains("--reps") && err.contains("refused"), "{err}");
}
