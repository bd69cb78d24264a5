//! The settings a plan can vary, by name: what each is, which values it
//! takes, and whom it concerns. Names follow the files they set, so a user
//! who knows the kernel's knob knows iolab's name for it:
//!
//! | name | sets |
//! |---|---|
//! | `iosched.NAME` | the scheduler's tunable `queue/iosched/NAME` on every disk of the place, where the cell's scheduler has it |
//! | `read_ahead_kb`, `nr_requests`, `wbt_lat_usec`, `max_sectors_kb`, `discard_max_bytes`, `nomerges` | `queue/NAME` on every disk (`wbt_lat_usec=-1`: the kernel's default) |
//! | `vm.dirty_ratio`, `vm.dirty_background_ratio`, `vm.dirty_expire_centisecs`, `vm.dirty_writeback_centisecs` | the sysctl |
//! | `target.ioprio`, `load.ioprio` | the I/O priority (`rt:N`, `be:N`, `idle`) of the target, or of the load's threads |
//! | `target.nice` | the target's nice value |
//! | `target.cgroup` | `root`: the target runs in the hierarchy's root group instead of iolab's target group (where Android puts the top app, beside v1's writeback) |
//! | `cg.target.FILE`, `cg.load.FILE` | FILE in the target's or the load's cgroup, which iolab makes (v2: `io.weight`, `io.bfq.weight`, `io.latency`, `io.max`, `io.prio.class`, `memory.high`, `memory.low`; v1 blkio: `blkio.bfq.weight`, `blkio.weight`, `blkio.prio.class`, `blkio.throttle.*_device`) |
//! | `mount.atime`, `mount.lazytime`, `mount.commit` | the place's filesystem remounted with noatime/relatime/strictatime, lazytime 0/1, ext4's commit=SECONDS |
//! | `fs.ATTR` | `/sys/fs/FSTYPE/DEV/ATTR` of the place's filesystem: f2fs `cp_interval`, EROFS `sync_decompress`, ext4's tunables |
//! | `cg.root.FILE` | FILE at the hierarchy's root (v2: `io.cost.qos`, `io.cost.model`; v1: `blkio.prio.class`) |
//!
//! The value `-` leaves a setting as it is: the point without any control
//! is the baseline every other is compared with.

use iolab_sys::ioprio::IoPrio;
use iolab_sys::UsageError;

/// The value that leaves a setting alone.
pub const UNSET: &str = "-";

/// Whose process a setting concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// The started target.
    Target,
    /// The background load.
    Load,
}

impl Who {
    /// `target` or `load`: also the name of its cgroup.
    pub fn as_str(self) -> &'static str {
        match self {
            Who::Target => "target",
            Who::Load => "load",
        }
    }
}

/// One setting a point can give a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Knob {
    /// `queue/iosched/NAME`.
    Iosched(String),
    /// `queue/NAME`: read_ahead_kb, nr_requests, wbt_lat_usec,
    /// max_sectors_kb, discard_max_bytes.
    Queue(String),
    /// A vm sysctl, dotted.
    Sysctl(String),
    /// An I/O priority.
    Ioprio(Who),
    /// A nice value.
    Nice(Who),
    /// A file in the target's or the load's cgroup.
    Group(Who, String),
    /// A file at the hierarchy's root.
    Root(String),
    /// Where the target runs: `root`, the hierarchy's root group.
    TargetCgroup,
    /// `/sys/fs/FSTYPE/DEV/ATTR` of the place's filesystem.
    Fs(String),
    /// A mount option of the place's filesystem (see `control::mount`).
    Mount(String),
}

/// The queue attributes a plan may vary.
/// max_sectors_kb bounds a request's size (a long write holds the disk
/// less at a time); discard_max_bytes a discard's (AOSP lowers it against
/// the long stalls of big discards on UFS/eMMC); nomerges turns request
/// merging off (1: the cheap one-hit cache only, 2: none), so a reader's
/// small requests no longer join the writer's big ones in the queue
/// (Documentation/ABI/stable/sysfs-block).
const QUEUE: [&str; 6] = [
    "read_ahead_kb",
    "nr_requests",
    "wbt_lat_usec",
    "max_sectors_kb",
    "discard_max_bytes",
    "nomerges",
];
/// The sysctls a plan may vary. `vm.dirty_bytes` and
/// `vm.dirty_background_bytes` are not among them: writing one zeroes its
/// ratio, and writing 0 back is refused, so it could not be undone exactly.
const SYSCTLS: [&str; 4] = [
    "vm.dirty_ratio",
    "vm.dirty_background_ratio",
    "vm.dirty_expire_centisecs",
    "vm.dirty_writeback_centisecs",
];
/// The files of a group iolab makes, v2 then v1.
pub const GROUP_FILES: [&str; 14] = [
    "io.weight",
    "io.bfq.weight",
    "io.latency",
    "io.max",
    "io.prio.class",
    "memory.high",
    "memory.low",
    "blkio.bfq.weight",
    "blkio.weight",
    "blkio.prio.class",
    "blkio.throttle.read_bps_device",
    "blkio.throttle.write_bps_device",
    "blkio.throttle.read_iops_device",
    "blkio.throttle.write_iops_device",
];
/// The root's files.
pub const ROOT_FILES: [&str; 3] = ["io.cost.qos", "io.cost.model", "blkio.prio.class"];
/// The classes of io.prio.class (blk-ioprio), as Linux 6.1–6.18 name them.
const PRIO_CLASSES: [&str; 5] = [
    "no-change",
    "none-to-rt",
    "promote-to-rt",
    "restrict-to-be",
    "idle",
];

