//! `iolab boot` on real boots of the qemu guest scripts/guest/boot-build.sh
//! makes: the first boot records the list, every variant boots cold from
//! the same (snapshot) disk, and what is stored is checked against what
//! iolab does not compute itself: the workload's files on the image (what
//! a boot must read at least), the test's own clock around the command,
//! and, for the safety boots, that init ran although the prefetch went
//! wrong. Timings are compared in docs/boot.md, not here.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::lab_env::have;
use serde_json::Value;

/// What the guest's boot reads at least (scripts/guest/boot/init): 120
/// pieces of 256 KiB of boot.art, services.jar (24 MiB), eight 4 MiB
/// service binaries and 200 packages' first 64 KiB and last 16 KiB.
const BOOT_READS_AT_LEAST: u64 = 120 * (256 << 10) + (24 << 20) + 8 * (4 << 20) + 200 * (80 << 10);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn iolab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
}

fn build_guest(dir: &Path, args: &[&str]) {
    let out = Command::new("bash")
        .arg(repo().join("scripts/guest/boot-build.sh"))
        .args(args)
        .env("IOLAB_BIN", assert_cmd::cargo::cargo_bin("iolab"))
        .env("IOLAB_GUEST_DIR", dir)
        .env("IOLAB_GUEST_DEBS", "/var/cache/iolab-guest")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `iolab boot ARGS` into `db`; its exported experiment and the
/// wall time the test measured around it.
fn boot(guest: &Path, db: &Path, args: &[&str]) -> (Value, Duration) {
    let t0 = Instant::now();
    let out = iolab()
        .arg("boot")
        .arg("--guest")
        .arg(guest)
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap();
    let wall = t0.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{err}\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    (export_last(db), wall)
}

/// The newest experiment in `db`, exported as JSON.
fn export_last(db: &Path) -> Value {
    let list = iolab()
        .args(["results", "list", "--json", "--db"])
        .arg(db)
        .output()
        .unwrap();
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    let id = list.as_array().unwrap().last().unwrap()["id"]
        .as_u64()
        .unwrap();
    let e = iolab()
        .args([
            "results",
            "export",
            &id.to_string(),
            "--format",
            "json",
            "--db",
        ])
        .arg(db)
        .output()
        .unwrap();
    assert!(e.status.success(), "{}", String::from_utf8_lossy(&e.stderr));
    serde_json::from_slice(&e.stdout).unwrap()
}

fn variant(r: &Value) -> &str {
    r["variant"].as_str().unwrap_or("none")
}

#[test]
fn boots_record_then_prefetch_and_every_boot_is_checked() {
    if !iolab_testkit::root_or_skip(
        "boots_record_then_prefetch_and_every_boot_is_checked",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    if !have("qemu-system-x86_64") || !have("apt-get") {
        iolab_testkit::skip(
            "boots_record_then_prefetch_and_every_boot_is_checked",
            "needs qemu-system-x86_64 and Debian's archive for the guest's kernel (apt-get install qemu-system-x86)",
        );
        return;
    }
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    let guest = work.path().join("guest");
    build_guest(&guest, &[]);
    let db = work.path().join("results.db");

    // none, a prefetch held before init reading in disk order, one in the
    // background on the image rewritten in the list's order, and boots
    // whose prefetch goes wrong (its list missing, corrupt, or the helper
    // killed); one boot each (the statistics are the stats crate's, tested
    // there), on a disk limited in bytes and requests per second. One
    // invocation: one recording boot serves them all.
    let (e, wall) = boot(
        &guest,
        &db,
        &[
            "--boots",
            "1",
            "--warmup-boots",
            "0",
            "--iops",
            "2000",
            "--variants",
            "none,before+disk-order,relayout,safety-missing,safety-corrupt,safety-kill",
        ],
    );
    let runs = e["runs"].as_array().unwrap();
    assert_eq!(
        runs.len(),
        8,
        "recording, relayout and 6 variants: {runs:?}"
    );
    let mut guest_total = 0.0;
    for r in runs {
        assert_eq!(r["outcome"], "ok", "{r}");
        let x = &r["extra"];
        // Each boot read at least what its workload's files hold, by the
        // guest kernel's diskstats.
        assert!(
            x["read_bytes"].as_u64().unwrap() >= BOOT_READS_AT_LEAST,
            "{r}"
        );
        // qemu's own count of the disk's reads (QMP, every 100 ms, read by
        // the host) agrees with the guest kernel's at the marker, within
        // what 100 ms of reading at 40 MiB/s can add.
        let qmp = x["qmp_read_bytes_at_done"].as_u64().unwrap();
        let ds = x["read_bytes"].as_u64().unwrap();
        assert!(
            qmp.abs_diff(ds) <= (ds / 20).max(8 << 20),
            "qmp {qmp} diskstats {ds}: {r}"
        );
        assert!(
            x["disk_series"]["t_s"].as_array().unwrap().len() > 10,
            "{r}"
        );
        // The guest's clock against the host's over the same span.
        assert!(x["clock_diff_s"].as_f64().unwrap().abs() <= 0.1, "{r}");
        let s = r["duration_ns"].as_f64().unwrap() / 1e9;
        assert!(s > 1.0, "{r}");
        guest_total += s;
    }
    // Eight boots, each timed from its own kernel's start, fit in the time
    // the test measured around the command.
    assert!(
        guest_total < wall.as_secs_f64(),
        "{guest_total} s of boots in {wall:?}"
    );
    // The list covers what the boot reads, and a prefetch reads it whole.
    let rec = runs.iter().find(|r| variant(r) == "record").unwrap();
    let list = rec["extra"]["list_bytes"].as_u64().unwrap();
    assert!(list >= BOOT_READS_AT_LEAST, "{rec}");
    for r in runs
        .iter()
        .filter(|r| ["before+disk-order", "relayout"].contains(&variant(r)))
    {
        assert_eq!(r["extra"]["prefetch_bytes"].as_u64().unwrap(), list, "{r}");
    }
    // The relayout rewrote every listed file (at least the bytes the boot
    // reads of them), and said what it changed on disk.
    let rl = &runs
        .iter()
        .find(|r| variant(r) == "relayout-write")
        .unwrap()["extra"]["relayout"];
    assert!(rl["files"].as_u64().unwrap() >= 200, "{rl}");
    assert!(rl["bytes"].as_u64().unwrap() >= BOOT_READS_AT_LEAST, "{rl}");
    assert!(rl["fragments_after"].as_u64().unwrap() > 0, "{rl}");
    // None reads no list; the prefetching boots' config says what ran.
    for r in runs.iter().filter(|r| variant(r) == "none") {
        assert!(r["extra"]["prefetch_bytes"].is_null(), "{r}");
        assert_eq!(r["config"]["init"], serde_json::json!([]), "{r}");
    }

    // Boots whose prefetch goes wrong still reach the marker.
    for v in ["safety-missing", "safety-corrupt", "safety-kill"] {
        let r = runs.iter().find(|r| variant(r) == v).unwrap();
        assert_eq!(r["outcome"], "ok", "{r}");
        assert!(r["extra"]["safety"].is_string(), "{r}");
        assert!(
            r["extra"]["read_bytes"].as_u64().unwrap() >= BOOT_READS_AT_LEAST,
            "{r}"
        );
    }
    // Phone storage: the root disk on the eMMC model (calibrated first by
    // fio inside the guest), the boot faulting its pages in, the boot
    // disk's scheduler as a variant's axis, and the safety boots of a
    // splash on the kernel's command line and of a helper killed after
    // it switched the scheduler.
    let (e, _) = boot(
        &guest,
        &db,
        &[
            "--disk",
            "emmc",
            "--workload",
            "faults",
            "--boots",
            "1",
            "--warmup-boots",
            "0",
            "--variants",
            "none@bfq,idle@bfq,safety-splash,safety-kill-sched",
            "--explain",
        ],
    );
    let cal: Value = serde_json::from_str(
        &std::fs::read_to_string(guest.join("calibration-emmc.json")).unwrap(),
    )
    .unwrap();
    let rows = cal["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{cal}");
    for r in rows {
        // fio in the guest against the profile: the table's ratio is what
        // fio measured, not a number the model printed (docs/boot.md has
        // the table).
        let (model, path, measured) = (
            r["model"].as_f64().unwrap(),
            r["path_only"].as_f64().unwrap(),
            r["measured"].as_f64().unwrap(),
        );
        let ratio = measured / model;
        assert!((ratio - r["ratio"].as_f64().unwrap()).abs() < 1e-9, "{r}");
        // The model must act, and the table must say how well: a request
        // costs at least most of the profile's service time (a model that
        // delayed nothing would measure the path alone, which is below it
        // wherever the model has work to do) and no more than the path and
        // the profile with TCG's spread on both (a model delaying in the
        // wrong unit, or every request many times, is beyond it). The
        // lower bound is the profile's alone, not the path's too: the path
        // is measured on one boot and the row on another, and TCG's path
        // varies between them (a 4 KiB read's from 332 to 470 us here,
        // docs/boot.md; a fresh clone's path boot 734 us and its
        // calibration boot's path 1021; CI's host, beside the board's
        // guest, 945 us on the path boot and 541 on the next, where the
        // model, with a path slower than its 401 us to take off, delayed
        // nothing and rightly named the row not modelled). Nearer than
        // that is TCG's to give: within 5 % is what `ok` says, and a row
        // that is not is named in `not_modelled` (both asserted below).
        // As times per request (a rate's is its inverse):
        let latency = r["unit"] == "us";
        let time = |v: f64| if latency { v } else { 1.0 / v };
        let (t_model, t_path, t_meas) = (time(model), time(path), time(measured));
        assert!(
            t_meas >= 0.75 * t_model && t_meas <= 2.0 * (t_path + t_model),
            "{r}"
        );
        assert_eq!(r["ok"], (ratio - 1.0).abs() <= 0.05, "{r}");
        if r["ok"] == false {
            let named = cal["not_modelled"].as_array().unwrap().iter().any(|n| {
                n.as_str()
                    .is_some_and(|n| n.starts_with(r["measure"].as_str().unwrap()))
            });
            assert!(named, "{cal}");
        }
    }
    let runs = e["runs"].as_array().unwrap();
    for v in ["none@bfq", "idle@bfq", "safety-splash", "safety-kill-sched"] {
        let r = runs.iter().find(|r| variant(r) == v).unwrap();
        assert_eq!(r["outcome"], "ok", "{r}");
        let x = &r["extra"];
        // The model served what the guest's kernel read (its own count,
        // from the host's side), and the guest's queue left the scheduler
        // an eMMC's 128 requests to order.
        let ds = x["read_bytes"].as_u64().unwrap();
        let model = x["model"]["read_bytes"].as_u64().unwrap();
        assert!(
            model >= ds * 95 / 100 && model <= ds + (ds / 10).max(16 << 20),
            "model {model} diskstats {ds}: {r}"
        );
        assert_eq!(x["model"]["max_queue_depth"].as_u64(), Some(1), "{r}");
        assert_eq!(x["nr_requests"].as_u64(), Some(128), "{r}");
        // The boot's own account of waiting for I/O after init: some for
        // a boot that reads its pages itself; a --before prefetch
        // (safety-splash) has read them all before init.
        let psi = x["psi_io_some_share"].as_f64().unwrap();
        assert!((0.0..1.0).contains(&psi), "{r}");
        if ["none@bfq", "idle@bfq"].contains(&v) {
            assert!(psi > 0.05, "{r}");
        }
        for phase in ["services", "zygote", "server", "scan"] {
            assert!(x["phases"][phase]["end_s"].as_f64().unwrap() > 0.0, "{r}");
        }
    }
    let idle = runs.iter().find(|r| variant(r) == "idle@bfq").unwrap();
    assert_eq!(idle["scheduler"], "bfq", "{idle}");
    let x = &idle["extra"];
    assert!(
        x["prefetch_submit_s"].as_f64().unwrap() <= x["prefetch_s"].as_f64().unwrap(),
        "{idle}"
    );
    assert_eq!(x["prefetch_wait"], "complete", "{idle}");
    let killed = runs
        .iter()
        .find(|r| variant(r) == "safety-kill-sched")
        .unwrap();
    assert_eq!(
        killed["extra"]["scheduler_at_end"]
            .as_str()
            .map(|s| s.contains("[none]")),
        Some(false),
        "{killed}"
    );
    // The kernel resets nr_requests when the scheduler switches: what the
    // helper's supervisor restored includes it.
    assert_eq!(
        killed["extra"]["nr_requests_at_end"].as_u64(),
        Some(128),
        "{killed}"
    );

    // --explain: each variant but the safety boots once more under iolab
    // explain in the guest, stored apart. Without a prefetch the boot's
    // faults wait for their own reads; the time its processes spent in
    // D-state waiting for I/O (explain's sum over tasks, from switch-out
    // stacks) covers the guest kernel's own PSI io `some` time (at most
    // the union of those waits: PSI weighs each CPU's stall by its busy
    // time) over the traced workload of the same boot.
    for v in ["none@bfq", "idle@bfq"] {
        let r = runs
            .iter()
            .find(|r| variant(r) == format!("explain:{v}"))
            .unwrap_or_else(|| panic!("no explained {v} boot"));
        assert_eq!(r["outcome"], "ok", "{r}");
        let x = &r["extra"]["explain"];
        assert!(x["tasks"].as_u64().unwrap() > 4, "{r}");
        assert!(
            x["processes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["comm"] == "androidboot"),
            "{r}"
        );
    }
    assert!(!runs
        .iter()
        .any(|r| variant(r).starts_with("explain:safety")));
    let plain = runs
        .iter()
        .find(|r| variant(r) == "explain:none@bfq")
        .unwrap();
    let x = &plain["extra"];
    let causes = x["explain"]["causes"].as_array().unwrap();
    assert!(
        causes.iter().any(|c| c["cause"] == "page-cache read I/O"
            && c["stack"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f == "filemap_fault")),
        "{plain}"
    );
    // Over the traced workload only: from init to the marker PSI also
    // counts explain's own start (iolab's pages read from the throttled
    // disk), a wait of a process explain does not follow.
    let psi_some = x["psi_io_some_traced_s"].as_f64().unwrap();
    let d_io = x["explain"]["d_io_s"].as_f64().unwrap();
    eprintln!("explained boot: PSI io some over the workload {psi_some:.2}s, explain's D-state I/O {d_io:.2}s");
    assert!(
        psi_some > 0.5 && d_io >= 0.9 * psi_some,
        "PSI io some {psi_some:.2}s, explain's D-state I/O {d_io:.2}s: {plain}"
    );

    // Nothing of iolab's is left beside the guest: its copies of the
    // image and its work directories are gone.
    let left: Vec<String> = std::fs::read_dir(&guest)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("iolab-boot-") || n.starts_with("root-recorded-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// qemu running a board: killed (its process group) when dropped.
struct Board(std::process::Child);

impl Drop for Board {
    fn drop(&mut self) {
        let pgid = rustix::process::Pid::from_child(&self.0)
            .as_raw_nonzero()
            .get();
        // SAFETY: kill(2) of the process group this test made.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// `iolab boot --ssh` against the Debian guest with sshd, as a stand-in
/// for a board: iolab reboots it, rides out the dropped link, and every
/// boot it stores is a new one (the kernel's boot_id changed, and the
/// board's uptime when read is no longer than the host's clock ran since
/// the reboot was asked), recorded first and then prefetched.
#[test]
fn over_ssh_a_board_boots_through_its_reboots() {
    if !iolab_testkit::root_or_skip(
        "over_ssh_a_board_boots_through_its_reboots",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    if !have("qemu-system-x86_64") || !have("apt-get") || !have("ssh") {
        iolab_testkit::skip(
            "over_ssh_a_board_boots_through_its_reboots",
            "needs qemu-system-x86_64, ssh and Debian's archive (apt-get install qemu-system-x86 openssh-client)",
        );
        return;
    }
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    let guest = work.path().join("board");
    build_guest(&guest, &["--ssh"]);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let console = std::fs::File::create(work.path().join("console.log")).unwrap();
    let _board = Board(
        std::os::unix::process::CommandExt::process_group(
            Command::new("qemu-system-x86_64")
                .args([
                    "-accel",
                    "tcg",
                    "-m",
                    "1024",
                    "-smp",
                    "1",
                    "-nographic",
                    "-kernel",
                ])
                .arg(guest.join("vmlinuz"))
                .arg("-initrd")
                .arg(guest.join("initramfs.cpio.gz"))
                .args(["-append", "console=ttyS0 panic=-1 quiet", "-drive"])
                .arg(format!(
                    "file={},format=raw,if=virtio,snapshot=on,throttling.bps-total=41943040",
                    guest.join("root.img").display()
                ))
                .arg("-nic")
                .arg(format!(
                    "user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:{port}-:22"
                ))
                .stdin(std::process::Stdio::null())
                .stdout(console.try_clone().unwrap())
                .stderr(console),
            0,
        )
        .spawn()
        .unwrap(),
    );
    let key = guest.join("id_ed25519");
    let ssh_opts = [
        "StrictHostKeyChecking=no",
        "UserKnownHostsFile=/dev/null",
        "ConnectTimeout=5",
    ];
    // The board's first boot, before iolab is asked anything.
    let t0 = Instant::now();
    loop {
        let mut c = Command::new("ssh");
        c.args(["-o", "BatchMode=yes", "-p", &port.to_string(), "-i"])
            .arg(&key);
        for o in ssh_opts {
            c.args(["-o", o]);
        }
        if c.args(["root@127.0.0.1", "true"])
            .output()
            .unwrap()
            .status
            .success()
        {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(300),
            "the board never answered ssh"
        );
        std::thread::sleep(Duration::from_secs(2));
    }
    let db = work.path().join("results.db");
    let mut cmd = iolab();
    cmd.args([
        "boot",
        "--ssh",
        "root@127.0.0.1",
        "--ssh-port",
        &port.to_string(),
        "--ssh-identity",
    ])
    .arg(&key);
    for o in ssh_opts {
        cmd.args(["--ssh-option", o]);
    }
    let out = cmd
        .args([
            "--boots",
            "1",
            "--warmup-boots",
            "0",
            "--variants",
            "background",
            "--timeout",
            "300",
            "--db",
        ])
        .arg(&db)
        .output()
        .unwrap();
    let console = std::fs::read_to_string(work.path().join("console.log")).unwrap_or_default();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        console
            .lines()
            .rev()
            .take(30)
            .collect::<Vec<_>>()
            .join("\n")
    );
    let e = export_last(&db);
    let runs = e["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "record, background: {runs:?}");
    let mut ids = std::collections::BTreeSet::new();
    for r in runs {
        assert_eq!(r["outcome"], "ok", "{r}");
        let rb = &r["extra"]["reboot"];
        assert_ne!(rb["boot_id_before"], rb["boot_id_after"], "{r}");
        assert!(
            ids.insert(rb["boot_id_after"].as_str().unwrap().to_string()),
            "{r}"
        );
        let up = rb["uptime_at_read_s"].as_f64().unwrap();
        let host = rb["host_since_reboot_s"].as_f64().unwrap();
        assert!(up <= host + 0.5, "{r}");
        // The boot's own time is within its uptime at the read.
        assert!(r["duration_ns"].as_f64().unwrap() / 1e9 <= up, "{r}");
        assert!(r["extra"]["read_bytes"].as_u64().unwrap() > 10 << 20, "{r}");
    }
    let list = runs.iter().find(|r| variant(r) == "record").unwrap()["extra"]["list_bytes"]
        .as_u64()
        .unwrap();
    let bg = runs.iter().find(|r| variant(r) == "background").unwrap();
    assert_eq!(
        bg["extra"]["prefetch_bytes"].as_u64().unwrap(),
        list,
        "{bg}"
    );
}
