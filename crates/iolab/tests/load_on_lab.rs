//! A real load on a lab made by `iolab lab up`: three independent views of
//! the same I/O must agree — what `iolab load` reports, what the lab's
//! throttle allows, and what /proc/diskstats counted on the lab's device.
#![allow(clippy::unwrap_used)]

mod lab_env;

use lab_env::{kname, s, Env};
use serde_json::Value;

fn diskstat(dev: &str) -> iolab_sys::diskstats::DiskStat {
    iolab_sys::diskstats::read_device(std::path::Path::new("/proc"), dev)
        .unwrap()
        .unwrap()
}

#[test]
fn a_load_on_a_throttled_lab_agrees_with_the_throttle_and_diskstats() {
    if !iolab_testkit::root_or_skip(
        "a_load_on_a_throttled_lab_agrees_with_the_throttle_and_diskstats",
        "it makes loop devices and mounts",
    ) {
        return;
    }
    let env = Env::new("loadlab");
    let up = env.up(&[
        "--size",
        "256MiB",
        "--bw",
        "20MiB/s",
        "--scheduler",
        "mq-deadline",
    ]);
    let dev = kname(s(&up, "device"));
    let mib = (1u64 << 20) as f64;
    let want = 48u64 << 20;
    // Writing first creates the file (no layout pass), so reading it next
    // needs none either: each run's device traffic is its own.
    for rw in ["write", "read"] {
        let job = env.img.path().join(format!("{rw}.fio"));
        std::fs::write(
            &job,
            format!(
                "[{rw}]\nfilename=data\nbs=1M\ndirect=1\nsize=48M\n\
                 ioengine=psync\nrw={rw}\n"
            ),
        )
        .unwrap();
        let before = diskstat(&dev);
        let out = env
            .cmd()
            .args(["load", "--json", "--lab", &env.name])
            .arg(&job)
            .output()
            .unwrap();
        let delta = diskstat(&dev).since(&before);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let j = &v["jobs"][0][rw];

        // The load's own number: the whole file.
        assert_eq!(j["io_bytes"], want, "{rw}: {v}");
        // The throttle: 20 MiB/s within 10 %.
        let got = j["bw_bytes"].as_f64().unwrap() / mib;
        assert!(
            (got - 20.0).abs() / 20.0 < 0.10,
            "{rw} {got:.2} MiB/s on a 20 MiB/s lab"
        );
        // The device's counters: O_DIRECT bytes reach the device one for
        // one; the filesystem may add a little metadata on top.
        let dev_bytes = if rw == "read" {
            delta.read_bytes()
        } else {
            delta.write_bytes()
        };
        assert!(
            dev_bytes >= want && (dev_bytes as f64) < want as f64 * 1.05,
            "{rw}: diskstats {dev_bytes} bytes, load {want}"
        );
    }
}