/// Every setting's name, from the tables [`Knob::parse`] reads: what the
/// CLI's help and a refusal list.
pub fn names() -> String {
    format!(
        "iosched.TUNABLE, {}, {}, target.ioprio, load.ioprio, target.nice, target.cgroup, fs.ATTR, mount.{}, cg.target.FILE or cg.load.FILE (FILE one of {}), or cg.root.FILE ({})",
        QUEUE.join(", "),
        SYSCTLS.join(", "),
        super::mount::NAMES.join("|"),
        GROUP_FILES.join(", "),
        ROOT_FILES.join(", ")
    )
}

impl Knob {
    /// The knob named `name`, or a one-line refusal listing the names.
    pub fn parse(name: &str) -> Result<Knob, UsageError> {
        let bad = || UsageError::new(format!("unknown setting {name:?}: expected {}", names()));
        if let Some(t) = name.strip_prefix("iosched.") {
            if t.is_empty() || !t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(bad());
            }
            return Ok(Knob::Iosched(t.to_string()));
        }
        if let Some(o) = name.strip_prefix("mount.") {
            if super::mount::NAMES.contains(&o) {
                return Ok(Knob::Mount(o.to_string()));
            }
            return Err(UsageError::new(format!(
                "unknown setting {name:?}: the mount settings are mount.atime, mount.lazytime and mount.commit"
            )));
        }
        if let Some(a) = name.strip_prefix("fs.") {
            if a.is_empty() || !a.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(bad());
            }
            return Ok(Knob::Fs(a.to_string()));
        }
        if QUEUE.contains(&name) {
            return Ok(Knob::Queue(name.to_string()));
        }
        if SYSCTLS.contains(&name) {
            return Ok(Knob::Sysctl(name.to_string()));
        }
        if name == "vm.dirty_bytes" || name == "vm.dirty_background_bytes" {
            return Err(UsageError::new(format!(
                "{name} cannot be varied: writing it zeroes its ratio, which iolab could not restore exactly; vary {} instead",
                name.replace("_bytes", "_ratio")
            )));
        }
        match name {
            "target.ioprio" => return Ok(Knob::Ioprio(Who::Target)),
            "load.ioprio" => return Ok(Knob::Ioprio(Who::Load)),
            "target.nice" => return Ok(Knob::Nice(Who::Target)),
            "target.cgroup" => return Ok(Knob::TargetCgroup),
            "load.nice" => {
                return Err(UsageError::new(
                    "load.nice cannot be varied: the load runs in iolab's own threads; vary load.ioprio or cg.load.* instead",
                ))
            }
            _ => {}
        }
        if let Some(rest) = name.strip_prefix("cg.") {
            let (who, file) = rest.split_once('.').ok_or_else(bad)?;
            let who = match who {
                "target" => Some(Who::Target),
                "load" => Some(Who::Load),
                "root" => None,
                _ => return Err(bad()),
            };
            return match who {
                Some(w) if GROUP_FILES.contains(&file) => Ok(Knob::Group(w, file.to_string())),
                None if ROOT_FILES.contains(&file) => Ok(Knob::Root(file.to_string())),
                _ => Err(bad()),
            };
        }
        Err(bad())
    }

    /// True for a cgroup file.
    pub fn is_cgroup(&self) -> bool {
        matches!(self, Knob::Group(..) | Knob::Root(_) | Knob::TargetCgroup)
    }

    /// Checks `value` for this knob (`-` is always allowed).
    pub fn check(&self, name: &str, value: &str) -> Result<(), UsageError> {
        if value == UNSET {
            return Ok(());
        }
        let wrong = |what: &str| UsageError::new(format!("{name}={value:?}: expected {what}"));
        let int_in = |lo: i64, hi: i64| -> Result<(), UsageError> {
            match value.parse::<i64>() {
                Ok(v) if (lo..=hi).contains(&v) => Ok(()),
                _ => Err(wrong(&format!("an integer from {lo} to {hi}"))),
            }
        };
        if value.contains(';') || value.contains('\n') {
            return Err(wrong(
                "a value without ';' (it separates a point's settings)",
            ));
        }
        match self {
            Knob::Iosched(_) | Knob::Fs(_) => int_in(0, i64::from(u32::MAX)),
            Knob::Mount(o) => super::mount::check(name, o, value),
            Knob::Queue(q) if q == "wbt_lat_usec" => int_in(-1, i64::from(u32::MAX)),
            Knob::Queue(q) if q == "nomerges" => int_in(0, 2),
            Knob::Queue(_) => int_in(0, i64::from(u32::MAX)),
            Knob::Sysctl(_) => int_in(0, i64::from(i32::MAX)),
            Knob::Ioprio(_) => value
                .parse::<IoPrio>()
                .map(|_| ())
                .map_err(|_| wrong("an I/O priority: rt:0..7, be:0..7 or idle")),
            Knob::Nice(_) => int_in(-20, 19),
            Knob::TargetCgroup if value == "root" => Ok(()),
            Knob::TargetCgroup => Err(wrong("root (the hierarchy's root group)")),
            Knob::Group(_, f) => match f.as_str() {
                "io.weight" => int_in(1, 10_000),
                "io.bfq.weight" | "blkio.bfq.weight" => int_in(1, 1_000),
                "blkio.weight" => int_in(10, 1_000),
                "io.latency" => int_in(1, i64::from(u32::MAX))
                    .map_err(|_| wrong("the latency target in microseconds")),
                "io.max" => keyed(value, &["rbps", "wbps", "riops", "wiops"], true)
                    .map_err(|e| wrong(&format!("rbps=N wbps=N riops=N wiops=N (N or max): {e}"))),
                "memory.high" | "memory.low" if value == "max" => Ok(()),
                "memory.high" | "memory.low" => {
                    int_in(0, i64::MAX).map_err(|_| wrong("bytes, or max"))
                }
                "io.prio.class" | "blkio.prio.class" => prio_class(value)
                    .map_err(|_| wrong(&format!("one of {}", PRIO_CLASSES.join(", ")))),
                _ => int_in(0, i64::MAX),
            },
            Knob::Root(f) => match f.as_str() {
                "io.cost.qos" => keyed(
                    value,
                    &[
                        "enable", "ctrl", "rpct", "rlat", "wpct", "wlat", "min", "max",
                    ],
                    false,
                )
                .map_err(|e| {
                    wrong(&format!(
                        "io.cost.qos's keys (enable=1 ctrl=user rlat=N ...): {e}"
                    ))
                }),
                "io.cost.model" => keyed(
                    value,
                    &[
                        "ctrl",
                        "model",
                        "rbps",
                        "rseqiops",
                        "rrandiops",
                        "wbps",
                        "wseqiops",
                        "wrandiops",
                    ],
                    false,
                )
                .map_err(|e| {
                    wrong(&format!(
                        "io.cost.model's keys (ctrl=user model=linear rbps=N ...): {e}"
                    ))
                }),
                _ => prio_class(value)
                    .map_err(|_| wrong(&format!("one of {}", PRIO_CLASSES.join(", ")))),
            },
        }
    }
}

