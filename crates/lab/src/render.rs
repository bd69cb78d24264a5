//! The text of `iolab lab status`, `lab list` and `lab down`: what a lab
//! is made of, a `key value` row each, as people read `lsblk` and
//! `zramctl`. The command line prints it; `--json` prints the data.

use std::fmt::Write as _;

use iolab_sys::units::{format_bytes, format_rate};

use crate::{DownReport, LabStatus};

/// What `lab down` undid, a line each, and what failed.
pub fn down_text(r: &DownReport) -> String {
    let mut out = format!("lab {:?} removed:\n", r.name);
    for l in &r.restored {
        let _ = writeln!(out, "  {l}");
    }
    for l in &r.failed {
        let _ = writeln!(out, "  FAILED: {l}");
    }
    out
}

fn path_or<P: AsRef<std::path::Path>>(p: &Option<P>, none: &str) -> String {
    p.as_ref()
        .map_or_else(|| none.to_string(), |p| p.as_ref().display().to_string())
}

fn throttle_text(s: &LabStatus) -> String {
    if let Some(m) = &s.model {
        return format!("model {}", model_summary(m));
    }
    let Some(t) = s.throttle.filter(|t| *t != Default::default()) else {
        return "-".into();
    };
    let mut parts = Vec::new();
    if t.read_bps > 0 || t.write_bps > 0 {
        parts.push(format!(
            "read {} write {}",
            format_rate(t.read_bps as f64),
            format_rate(t.write_bps as f64)
        ));
    }
    if t.read_iops > 0 || t.write_iops > 0 {
        parts.push(format!("{}/{} IOPS r/w", t.read_iops, t.write_iops));
    }
    parts.join(", ")
}

