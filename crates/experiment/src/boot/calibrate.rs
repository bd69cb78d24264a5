//! Calibrating the modelled boot disk from inside the guest (disk.rs):
//! fio in the guest (`iolab.calibrate=1`: the initramfs runs
//! /opt/fio/calibrate.fio from the root image against /dev/vda, QD1 4 KiB
//! random reads, 128 KiB sequential reads and writes, and powers off).
//!
//! The first boot, on an instant model of the profile's depth, measures
//! what the path itself costs a read and a write of 4 KiB and of 128 KiB
//! (virtio, qemu, FUSE, the server, and the guest's block layer under
//! TCG): a fixed part and a part per byte for each. Then boots on the
//! profile with that taken off check each measure against what the
//! profile says; where one is off, the residual (measured − profile, a
//! line over the two sizes) is added to the path's cost and the disk is
//! booted again, at most [`ROUNDS`] times: the instant boot's per-byte
//! cost is partly hidden on the modelled disk (the server reads the
//! image while the model's time runs), so the first estimate overshoots.
//! The table shows the last boot, with the costs that boot used. A
//! measure more than 5 % off, or a path slower than the profile's own
//! service time (nothing left to take it off from: UFS's 90 µs under TCG),
//! is stated in the table as not modelled, never hidden.

use std::path::{Path, PathBuf};
use std::time::Duration;

use iolab_guard::Guard;
use iolab_model::ModelParams;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use iolab_model::server::PathCost;

use super::disk::ModelDisk;
use super::guest::{self, BootSpec};
use crate::ExperimentError;

/// How far a measure may be from the profile and still count as modelled.
pub const TOLERANCE: f64 = 0.05;

/// Most boots on the modelled disk.
pub const ROUNDS: usize = 4;

const SMALL: u64 = 4096;
const LARGE: u64 = 128 << 10;

/// One measure of the table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// `randread 4k QD1 latency`, `randwrite 4k QD1 latency`, `read 128k
    /// QD1 rate`, `write 128k QD1 rate`.
    pub measure: String,
    /// `us` or `MB/s`.
    pub unit: String,
    /// What the profile says.
    pub model: f64,
    /// What fio measured in the guest on the instant disk (the path
    /// alone) and on the modelled one.
    pub path_only: f64,
    pub measured: f64,
    /// measured / model.
    pub ratio: f64,
    /// Within [`TOLERANCE`].
    pub ok: bool,
}

/// A profile's calibration, stored in the guest's directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub profile: String,
    pub disk: ModelDisk,
    pub rows: Vec<Row>,
    /// What the path costs that the model could not take off, and why.
    pub not_modelled: Vec<String>,
    /// Boots on the modelled disk it took.
    pub model_boots: usize,
    /// fio's own output of the instant boot and of every modelled one,
    /// kept whole.
    pub fio_instant: Value,
    pub fio_model: Vec<Value>,
    /// The qemu and kernel it was measured with (a change needs a new
    /// calibration).
    pub qemu: String,
    pub kernel: String,
}

impl Calibration {
    /// Where a profile's calibration is kept.
    pub fn path(guest: &Path, profile: &str) -> PathBuf {
        guest.join(format!("calibration-{profile}.json"))
    }

    /// The stored calibration of `profile` for this guest, if one was made
    /// with the same qemu and kernel.
    pub fn load(guest: &Path, profile: &str) -> Option<Calibration> {
        let text = std::fs::read_to_string(Self::path(guest, profile)).ok()?;
        let c: Calibration = serde_json::from_str(&text).ok()?;
        // Unknown on either side (qemu's version or the kernel unreadable):
        // calibrate again rather than trust a match of two blanks.
        let known = !c.qemu.is_empty() && !c.kernel.is_empty();
        (known && c.qemu == qemu_version() && c.kernel == kernel_id(guest)).then_some(c)
    }

