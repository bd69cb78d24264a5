//! `startup --in` on the stacks this machine's kernel cannot build (no
//! device-mapper, f2fs or partitions here): in a qemu guest booted from
//! Debian's kernel (scripts/guest/), on a virtio disk partitioned like a
//! real one. A laptop's home (ext4 on dm-crypt on dm-linear on vda1) and a
//! phone's /data (f2fs on dm-linear on vda2): the stack is resolved to the
//! disk, the scheduler switched there during the run (sampled from sysfs
//! by the scenario) and restored after, the scratch directory gone; a
//! SIGKILL mid-run is restored by the next run with nothing stored lost;
//! tmpfs and overlay are refused with exit 2.

use std::path::Path;

use crate::guest_env::read;
use crate::lab_env::have;
use serde_json::Value;

fn json(dir: &Path, f: &str) -> Value {
    serde_json::from_str(&read(dir, f)).unwrap_or_else(|e| panic!("{f}: {e}"))
}

/// The scenario's experiment: every start a sample, stored with its stack.
fn check_in_place(out: &Path, name: &str, stack: &str) {
    let err = read(out, &format!("{name}.err"));
    assert_eq!(read(out, &format!("{name}.rc")).trim(), "0", "{err}");
    // The stack, printed and stored, down to the disk with its scheduler.
    // (vda's scheduler as it was before the run, which the scenario read.)
    let before = read(out, &format!("{name}.sched-before"));
    let current = before.split('[').nth(1).unwrap().split(']').next().unwrap();
    let first = err.lines().next().unwrap();
    assert_eq!(
        first,
        format!("iolab: in place: {stack} [{current}]"),
        "{err}"
    );
    let e = json(out, &format!("{name}.json"));
    let runs = e["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 8, "{err}");
    for r in runs {
        assert_eq!(r["outcome"], "ok", "{r}");
        // The app's 24 MiB came from the disk under the stack, cold.
        assert!(
            r["extra"]["device_read_bytes"].as_u64().unwrap() >= 24 << 20,
            "{r}"
        );
        if r["workload"] == "1r" {
            assert!(r["background"]["read_bytes"].as_u64().unwrap() > 0, "{r}");
        }
    }
    let env = e["experiment"]["environment"].to_string();
    assert!(env.contains("\"name\":\"vda\""), "{env}");
    // The scheduler under test was on vda while the experiment ran, each
    // in turn, and vda's own is back after.
    let seen = read(out, &format!("{name}.sched-seen"));
    for s in ["[mq-deadline]", "[bfq]"] {
        assert!(seen.contains(s), "{name}: {s} never seen on vda:\n{seen}");
    }
    assert_eq!(read(out, &format!("{name}.sched-after")), before);
    // Nothing of iolab's is left in the directory.
    let ls = read(out, &format!("{name}.ls-after"));
    assert!(!ls.contains("iolab"), "{ls}");
}

#[test]
fn in_place_on_dm_crypt_and_f2fs_stacks_in_a_guest() {
    if !iolab_testkit::root_or_skip(
        "in_place_on_dm_crypt_and_f2fs_stacks_in_a_guest",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    if !have("qemu-system-x86_64") || !have("apt-get") {
        iolab_testkit::skip(
            "in_place_on_dm_crypt_and_f2fs_stacks_in_a_guest",
            "needs qemu-system-x86_64 and Debian's archive for the guest's kernel (apt-get install qemu-system-x86)",
        );
        return;
    }
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    let out = crate::guest_env::run_scenario(work.path(), "stacks", &[]);

    check_in_place(
        &out,
        "laptop",
        "/home (ext4) → dm-1 (crypt crypt-home) → dm-0 (linear lv-home) → vda1 → vda",
    );
    check_in_place(
        &out,
        "phone",
        "/data (f2fs) → dm-2 (linear userdata) → vda2 → vda",
    );

    // On Debian's kernel, whose delay accounting is sound, the main
    // thread's D-state I/O from iolab's trace agrees with the kernel's
    // blkio delay of the same thread over the same span (taskstats),
    // within 10 % or 5 ms, on starts with at least 100 ms of it.
    assert_eq!(
        read(&out, "delayacct.rc").trim(),
        "0",
        "{}",
        read(&out, "delayacct.err")
    );
    let runs = json(&out, "delayacct.json")["runs"]
        .as_array()
        .unwrap()
        .clone();
    let mut checked = 0;
    for r in &runs {
        let d = &r["extra"]["observed"]["explain"]["main_thread"]["delayacct"];
        let traced = d["traced_io_ns"].as_f64().unwrap();
        let kernel = d["blkio_delay_ns"].as_f64().unwrap();
        eprintln!("guest: traced D-state I/O {traced} ns, delayacct blkio {kernel} ns");
        assert_eq!(d["credible"], true, "{d}");
        if traced >= 100e6 {
            checked += 1;
            assert!(
                (traced - kernel).abs() <= (0.1 * kernel).max(5e6),
                "traced {traced} ns against the kernel's {kernel} ns: {d}"
            );
        }
    }
    assert!(
        checked >= 1,
        "no start with 100 ms of D-state I/O: {runs:?}"
    );

    // SIGKILLed mid-load: the scheduler stayed switched and the scratch
    // directory stayed, until the next run (`iolab restore`) put back
    // exactly the state before; every start it had reported is stored.
    assert!(read(&out, "fault.sched-at-kill").contains("[bfq]"));
    assert!(read(&out, "fault.ls-at-kill").contains("iolab-scratch-"));
    assert_eq!(read(&out, "fault.restore-rc").trim(), "0");
    let restore = read(&out, "fault.restore");
    assert!(restore.contains("removed scratch directory"), "{restore}");
    assert_eq!(
        read(&out, "fault.state-after"),
        read(&out, "fault.state-before")
    );
    assert!(!read(&out, "fault.ls-after").contains("iolab"));
    let reported: usize = read(&out, "fault.lines-at-kill").trim().parse().unwrap();
    let stored = json(&out, "fault.json")["runs"].as_array().unwrap().len();
    assert!(
        reported >= 4 && stored >= reported,
        "{stored} stored of {reported} reported"
    );

    // No block device under tmpfs or overlay: refused, exit 2.
    for fs in ["tmpfs", "overlay"] {
        assert_eq!(read(&out, &format!("{fs}.rc")).trim(), "2");
        let err = read(&out, &format!("{fs}.err"));
        assert!(err.contains("which no block device holds"), "{err}");
    }
}
