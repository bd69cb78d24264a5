//! `zonemode=zbd` against the installed fio 3.33 running the same jobs:
//! on emulated zones of a regular file here (fio's ZBD_NONE model: the
//! same offsets, notes and zone-reset accounting), and on a zoned
//! null_blk in the qemu guest (scripts/guest/scenarios/zbd.sh), a device
//! as strict as a host-managed drive: it fails any write off its write
//! pointer or beyond its 4 open zones, so a job that ends without an
//! error placed every write where the device wanted it; the device's own
//! zone report and diskstats are the outside truth.
#![allow(clippy::unwrap_used)]

mod guest_env;
mod lab_env;
mod load_env;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use guest_env::read;
use load_env::{fio_or_skip, stderr, Env};
use serde_json::Value;

fn fio(dir: &Path, args: &[&str]) -> Output {
    Command::new("fio")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A write_iolog's I/O lines: (action, offset, length).
fn iolog(p: &Path) -> Vec<(String, u64, u64)> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 5).then(|| {
                (
                    f[2].to_string(),
                    f[3].parse().unwrap(),
                    f[4].parse().unwrap(),
                )
            })
        })
        .collect()
}

/// Replays `writes` over fresh zones of `zone` bytes: writes not at their
/// zone's write pointer, zone resets (a write at a full zone's start), and
/// the most zones open (written, not full) at once.
fn zone_walk(writes: &[(u64, u64)], zone: u64) -> (usize, usize, usize) {
    let mut wp: BTreeMap<u64, u64> = BTreeMap::new();
    let (mut off_wp, mut resets, mut most) = (0, 0, 0);
    for &(o, l) in writes {
        let z = o / zone;
        let w = *wp.get(&z).unwrap_or(&(z * zone));
        if o != w {
            if o == z * zone && w >= (z + 1) * zone {
                resets += 1;
            } else {
                off_wp += 1;
            }
        }
        wp.insert(z, o + l);
        let open = wp
            .iter()
            .filter(|(z, w)| **w > **z * zone && **w < (**z + 1) * zone)
            .count();
        most = most.max(open);
    }
    (off_wp, resets, most)
}

/// "; N zone resets" of a normal report's write line.
fn zone_resets(normal: &str) -> u64 {
    let line = normal
        .lines()
        .find(|l| l.trim_start().starts_with("write: IOPS="))
        .unwrap_or_else(|| panic!("no write line in {normal}"));
    let n = line
        .rsplit("; ")
        .next()
        .and_then(|s| s.strip_suffix(" zone resets"))
        .unwrap_or_else(|| panic!("no zone resets in {line}"));
    n.parse().unwrap()
}