    /// The table, one line per measure.
    pub fn table(&self) -> String {
        let (r, w) = (self.disk.read_path, self.disk.write_path);
        let mut out = format!(
            "calibration of the boot disk, profile {} (fio in the guest, {} boot(s) on the model; the path's cost taken off: read {:.0} us + {:.3} ns/byte, write {:.0} us + {:.3} ns/byte):\n",
            self.profile,
            self.model_boots,
            r.ns as f64 / 1e3,
            r.ps_per_byte as f64 / 1e3,
            w.ns as f64 / 1e3,
            w.ps_per_byte as f64 / 1e3
        );
        out.push_str(&format!(
            "  {:<28} {:>10} {:>10} {:>10} {:>7}\n",
            "measure", "model", "path only", "measured", "ratio"
        ));
        for r in &self.rows {
            out.push_str(&format!(
                "  {:<28} {:>10.1} {:>10.1} {:>10.1} {:>7.3}{}\n",
                format!("{} ({})", r.measure, r.unit),
                r.model,
                r.path_only,
                r.measured,
                r.ratio,
                if r.ok { "" } else { "  NOT MODELLED" }
            ));
        }
        for n in &self.not_modelled {
            out.push_str(&format!("  not modelled: {n}\n"));
        }
        out
    }
}

/// fio's figures of one calibration boot.
#[derive(Debug, Clone, Copy)]
struct Figures {
    /// Mean latency of a 4 KiB random read and of a 128 KiB sequential
    /// one, and of the same writes, ns.
    small_ns: f64,
    large_ns: f64,
    small_write_ns: f64,
    large_write_ns: f64,
    /// Sequential 128 KiB read and write rates, bytes/s.
    read_bps: f64,
    write_bps: f64,
}

fn figures(fio: &Value) -> Result<Figures, String> {
    let job = |name: &str| {
        fio["jobs"]
            .as_array()
            .and_then(|j| j.iter().find(|j| j["jobname"] == name))
            .ok_or_else(|| format!("fio's output has no job {name}"))
    };
    let num = |v: &Value, what: &str| {
        v.as_f64()
            .filter(|x| *x > 0.0)
            .ok_or_else(|| format!("fio's output has no {what}"))
    };
    let rr = job("randread4k")?;
    let sr = job("seqread128k")?;
    let sw = job("seqwrite128k")?;
    let rw = job("randwrite4k")?;
    Ok(Figures {
        small_ns: num(&rr["read"]["lat_ns"]["mean"], "randread4k latency")?,
        large_ns: num(&sr["read"]["lat_ns"]["mean"], "seqread128k latency")?,
        small_write_ns: num(&rw["write"]["lat_ns"]["mean"], "randwrite4k latency")?,
        large_write_ns: num(&sw["write"]["lat_ns"]["mean"], "seqwrite128k latency")?,
        read_bps: num(&sr["read"]["bw_bytes"], "seqread128k rate")?,
        write_bps: num(&sw["write"]["bw_bytes"], "seqwrite128k rate")?,
    })
}

/// A line through (4 KiB, `small`) and (128 KiB, `large`), ns: its fixed
/// part and its part per byte (ns/byte).
fn line(small: f64, large: f64) -> (f64, f64) {
    let per_byte = (large - small) / (LARGE - SMALL) as f64;
    (small - per_byte * SMALL as f64, per_byte)
}

fn cost(fixed_ns: f64, per_byte_ns: f64) -> PathCost {
    PathCost {
        ns: iolab_sys::cast::round_u64(fixed_ns.max(0.0)),
        ps_per_byte: iolab_sys::cast::round_u64((per_byte_ns * 1e3).max(0.0)),
    }
}

/// The path's cost from the instant boot: (read, write).
fn fit(f: &Figures) -> (PathCost, PathCost) {
    let (a, b) = line(f.small_ns, f.large_ns);
    let (c, d) = line(f.small_write_ns, f.large_write_ns);
    (cost(a, b), cost(c, d))
}

