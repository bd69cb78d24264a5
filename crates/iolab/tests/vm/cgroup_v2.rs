//! A cgroup-v2-only host, as Fedora, Ubuntu since 21.10, Debian since 11
//! and Arch boot: a qemu guest (scripts/guest/, Debian's kernel) that
//! mounts only the unified hierarchy, with /var/tmp on a disk and FUSE as
//! a module. The commands a new user runs first, each with no lab size and
//! no backend given (scripts/guest/scenarios/defaults.sh, its `ci` list:
//! bench/defaults_table.sh runs all of them, demo and a recipe too, on
//! this host and in the guest): the lab comes
//! up on the device model by itself at its default 4 GiB (which the model
//! once could not serve: issue 45), every command exits 0, and what the
//! experiments stored is checked against the model's and the kernel's own
//! counters; nothing is left behind.

use std::path::Path;

use crate::guest_env::read;
use crate::lab_env::have;
use serde_json::Value;

fn json(dir: &Path, f: &str) -> Value {
    serde_json::from_str(&read(dir, f)).unwrap_or_else(|e| panic!("{f}: {e}"))
}

/// The kernel's MAJOR.MINOR, from the scenario's `host` file.
fn kernel(host: &str) -> (u32, u32) {
    let release = host
        .lines()
        .find_map(|l| l.strip_prefix("kernel "))
        .unwrap();
    let mut it = release.split(['.', '-']).map(|p| p.parse().unwrap_or(0));
    (it.next().unwrap(), it.next().unwrap())
}

#[test]
fn a_cgroup_v2_only_host_runs_every_command_on_its_defaults() {
    let test = "a_cgroup_v2_only_host_runs_every_command_on_its_defaults";
    if !iolab_testkit::root_or_skip(test, "it boots a guest with loop devices and mounts") {
        return;
    }
    if !have("qemu-system-x86_64") || !have("apt-get") {
        return iolab_testkit::skip(
            test,
            "needs qemu-system-x86_64 and Debian's archive for the guest's kernel (apt-get install qemu-system-x86)",
        );
    }
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    // 6 GiB (sparse) for /var/tmp's 4 GiB lab image; 4 GiB of RAM, as a
    // desktop has at least (sweep --max's 1 GiB tmpfs lab needs twice it).
    let out = crate::guest_env::run_scenario_with(
        work.path(),
        "v2host",
        &[],
        &[
            ("IOLAB_GUEST_ARGS", "ci"),
            ("IOLAB_GUEST_DISK_SIZE", "6G"),
            ("IOLAB_GUEST_MEM", "4096"),
            ("IOLAB_GUEST_TIMEOUT", "2400"),
        ],
    );
    let table = read(&out, "table");
    eprintln!("{table}");

    // The host is what those distributions are: cgroup2 alone, no blkio.
    let host = read(&out, "host");
    assert!(
        host.contains("cgroup mounts: /sys/fs/cgroup cgroup2 \n"),
        "{host}"
    );
    assert!(host.contains("blkio v1: ls:"), "{host}");

    // Every command exits 0.
    for name in [
        "lab-up",
        "load-on-lab",
        "lab-down",
        "startup",
        "in-place",
        "sweep",
        "sweep-max",
    ] {
        assert_eq!(
            read(&out, &format!("{name}.rc")).trim(),
            "0",
            "{name}:\n{}",
            read(&out, &format!("{name}.err"))
        );
    }

    // The lab picked the model by itself, at the default size, at --bw.
    let lab = json(&out, "lab-status.json");
    assert_eq!(lab["backend"], "model", "{lab}");
    let reason = lab["backend_reason"].as_str().unwrap();
    assert!(reason.contains("no cgroup-v1 blkio hierarchy"), "{reason}");
    assert_eq!(lab["size_bytes"], 4u64 << 30, "{lab}");
    assert_eq!(lab["model"]["read_bw"], 40u64 << 20, "{lab}");
    // Before 6.2 the kernel has no per-device dirty limit in bytes: the lab
    // says what it could not model instead of failing (Debian 12: 6.1).
    let warnings = lab["warnings"].to_string();
    if kernel(&host) < (6, 2) {
        assert!(warnings.contains("max_ratio"), "{lab}");
    } else {
        assert_eq!(lab["warnings"], Value::Null, "{lab}");
    }
    // The load's I/O reached the model: the device's own counters.
    let after = json(&out, "lab-status-after-load.json");
    let load = json(&out, "load-on-lab.out");
    let moved: u64 = ["read", "write"]
        .iter()
        .map(|d| load["jobs"][0][d]["io_bytes"].as_u64().unwrap())
        .sum();
    let served = after["model_stats"]["read_bytes"].as_u64().unwrap()
        + after["model_stats"]["write_bytes"].as_u64().unwrap();
    assert!(moved > 0, "{load}");
    assert!(
        served >= moved,
        "the model served {served} bytes, the load's O_DIRECT I/O was {moved}"
    );
    assert_eq!(after["model_stats"]["errors"], 0, "{after}");

    // The startups stored their starts, each cold from the device.
    for (name, starts) in [("startup", 4), ("in-place", 4)] {
        let e = json(&out, &format!("{name}.json"));
        let runs = e["runs"].as_array().unwrap();
        assert_eq!(runs.len(), starts, "{name}: {e}");
        for r in runs {
            assert_eq!(r["outcome"], "ok", "{name}: {r}");
            assert!(
                r["extra"]["device_read_bytes"].as_u64().unwrap() >= 24 << 20,
                "{name}: {r}"
            );
        }
    }
    let place = json(&out, "startup.json")["experiment"]["config"]["place"].to_string();
    assert!(place.contains("device model"), "{place}");

    // Nothing left: queues, bdi limits, trace instances, mounts, groups.
    assert_eq!(read(&out, "state-after"), read(&out, "state-before"));
    let groups = read(&out, "cgroups-after");
    assert!(!groups.contains("iolab"), "{groups}");
}