/// Sequential writes over emulated zones from an offset inside a zone:
/// both tools move the region to zone boundaries with the same notes and
/// write the same offsets; random writes under max_open_zones=2 with
/// three times the region to write go only to write pointers, never have
/// more than 2 zones open, and reset full zones, in both.
#[test]
fn emulated_zones_place_writes_as_fio_does() {
    if !fio_or_skip("emulated_zones_place_writes_as_fio_does") {
        return;
    }
    let env = Env::new();
    let d = env.dir();
    for f in ["fio.img", "iolab.img"] {
        std::fs::File::create(d.join(f))
            .unwrap()
            .set_len(16 << 20)
            .unwrap();
    }
    let seq = |file: &str, log: &str| -> Vec<String> {
        [
            "--name=w",
            &format!("--filename={file}"),
            "--size=8M",
            "--offset=1536k",
            "--rw=write",
            "--bs=256k",
            "--zonemode=zbd",
            "--zonesize=1M",
            "--direct=1",
            &format!("--write_iolog={log}"),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let args = seq("fio.img", "fio.log");
    let f = fio(d, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(f.status.success(), "fio: {}", stderr(&f));
    let args = seq("iolab.img", "iolab.log");
    let i = env
        .cmd(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .current_dir(d)
        .output()
        .unwrap();
    assert!(i.status.success(), "iolab: {}", stderr(&i));
    // fio says it on stdout before the report (inside a JSON document's
    // stream, breaking it); iolab in its notes, after a normal report or
    // as the JSON's "iolab notes".
    for note in [
        ": rounded up offset from 1572864 to 2097152",
        ": rounded down io_size from 7864320 to 7340032",
    ] {
        assert!(text(&f).contains(note), "fio: {}", text(&f));
        assert!(text(&i).contains(note), "iolab: {}", text(&i));
    }
    let (fl, il) = (iolog(&d.join("fio.log")), iolog(&d.join("iolab.log")));
    assert_eq!(fl.len(), 28, "{fl:?}");
    assert_eq!(fl, il);
    assert_eq!(zone_resets(&text(&f)), 0);
    assert_eq!(zone_resets(&text(&i)), 0);

    let rand = |file: &str, log: &str| -> Vec<String> {
        [
            "--name=r",
            &format!("--filename={file}"),
            "--size=8M",
            "--io_size=24M",
            "--rw=randwrite",
            "--bs=64k",
            "--zonemode=zbd",
            "--zonesize=1M",
            "--max_open_zones=2",
            "--direct=1",
            &format!("--write_iolog={log}"),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    for (tool, log) in [("fio", "fio.r.log"), ("iolab", "iolab.r.log")] {
        let args = rand(&format!("{tool}.img"), log);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = if tool == "fio" {
            fio(d, &args)
        } else {
            env.cmd(&args).current_dir(d).output().unwrap()
        };
        assert!(out.status.success(), "{tool}: {}", stderr(&out));
        let writes: Vec<(u64, u64)> = iolog(&d.join(log))
            .into_iter()
            .filter(|w| w.0 == "write")
            .map(|w| (w.1, w.2))
            .collect();
        assert_eq!(writes.len(), 384, "{tool}");
        let (off_wp, resets, most) = zone_walk(&writes, 1 << 20);
        assert_eq!(off_wp, 0, "{tool}: writes off the write pointer");
        assert!(most <= 2, "{tool}: {most} zones open at once");
        // 24 MiB into 8 zones of 1 MiB: at least 16 full zones reset.
        assert!(resets >= 16, "{tool}: {resets} resets");
        assert_eq!(
            zone_resets(&text(&out)),
            iolab_sys::cast::u64_of(resets),
            "{tool}"
        );
    }
}

/// A reader of fresh emulated zones finds nothing below any write pointer
/// and moves nothing, and both tools leave its entry out of the normal
/// report; a mixed job's first I/O is a write; trims of written zones are
/// zone resets; sizes count in zones (`size=3z`); without zonesize a file
/// is refused, as fio refuses it.
#[test]
fn emulated_zones_read_trim_and_refuse_as_fio_does() {
    if !fio_or_skip("emulated_zones_read_trim_and_refuse_as_fio_does") {
        return;
    }
    let env = Env::new();
    let d = env.dir();
    let file = d.join("z.img");
    std::fs::File::create(&file)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let fname = format!("--filename={}", file.display());
    let run = |tool: &str, args: &[&str]| -> Output {
        if tool == "fio" {
            fio(d, args)
        } else {
            env.cmd(args).current_dir(d).output().unwrap()
        }
    };
    for tool in ["fio", "iolab"] {
        let read = run(
            tool,
            &[
                "--name=rd",
                &fname,
                "--size=8M",
                "--rw=read",
                "--bs=64k",
                "--zonemode=zbd",
                "--zonesize=1M",
                "--output-format=json",
            ],
        );
        assert!(read.status.success(), "{tool}: {}", stderr(&read));
        let j: Value = serde_json::from_slice(&read.stdout).unwrap();
        assert_eq!(j["jobs"][0]["read"]["io_bytes"], 0, "{tool}");
        let normal = run(
            tool,
            &[
                "--name=rd",
                &fname,
                "--size=8M",
                "--rw=read",
                "--bs=64k",
                "--zonemode=zbd",
                "--zonesize=1M",
            ],
        );
        assert!(
            !text(&normal).contains("rd: (groupid"),
            "{tool}: {}",
            text(&normal)
        );

        // Only reads drawn (rwmixread=100), but nothing written yet: the
        // first becomes a write (fio's zbd_adjust_ddir).
        let mixed = run(
            tool,
            &[
                "--name=m",
                &fname,
                "--size=8M",
                "--rw=randrw",
                "--rwmixread=100",
                "--bs=64k",
                "--zonemode=zbd",
                "--zonesize=1M",
                "--direct=1",
                "--number_ios=1",
                "--output-format=json",
            ],
        );
        assert!(mixed.status.success(), "{tool}: {}", stderr(&mixed));
        let j: Value = serde_json::from_slice(&mixed.stdout).unwrap();
        assert_eq!(j["jobs"][0]["write"]["total_ios"], 1, "{tool}: {j}");

        // Four zones written, then trimmed: four zone resets.
        let job = d.join(format!("{tool}.fio"));
        std::fs::write(
            &job,
            format!(
                "[global]\nzonemode=zbd\nzonesize=1M\ndirect=1\nfilename={}\nsize=4M\n[w]\nrw=write\nbs=64k\n[t]\nstonewall\nrw=trim\nbs=1M\n",
                file.display()
            ),
        )
        .unwrap();
        let trim = run(tool, &[job.to_str().unwrap()]);
        assert!(trim.status.success(), "{tool}: {}", stderr(&trim));
        assert!(
            text(&trim).contains("trim: IOPS=") && text(&trim).contains("(4096KiB/"),
            "{tool}: {}",
            text(&trim)
        );

        // Sizes in zones: 3 zones from the second.
        let log = d.join(format!("{tool}.units.log"));
        let units = run(
            tool,
            &[
                "--name=u",
                &fname,
                "--size=3z",
                "--offset=1z",
                "--rw=write",
                "--bs=256k",
                "--zonemode=zbd",
                "--zonesize=1M",
                "--direct=1",
                &format!("--write_iolog={}", log.display()),
            ],
        );
        assert!(units.status.success(), "{tool}: {}", stderr(&units));
        let w = iolog(&log);
        assert_eq!(w.len(), 12, "{tool}: {w:?}");
        assert_eq!(
            (w[0].1, w[11].1),
            (1 << 20, (4 << 20) - (256 << 10)),
            "{tool}"
        );

        let refused = run(
            tool,
            &[
                "--name=nz",
                &fname,
                "--size=8M",
                "--rw=write",
                "--zonemode=zbd",
            ],
        );
        assert!(!refused.status.success(), "{tool}");
        let all = format!("{}{}", text(&refused), stderr(&refused));
        assert!(
            all.contains("Specifying the zone size is mandatory for regular file/block device with --zonemode=zbd"),
            "{tool}: {all}"
        );
        if tool == "iolab" {
            assert_eq!(refused.status.code(), Some(2), "{all}");
        }
    }
}

/// `blkzone report` lines: (start, write pointer within the zone,
/// condition), in sectors.
fn zones(report: &str) -> Vec<(u64, u64, String)> {
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    report
        .lines()
        .map(|l| {
            let field = |k: &str| {
                let at = l.find(k).unwrap() + k.len();
                l[at..]
                    .trim_start()
                    .split([',', ' '])
                    .next()
                    .unwrap()
                    .to_string()
            };
            let cond = l.split("zcond:").nth(1).unwrap();
            let cond = cond.split('(').nth(1).unwrap().split(')').next().unwrap();
            (hex(&field("start:")), hex(&field("wptr")), cond.to_string())
        })
        .collect()
}

/// Sectors read and written on the device during a job (diskstats before
/// and after).
fn sectors(ds: &str) -> (u64, u64) {
    let rows: Vec<Vec<u64>> = ds
        .lines()
        .map(|l| {
            l.split_whitespace()
                .skip(3)
                .map(|v| v.parse().unwrap())
                .collect()
        })
        .collect();
    (rows[1][2] - rows[0][2], rows[1][6] - rows[0][6])
}

/// Each job of the guest scenario with fio and with iolab on a strict
/// zoned null_blk: the same outcome, bytes the device counted, and zones.
#[test]
fn zoned_null_blk_in_a_guest_takes_what_fio_writes_and_iolab_writes() {
    let name = "zoned_null_blk_in_a_guest_takes_what_fio_writes_and_iolab_writes";
    if !iolab_testkit::root_or_skip(name, "the guest's image is built with root's tools") {
        return;
    }
    if !lab_env::have("qemu-system-x86_64") || !lab_env::have("apt-get") || !lab_env::have("fio") {
        iolab_testkit::skip(
            name,
            "needs qemu-system-x86_64, fio and Debian's archive for the guest's kernel (apt-get install qemu-system-x86 fio)",
        );
        return;
    }
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    let out = guest_env::run_scenario(work.path(), "zbd", &[("IOLAB_GUEST_FIO", "1")]);

    // The rig: host-managed, 4 open and 4 active zones at most, and a
    // write off the write pointer fails.
    let dev: Vec<String> = read(&out, "device").lines().map(String::from).collect();
    assert_eq!(dev[0], "host-managed", "{dev:?}");
    assert_eq!((dev[1].as_str(), dev[2].as_str()), ("4", "4"), "{dev:?}");
    assert_ne!(read(&out, "strict.rc").trim(), "0");
    assert!(read(&out, "strict.err").contains("Input/output error"));
    let fresh = zones(&read(&out, "zones-fresh"));
    assert_eq!(fresh.len(), 16);
    assert_eq!(fresh.iter().filter(|z| z.2 == "nw").count(), 2);

    for job in ["seq", "rand", "read", "verify", "trim", "conv"] {
        let mut moved = BTreeMap::new();
        for tool in ["fio", "iolab"] {
            let f = format!("{tool}.{job}");
            assert_eq!(
                read(&out, &format!("{f}.rc")).trim(),
                "0",
                "{f}: {}",
                read(&out, &format!("{f}.err"))
            );
            let doc: Value = serde_json::from_str(&read(&out, &format!("{f}.json"))).unwrap();
            let (mut r, mut w, mut t) = (0, 0, 0);
            for j in doc["jobs"].as_array().unwrap() {
                assert_eq!(j["error"], 0, "{f}: {j}");
                r += j["read"]["io_bytes"].as_u64().unwrap();
                w += j["write"]["io_bytes"].as_u64().unwrap();
                t += j["trim"]["io_bytes"].as_u64().unwrap();
                if tool == "iolab" && job != "conv" {
                    assert!(j["zone_resets"].is_u64(), "{f}: {j}");
                }
            }
            // What the device counted is what the report says moved
            // (trims are resets: no sectors).
            let (rs, ws) = sectors(&read(&out, &format!("{f}.ds")));
            assert_eq!(
                (rs * 512, ws * 512),
                (r, w),
                "{f}: diskstats against the report"
            );
            moved.insert(tool, (r, w, t));
            // Never more than the device's 4 zones left open.
            let after = zones(&read(&out, &format!("{f}.zones")));
            let open = after.iter().filter(|z| z.2 == "oi" || z.2 == "oe").count();
            assert!(open <= 4, "{f}: {open} open zones");
        }
        assert_eq!(moved["fio"], moved["iolab"], "{job}: fio against iolab");
    }
    // Sequential writes fill every zone; both leave the same zones, after
    // the same writes.
    let seq = zones(&read(&out, "iolab.seq.zones"));
    assert!(seq.iter().all(|z| z.2 == "nw" || z.2 == "fu"), "{seq:?}");
    assert_eq!(read(&out, "fio.seq.zones"), read(&out, "iolab.seq.zones"));
    assert_eq!(
        iolog(&out.join("fio.seq.log")),
        iolog(&out.join("iolab.seq.log"))
    );
    // 192 MiB at random offsets: about an eighth lands in the two
    // conventional zones, the rest (~168 MiB) overflows the 56 MiB of
    // sequential zones ~28 times: full zones were reset along the way.
    let rand: Value = serde_json::from_str(&read(&out, "iolab.rand.json")).unwrap();
    let resets: u64 = rand["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["zone_resets"].as_u64().unwrap())
        .sum();
    assert!(resets >= 20, "{resets} zone resets for 192 MiB");
    // The verify job reset the zones that held data before writing, none
    // after, and both tools left every sequential zone full.
    let with_data = |f: &str| {
        zones(&read(&out, f))
            .iter()
            .filter(|z| z.2 != "nw" && z.1 != 0)
            .count()
    };
    let verify: Value = serde_json::from_str(&read(&out, "iolab.verify.json")).unwrap();
    assert_eq!(
        verify["jobs"][0]["zone_resets"],
        with_data("iolab.read.zones"),
        "the zones that held data before the verify job"
    );
    assert_eq!(
        read(&out, "fio.verify.zones"),
        read(&out, "iolab.verify.zones")
    );
    // Trims reset every sequential zone: all empty after, in both.
    let trim = zones(&read(&out, "iolab.trim.zones"));
    assert!(
        trim.iter()
            .all(|z| z.2 == "nw" || (z.2 == "em" && z.1 == 0)),
        "{trim:?}"
    );
    let tj: Value = serde_json::from_str(&read(&out, "iolab.trim.json")).unwrap();
    assert_eq!(
        tj["jobs"][0]["zone_resets"],
        with_data("iolab.verify.zones")
    );
    assert_eq!(with_data("iolab.verify.zones"), 14);
    assert_eq!(read(&out, "fio.trim.zones"), read(&out, "iolab.trim.zones"));
    // Random writes to sequential zones without zonemode=zbd: fio fails
    // at the device (EIO), iolab refuses before writing, exit 2.
    assert_ne!(read(&out, "fio.nozbd.rc").trim(), "0");
    assert_eq!(read(&out, "iolab.nozbd.rc").trim(), "2");
    let err = read(&out, "iolab.nozbd.err");
    assert!(
        err.contains("host-managed zoned device") && err.contains("zonemode=zbd"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}