/// `lab status`'s text of one lab: a header line, then a `key value`
/// row each for its device, queue, slowing, filesystem and problems.
pub fn status_text(s: &LabStatus) -> String {
    let kind = s.kind.map_or("?".to_string(), |k| k.to_string());
    let owner = match (s.persistent, s.owner_pid) {
        (true, _) => "made by `iolab lab up`".to_string(),
        (false, Some(p)) => format!("temporary, belongs to iolab pid {p}"),
        (false, None) => "temporary".to_string(),
    };
    let mut rows: Vec<(&'static str, String)> = Vec::new();
    device_rows(s, &mut rows);
    slowing_rows(s, &mut rows);
    storage_rows(s, &mut rows);
    for w in &s.warnings {
        rows.push(("unmodelled", w.clone()));
    }
    for p in &s.problems {
        rows.push(("PROBLEM", p.clone()));
    }
    let mut out = format!("{} ({kind}, {owner})\n", s.name);
    for (k, v) in rows {
        let _ = writeln!(out, "  {k:<11} {v}");
    }
    out
}

/// The device under test, its scheduler and tunables, and its queue.
fn device_rows(s: &LabStatus, rows: &mut Vec<(&'static str, String)>) {
    rows.push((
        "device",
        format!("{}  (the device under test)", path_or(&s.device, "?")),
    ));
    let sched = s.sched.clone().unwrap_or_else(|| "?".into());
    rows.push((
        "scheduler",
        if s.schedulers.is_empty() {
            format!("{sched}  (a bio-based device has no I/O scheduler)")
        } else {
            format!("{sched}  [{}]", s.schedulers.join(" "))
        },
    ));
    if !s.iosched.is_empty() {
        let t: Vec<String> = s.iosched.iter().map(|(k, v)| format!("{k}={v}")).collect();
        rows.push(("tunables", t.join(" ")));
    }
    let mut queue = Vec::new();
    match (s.queue_depth, s.queue_depth_kernel) {
        (_, Some(k)) => queue.push(format!("driver depth {k}")),
        (Some(d), None) => queue.push(format!(
            "driver depth {d} as iolab set it (the kernel's: unknown: {})",
            s.queue_depth_kernel_unknown
                .as_deref()
                .unwrap_or("not read (that needs debugfs, and root)")
        )),
        (None, None) => {
            if let Some(why) = &s.queue_depth_kernel_unknown {
                queue.push(format!("driver depth unknown: {why}"));
            }
        }
    }
    if let Some(n) = s.nr_requests {
        queue.push(format!("nr_requests {n}"));
    }
    if let Some(r) = s.read_ahead_kb {
        queue.push(format!("read_ahead_kb {r}"));
    }
    if let Some(r) = s.rotational {
        queue.push(format!("rotational {}", u8::from(r)));
    }
    if let Some(w) = &s.write_cache {
        queue.push(format!("write cache: {w}"));
    }
    if let Some(d) = s.dirty_limit_bytes {
        queue.push(format!("dirty limit {}", format_bytes(d)));
    }
    if let Some(d) = s.direct_io {
        queue.push(format!("direct I/O {}", if d { "on" } else { "off" }));
    }
    if !queue.is_empty() {
        rows.push(("queue", queue.join(", ")));
    }
}

/// What slows the lab: the lower device, the backend, the model and what
/// it observed, the throttle.
fn slowing_rows(s: &LabStatus, rows: &mut Vec<(&'static str, String)>) {
    if let Some(l) = &s.lower {
        let ls = s.lower_sched.clone().unwrap_or_else(|| "?".into());
        rows.push(("lower", format!("{}  (scheduler {ls})", l.display())));
    }
    if let Some(b) = s.backend {
        rows.push((
            "backend",
            format!(
                "{}  ({})",
                b.name(),
                s.backend_reason.as_deref().unwrap_or("")
            ),
        ));
    }
    if let Some(m) = &s.model {
        rows.push(("model", format!("{} {}", m.profile, model_summary(m))));
    }
    if let Some(st) = &s.model_stats {
        let up = st.uptime_s.max(1e-9);
        rows.push((
            "observed",
            format!(
                "{} reads ({}), {} writes ({}), {} flushes in {:.0} s; busy {:.1} s ({:.0} %), deepest queue {}, {} overruns (server pid {})",
                st.reads,
                format_bytes(st.read_bytes),
                st.writes,
                format_bytes(st.write_bytes),
                st.flushes,
                st.uptime_s,
                st.busy_s,
                100.0 * st.busy_s / up,
                st.max_queue_depth,
                st.overruns,
                st.pid
            ),
        ));
    }
    if s.throttle.is_some() && s.model.is_none() {
        rows.push(("throttle", throttle_text(s)));
    }
}

/// The image, size, filesystem, mount options, free space, zram.
fn storage_rows(s: &LabStatus, rows: &mut Vec<(&'static str, String)>) {
    if let Some(img) = &s.image {
        rows.push(("image", img.display().to_string()));
    }
    if let Some(b) = s.size_bytes {
        rows.push(("size", format_bytes(b)));
    }
    rows.push(match (&s.fstype, &s.mountpoint) {
        (Some(fs), Some(mp)) => ("filesystem", format!("{fs} on {}", mp.display())),
        (Some(fs), None) => ("filesystem", format!("{fs} (not mounted)")),
        (None, _) => ("filesystem", "none (raw device)".into()),
    });
    if let Some(o) = &s.mount_options {
        rows.push(("options", o.clone()));
    }
    if let (Some(size), Some(avail)) = (s.fs_size_bytes, s.fs_avail_bytes) {
        rows.push((
            "space",
            format!(
                "{} available of {}",
                format_bytes(avail),
                format_bytes(size)
            ),
        ));
    }
    if let Some(z) = &s.zram {
        rows.push((
            "zram",
            format!(
                "{}, {} stored in {}",
                z.comp_algorithm,
                format_bytes(z.orig_data_size),
                format_bytes(z.mem_used_total)
            ),
        ));
    }
}

/// `lab list`: a row per lab (name, kind, device, scheduler, throttle,
/// size, mount point or its first problem).
pub fn list_text(labs: &[LabStatus]) -> String {
    if labs.is_empty() {
        return "no labs: make one with `iolab lab up`\n".into();
    }
    let rows: Vec<[String; 7]> = labs
        .iter()
        .map(|s| {
            [
                s.name.clone(),
                s.kind.map_or("?".into(), |k| k.to_string()),
                path_or(&s.device, "-"),
                s.sched.clone().unwrap_or_else(|| "-".into()),
                throttle_text(s),
                s.size_bytes.map_or("-".into(), format_bytes),
                match (&s.mountpoint, s.problems.first()) {
                    (_, Some(p)) => format!("PROBLEM: {p}"),
                    (Some(mp), None) => mp.display().to_string(),
                    (None, None) => "-".into(),
                },
            ]
        })
        .collect();
    let head = [
        "NAME",
        "KIND",
        "DEVICE",
        "SCHED",
        "THROTTLE",
        "SIZE",
        "MOUNTPOINT",
    ];
    let mut w = head.map(str::len);
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.len());
        }
    }
    let mut out = String::new();
    let mut line = |cells: [&str; 7]| {
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(c);
            } else {
                out.push_str(&format!("{c:<width$}  ", width = w[i]));
            }
        }
        out.push('\n');
    };
    line(head);
    for r in &rows {
        line(r.each_ref().map(String::as_str));
    }
    out
}

/// `read 80MB/s write 30MB/s, 350us/1.8ms per request, QD 1, flush 5ms`.
pub fn model_summary(m: &iolab_model::ModelParams) -> String {
    let d = |ns: u64| {
        if ns >= 1_000_000 {
            format!("{}ms", ns as f64 / 1e6)
        } else {
            format!("{}us", ns as f64 / 1e3)
        }
    };
    let mut s = format!(
        "read {} write {}, {}/{} per request, QD {}, flush {}",
        format_rate(m.read_bw as f64),
        format_rate(m.write_bw as f64),
        d(m.read_latency_ns),
        d(m.write_latency_ns),
        m.queue_depth,
        d(m.flush_ns)
    );
    if m.seek_ns > 0 {
        s.push_str(&format!(", seek {}", d(m.seek_ns)));
    }
    s
}