/// The path's cost corrected by what a modelled boot measured beyond the
/// profile: the residual's line added to each.
fn correct(p: &ModelParams, disk: &ModelDisk, f: &Figures) -> (PathCost, PathCost) {
    let want = |write, bytes| p.service(write, bytes).as_secs_f64() * 1e9;
    let fix = |c: PathCost, small: f64, large: f64, write: bool| {
        let (a, b) = line(small - want(write, SMALL), large - want(write, LARGE));
        cost(c.ns as f64 + a, c.ps_per_byte as f64 / 1e3 + b)
    };
    (
        fix(disk.read_path, f.small_ns, f.large_ns, false),
        fix(disk.write_path, f.small_write_ns, f.large_write_ns, true),
    )
}

/// The rows: the profile's figures against the measured ones.
fn rows(p: &ModelParams, instant: &Figures, model: &Figures) -> Vec<Row> {
    let row = |measure: &str, unit: &str, want: f64, path: f64, got: f64| {
        let ratio = got / want;
        Row {
            measure: measure.into(),
            unit: unit.into(),
            model: want,
            path_only: path,
            measured: got,
            ratio,
            ok: (ratio - 1.0).abs() <= TOLERANCE,
        }
    };
    vec![
        row(
            "randread 4k QD1 latency",
            "us",
            p.service(false, SMALL).as_secs_f64() * 1e6,
            instant.small_ns / 1e3,
            model.small_ns / 1e3,
        ),
        row(
            "randwrite 4k QD1 latency",
            "us",
            p.service(true, SMALL).as_secs_f64() * 1e6,
            instant.small_write_ns / 1e3,
            model.small_write_ns / 1e3,
        ),
        row(
            "read 128k QD1 rate",
            "MB/s",
            p.stream_rate(false, LARGE) / 1e6,
            instant.read_bps / 1e6,
            model.read_bps / 1e6,
        ),
        row(
            "write 128k QD1 rate",
            "MB/s",
            p.stream_rate(true, LARGE) / 1e6,
            instant.write_bps / 1e6,
            model.write_bps / 1e6,
        ),
    ]
}

/// What the model could not take off: a path (as the instant boot
/// measured it, a request answered at once) slower than the profile's own
/// service time of a request.
fn not_modelled(p: &ModelParams, instant: &Figures, rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    for (what, write, bytes, path_ns) in [
        ("a 4 KiB read", false, SMALL, instant.small_ns),
        ("a 128 KiB read", false, LARGE, instant.large_ns),
        ("a 4 KiB write", true, SMALL, instant.small_write_ns),
        ("a 128 KiB write", true, LARGE, instant.large_write_ns),
    ] {
        let service = p.service(write, bytes).as_secs_f64() * 1e9;
        if path_ns > service {
            out.push(format!(
                "{what}: the guest's path alone takes {:.0} us, more than the profile's {:.0} us (TCG runs the guest's block layer emulated)",
                path_ns / 1e3,
                service / 1e3
            ));
        }
    }
    for r in rows.iter().filter(|r| !r.ok) {
        out.push(format!(
            "{}: {:.1} {} measured against {:.1} (ratio {:.3}, beyond ±{:.0} %)",
            r.measure,
            r.measured,
            r.unit,
            r.model,
            r.ratio,
            TOLERANCE * 100.0
        ));
    }
    out
}