fn prio_class(v: &str) -> Result<(), ()> {
    if PRIO_CLASSES.contains(&v) {
        Ok(())
    } else {
        Err(())
    }
}

/// Checks a space-separated `key=value` list against `keys`; `numeric`:
/// every value a number or `max`.
fn keyed(value: &str, keys: &[&str], numeric: bool) -> Result<(), String> {
    let mut any = false;
    for kv in value.split_whitespace() {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("{kv:?} is not key=value"))?;
        if !keys.contains(&k) {
            return Err(format!("unknown key {k:?}"));
        }
        if numeric && v != "max" && v.parse::<u64>().is_err() {
            return Err(format!("{k}={v:?} is not a number"));
        }
        any = true;
    }
    if any {
        Ok(())
    } else {
        Err("no key=value".to_string())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_their_files_and_values_are_checked() {
        assert_eq!(
            Knob::parse("cg.load.io.weight").unwrap(),
            Knob::Group(Who::Load, "io.weight".into())
        );
        assert_eq!(
            Knob::parse("iosched.low_latency").unwrap(),
            Knob::Iosched("low_latency".into())
        );
        assert_eq!(
            Knob::parse("cg.root.io.cost.qos").unwrap(),
            Knob::Root("io.cost.qos".into())
        );
        assert!(Knob::parse("cg.other.io.weight").is_err());
        assert!(Knob::parse("iosched.../x").is_err());
        let e = Knob::parse("vm.dirty_bytes").unwrap_err().to_string();
        assert!(e.contains("vm.dirty_ratio"), "{e}");
        let w = Knob::parse("cg.target.io.weight").unwrap();
        assert!(w.check("cg.target.io.weight", "1000").is_ok());
        assert!(w.check("cg.target.io.weight", "-").is_ok());
        assert!(w.check("cg.target.io.weight", "0").is_err());
        let m = Knob::parse("cg.load.io.max").unwrap();
        assert!(m.check("cg.load.io.max", "rbps=1048576 wbps=max").is_ok());
        assert!(m.check("cg.load.io.max", "rbps=fast").is_err());
        assert!(m.check("cg.load.io.max", "rbps=1; x=2").is_err());
        let p = Knob::parse("cg.load.io.prio.class").unwrap();
        assert!(p.check("cg.load.io.prio.class", "idle").is_ok());
        assert!(p.check("cg.load.io.prio.class", "low").is_err());
        let q = Knob::parse("wbt_lat_usec").unwrap();
        assert!(q.check("wbt_lat_usec", "-1").is_ok());
        assert!(Knob::parse("target.ioprio")
            .unwrap()
            .check("target.ioprio", "rt:0")
            .is_ok());
    }
}