/// Runs the two calibration boots of `params` in `guest` and stores the
/// result there.
pub fn calibrate(
    guest_dir: &Path,
    params: &ModelParams,
    memory_mib: u32,
    timeout: Duration,
    work: &Path,
    guard: &Guard,
) -> Result<Calibration, ExperimentError> {
    let instant = ModelDisk::instant(params.queue_depth);
    let fio_instant = fio_boot(guest_dir, &instant, memory_mib, timeout, work, guard)?;
    let fi = figures(&fio_instant).map_err(|e| failed("the instant boot", &e))?;
    let (read_path, write_path) = fit(&fi);
    let mut disk = ModelDisk {
        params: params.clone(),
        read_path,
        write_path,
    };
    let mut fio_model = Vec::new();
    let rows = loop {
        let out = fio_boot(guest_dir, &disk, memory_mib, timeout, work, guard)?;
        let fm = figures(&out).map_err(|e| failed("a modelled boot", &e))?;
        fio_model.push(out);
        let rows = rows(params, &fi, &fm);
        // A path slower than the profile's service cannot be taken off
        // (the answer would be due before the request came): corrections
        // would only chase TCG's noise.
        let path_bound = !not_modelled(params, &fi, &[]).is_empty();
        if rows.iter().all(|r| r.ok) || path_bound || fio_model.len() >= ROUNDS {
            break rows;
        }
        (disk.read_path, disk.write_path) = correct(params, &disk, &fm);
    };
    let c = Calibration {
        profile: params.profile.clone(),
        not_modelled: not_modelled(params, &fi, &rows),
        model_boots: fio_model.len(),
        disk,
        rows,
        fio_instant,
        fio_model,
        qemu: qemu_version(),
        kernel: kernel_id(guest_dir),
    };
    let path = Calibration::path(guest_dir, &c.profile);
    let text = serde_json::to_string_pretty(&c).map_err(|e| {
        ExperimentError::from(iolab_sys::SysError::io(&path, std::io::Error::other(e)))
    })?;
    std::fs::write(&path, text)
        .map_err(|e| ExperimentError::from(iolab_sys::SysError::io(&path, e)))?;
    Ok(c)
}

fn failed(what: &str, why: &str) -> ExperimentError {
    ExperimentError::from(iolab_sys::SysError::io(
        Path::new("calibration"),
        std::io::Error::other(format!("{what}: {why}")),
    ))
}

/// One calibration boot; fio's JSON.
fn fio_boot(
    guest_dir: &Path,
    disk: &ModelDisk,
    memory_mib: u32,
    timeout: Duration,
    work: &Path,
    guard: &Guard,
) -> Result<Value, ExperimentError> {
    let root = guest_dir.join("root.img");
    let dir = work.join(format!("calibrate-{}", disk.params.profile));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .map_err(|e| ExperimentError::from(iolab_sys::SysError::io(&dir, e)))?;
    let seen = guest::boot(
        &BootSpec {
            dir: guest_dir,
            root: &root,
            snapshot: true,
            bw_bytes: None,
            iops: None,
            disk: Some(disk),
            init: Vec::new(),
            cmdline: "iolab.calibrate=1",
            memory_mib,
            timeout,
            work: &dir,
        },
        guard,
    )?;
    if seen.interrupted {
        return Err(iolab_sys::UsageError::new("calibration interrupted").into());
    }
    let out = seen.results.join("fio.json");
    let text = std::fs::read_to_string(&out).map_err(|_| {
        failed(
            &format!("the {} boot", disk.params.profile),
            &format!(
                "no fio output (console: {})",
                seen.console_tail.replace('\n', " | ")
            ),
        )
    })?;
    // fio prints notes before its JSON when a job warns.
    let json = &text[text.find('{').unwrap_or(0)..];
    serde_json::from_str(json).map_err(|e| failed("fio's output", &e.to_string()))
}

/// qemu's version line; empty when it cannot be read (then no stored
/// calibration is reused).
fn qemu_version() -> String {
    guest::qemu()
        .ok()
        .and_then(|q| std::process::Command::new(q).arg("--version").output().ok())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default()
}

/// The guest kernel's size and mtime: a rebuilt guest is calibrated again
/// (empty when unreadable: no stored calibration is reused).
fn kernel_id(guest: &Path) -> String {
    std::fs::metadata(guest.join("vmlinuz"))
        .ok()
        .and_then(|m| {
            let t = m
                .modified()
                .ok()?
                .duration_since(std::time::UNIX_EPOCH)
                .ok()?;
            Some(format!("{} {}", m.len(), t.as_secs()))
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figs(small: f64, large: f64, small_write: f64, large_write: f64) -> Figures {
        Figures {
            small_ns: small,
            large_ns: large,
            small_write_ns: small_write,
            large_write_ns: large_write,
            read_bps: 1e9,
            write_bps: 1e9,
        }
    }

    #[test]
    fn the_path_is_a_fixed_part_and_a_part_per_byte() {
        // 4 KiB in 300 us, 128 KiB in 400 us: 100 us for 124 KiB more.
        let (r, w) = fit(&figs(300_000.0, 400_000.0, 500_000.0, 500_000.0));
        assert_eq!(r.ps_per_byte, 788); // 100 us / 126976 bytes
        assert!(
            (r.ns as f64 - (300_000.0 - 0.788 * 4096.0)).abs() < 2.0,
            "{r:?}"
        );
        assert_eq!(
            w,
            PathCost {
                ns: 500_000,
                ps_per_byte: 0
            }
        );
    }

    /// A modelled boot 30 us slow on small reads and 300 us fast on large
    /// ones: the read path's cost grows by the first and loses the
    /// difference per byte; a write exactly on the profile changes nothing.
    #[test]
    fn a_modelled_boots_residual_corrects_the_path() {
        let p = ModelParams::profile("emmc").unwrap();
        let want = |w, b| p.service(w, b).as_secs_f64() * 1e9;
        let disk = ModelDisk {
            params: p.clone(),
            read_path: PathCost {
                ns: 360_000,
                ps_per_byte: 770,
            },
            write_path: PathCost {
                ns: 400_000,
                ps_per_byte: 900,
            },
        };
        let f = figs(
            want(false, SMALL) + 30_000.0,
            want(false, LARGE) - 300_000.0,
            want(true, SMALL),
            want(true, LARGE),
        );
        let (r, w) = correct(&p, &disk, &f);
        assert_eq!(w, disk.write_path);
        let per = -330_000.0 / (LARGE - SMALL) as f64;
        assert_eq!(r.ps_per_byte, iolab_sys::cast::round_u64(770.0 + per * 1e3));
        let fixed = 360_000.0 + 30_000.0 - per * SMALL as f64;
        assert!((r.ns as f64 - fixed).abs() < 2.0, "{r:?}");
    }

    #[test]
    fn a_path_slower_than_the_profile_is_said_not_modelled() {
        let p = ModelParams::profile("ufs").unwrap();
        let slow = figs(300_000.0, 400_000.0, 300_000.0, 400_000.0);
        let n = not_modelled(&p, &slow, &[]);
        assert!(n.iter().any(|l| l.starts_with("a 4 KiB read")), "{n:?}");
        let e = ModelParams::profile("emmc").unwrap();
        let fast = figs(100_000.0, 200_000.0, 100_000.0, 200_000.0);
        assert!(not_modelled(&e, &fast, &[]).is_empty());
    }

    #[test]
    fn fio_json_gives_the_four_figures() {
        let v: Value = serde_json::json!({"jobs": [
            {"jobname": "randread4k", "read": {"lat_ns": {"mean": 401000.0}, "bw_bytes": 1}},
            {"jobname": "seqread128k", "read": {"lat_ns": {"mean": 1990000.0}, "bw_bytes": 65800000}},
            {"jobname": "seqwrite128k", "write": {"lat_ns": {"mean": 6200000.0}, "bw_bytes": 21000000}},
            {"jobname": "randwrite4k", "write": {"lat_ns": {"mean": 1940000.0}, "bw_bytes": 2000000}},
        ]});
        let f = figures(&v).unwrap();
        assert_eq!(f.small_ns, 401000.0);
        assert_eq!(f.write_bps, 21e6);
        assert_eq!(f.small_write_ns, 1_940_000.0);
        let bad = serde_json::json!({"jobs": []});
        assert!(figures(&bad).is_err());
    }
}
