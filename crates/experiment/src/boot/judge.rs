//! A boot as a run: its time to the marker, and every check that can make
//! it invalid (the clocks, the reboot, what the variant had to leave), with
//! what the guest measured of itself (its disk, its I/O wait, its phases).

use iolab_store::{RunOutcome, RunRecord};
use iolab_sys::cast;
use serde_json::{json, Value};

use super::{guest, variant, CLOCK_BOUND_S};

/// The run a boot makes: its time, outcome and everything seen.
/// A boot as a run: its time to the marker, and every check of it (the
/// clocks, the reboot, what the variant had to leave) that can make it
/// invalid.
pub(super) fn judge(v: &str, rep: u32, seen: &guest::BootSeen, timeout_s: f64) -> RunRecord {
    let res = |f: &str| std::fs::read_to_string(seen.results.join(f)).ok();
    let mut extra = json!({
        "userspace_start_s": seen.start_s,
        "init_s": seen.init_s,
        "qemu_wall_s": seen.wall.as_secs_f64(),
        "clock_bound_s": CLOCK_BOUND_S,
    });
    let mut problems: Vec<String> = Vec::new();
    check_clocks(seen, &mut extra, &mut problems);
    disk_series(seen, &mut extra);
    check_reboot(seen, &mut extra, &mut problems);
    match res("diskstats").as_deref().and_then(diskstats_read) {
        Some((bytes, ios)) => {
            extra["read_bytes"] = json!(bytes);
            extra["read_ios"] = json!(ios);
        }
        None => extra["warning"] = json!("the guest left no diskstats of its boot disk"),
    }
    io_wait(&res, seen, &mut extra);
    for (key, file) in [
        ("nr_requests", "iolab-boot-nr-requests"),
        ("nr_requests_at_end", "nr-requests-at-end"),
    ] {
        if let Some(n) = res(file).and_then(|t| t.trim().parse::<u64>().ok()) {
            extra[key] = json!(n);
        }
    }
    if let Some(m) = &seen.model {
        // The model's side of the boot disk: what qemu asked of it, to
        // set beside the guest's diskstats (read_bytes).
        extra["model"] = json!({
            "profile": m.params.as_ref().map(|p| p.profile.clone()),
            "reads": m.reads,
            "read_bytes": m.read_bytes,
            "writes": m.writes,
            "write_bytes": m.write_bytes,
            "flushes": m.flushes,
            "busy_s": m.busy_s,
            "queue_wait_s": m.queue_wait_s,
            "max_queue_depth": m.max_queue_depth,
            "overruns": m.overruns,
        });
    }
    if !seen.model_errors.is_empty() {
        problems.push(format!(
            "the modelled disk was not undone: {}",
            seen.model_errors.join("; ")
        ));
    }
    let scheduler = res("iolab-boot-scheduler")
        .and_then(|s| Some(s.split('[').nth(1)?.split(']').next()?.to_string()))
        .unwrap_or_else(|| "?".into());
    if let Some(t) = res("systemd") {
        extra["systemd"] = systemd_times(&t);
    }
    if let Some(w) = res("helper-wait") {
        extra["helper_wait_s"] = json!(w.trim().parse::<f64>().ok().map(|n| n / 10.0));
    }
    let helper: Option<Value> =
        res("iolab-helper.json").and_then(|t| serde_json::from_str(&t).ok());
    check_variant(
        variant::booted(v),
        &res,
        helper.as_ref(),
        &mut extra,
        &mut problems,
    );
    if let Some(h) = helper {
        extra["helper"] = h;
    }
    let (outcome, reason, ns) = match seen.done_s {
        None => {
            extra["console_tail"] = json!(seen.console_tail);
            let why = match seen.exit_ok {
                None => format!("no boot-done marker within {timeout_s:.0} s (qemu stopped)"),
                Some(_) => "qemu exited without a boot-done marker".into(),
            };
            (RunOutcome::Failed, Some(why), cast::duration_ns(seen.wall))
        }
        Some(done) if !problems.is_empty() => (
            RunOutcome::Invalid,
            Some(problems.join("; ")),
            cast::floor_u64(done * 1e9),
        ),
        Some(done) => (RunOutcome::Ok, None, cast::floor_u64(done * 1e9)),
    };
    RunRecord {
        scheduler,
        workload: "boot".into(),
        rep,
        target: "guest".into(),
        started_at: iolab_store::rfc3339_now(),
        duration_ns: ns,
        censored: false,
        timeout_ns: cast::floor_u64(timeout_s * 1e9),
        exit_code: None,
        signal: None,
        overhead_ns: None,
        background: None,
        config: json!({ "variant": v, "init": variant::init_args(v).ok() }),
        extra,
        outcome,
        reason,
        variant: (v != "none").then(|| v.to_string()),
    }
}

/// The outside clock: the host's time between the console's start and
/// done lines against the guest's over the same span.
fn check_clocks(seen: &guest::BootSeen, extra: &mut Value, problems: &mut Vec<String>) {
    if let (Some(a), Some(b), Some(ha), Some(hb)) =
        (seen.start_s, seen.done_s, seen.host_start, seen.host_done)
    {
        let host = (hb - ha).as_secs_f64();
        let diff = (b - a) - host;
        extra["host_span_s"] = json!(host);
        extra["guest_span_s"] = json!(b - a);
        extra["clock_diff_s"] = json!(diff);
        if diff.abs() > CLOCK_BOUND_S {
            problems.push(format!(
                "the guest's clock and the host's disagree by {:.0} ms over the boot (bound {:.0} ms)",
                diff * 1e3,
                CLOCK_BOUND_S * 1e3
            ));
        }
    }
}

/// qemu's count of the root disk's reads, every 100 ms, on the guest's
/// clock (the console's start line pairs the two): the boot chart, and at
/// the marker a second count beside the guest kernel's.
fn disk_series(seen: &guest::BootSeen, extra: &mut Value) {
    if let (Some(hs), Some(gs)) = (seen.host_start, seen.start_s) {
        let t: Vec<f64> = seen
            .disk
            .iter()
            .map(|d| d.at.as_secs_f64() - hs.as_secs_f64() + gs)
            .collect();
        if let (Some(done), false) = (seen.done_s, t.is_empty()) {
            let at_done = t
                .iter()
                .zip(&seen.disk)
                .take_while(|(t, _)| **t <= done)
                .last()
                .map(|(_, d)| d.read_bytes);
            extra["qmp_read_bytes_at_done"] = json!(at_done);
        }
        // qemu's exit ends the monitor too: only a series that stops
        // before the marker lost something.
        let short = seen.done_s.is_some_and(|d| t.last().is_none_or(|l| *l < d));
        if let (true, Some(why)) = (short, &seen.disk_error) {
            extra["qmp_warning"] =
                json!(format!("qemu's disk counters end before the marker: {why}"));
        }
        extra["disk_series"] = json!({
            "t_s": t,
            "read_bytes": seen.disk.iter().map(|d| d.read_bytes).collect::<Vec<_>>(),
            "read_ops": seen.disk.iter().map(|d| d.read_ops).collect::<Vec<_>>(),
            "write_bytes": seen.disk.iter().map(|d| d.write_bytes).collect::<Vec<_>>(),
        });
    }
}

/// A board's reboot really happened: a new boot_id, and an uptime within
/// the host's clock since the reboot was asked.
fn check_reboot(seen: &guest::BootSeen, extra: &mut Value, problems: &mut Vec<String>) {
    if let Some(rb) = &seen.reboot {
        extra["reboot"] = json!(rb);
        if rb.boot_id_after == rb.boot_id_before {
            problems.push("the board's boot_id did not change: it did not reboot".into());
        }
        if rb
            .uptime_at_read_s
            .is_some_and(|u| u > rb.host_since_reboot_s + 0.5)
        {
            problems.push(format!(
                "the board had been up {:.1} s when read, but the reboot was asked {:.1} s before",
                rb.uptime_at_read_s.unwrap_or(0.0),
                rb.host_since_reboot_s
            ));
        }
    }
}

/// What variant `v` had to leave: the recording boot its list, the
/// relayout its report, a prefetch variant its helper's report.
fn check_variant(
    v: &str,
    res: &dyn Fn(&str) -> Option<String>,
    helper: Option<&Value>,
    extra: &mut Value,
    problems: &mut Vec<String>,
) {
    if v == variant::RECORD {
        match res("boot.list") {
            Some(list) => {
                let (files, bytes) = list_size(&list);
                extra["list_files"] = json!(files);
                extra["list_bytes"] = json!(bytes);
                if files == 0 {
                    problems.push("the recording boot wrote an empty list".into());
                }
            }
            None => problems.push("the recording boot wrote no list".into()),
        }
    } else if v == variant::RELAYOUT_WRITE {
        match res("relayout.json").and_then(|t| serde_json::from_str::<Value>(&t).ok()) {
            Some(r) => {
                if r["files"].as_u64().unwrap_or(0) == 0 {
                    problems.push("the relayout rewrote no file".into());
                }
                extra["relayout"] = r;
            }
            None => problems.push(format!(
                "the relayout left no report: {}",
                res("relayout.log")
                    .as_deref()
                    .map_or("it left no relayout.log either", str::trim)
            )),
        }
    } else if variant::is_safety(v) {
        // Its prefetch goes wrong on purpose: what counts is that the
        // boot reached the marker, and when.
        extra["safety"] = json!(variant::safety_what(v));
    } else if !variant::is_plain(v) && v != variant::WARMUP {
        // A prefetch asked for that did not run is not this variant.
        match &helper {
            Some(h) => {
                extra["prefetch_bytes"] = h["bytes_requested"].clone();
                // To its last completed read (boot-init always has the
                // helper wait for its reads), and its submission apart.
                extra["prefetch_s"] = h["duration_s"].clone();
                extra["prefetch_submit_s"] = h["submit_s"].clone();
                extra["prefetch_wait"] = h["wait"].clone();
                if h["wait"]
                    .as_str()
                    .is_some_and(|w| w != "complete" && w != "settled")
                {
                    problems.push(format!(
                        "the prefetch's reads did not finish: its wait ended {}",
                        h["wait"]
                    ));
                }
                extra["prefetch_device_read_bytes"] = h["device_read_bytes"].clone();
                if h["files_failed"].as_u64().unwrap_or(0) > 0 {
                    extra["prefetch_files_failed"] = h["files_failed"].clone();
                }
            }
            None => problems
                .push("the prefetch left no report: it did not run (see the console)".into()),
        }
    }
    // Whatever a prefetch did to the boot disk's scheduler (treadahead
    // -n), killed or not, it is as it was at the end of the boot.
    if let (Some(before), Some(end)) = (res("iolab-boot-scheduler"), res("scheduler-at-end")) {
        extra["scheduler_at_end"] = json!(end.trim());
        if before.trim() != end.trim() {
            problems.push(format!(
                "the boot disk's scheduler was left {:?} at the end of the boot (it was {:?})",
                end.trim(),
                before.trim()
            ));
        }
    }
}

/// The boot's own account of waiting for I/O from init to the marker:
/// PSI's io `some` and `full` (time at least one task, and every task,
/// stalled on I/O) and /proc/stat's iowait share, and each androidboot
/// phase's duration.
fn io_wait(res: &dyn Fn(&str) -> Option<String>, seen: &guest::BootSeen, extra: &mut Value) {
    let span_s = match (seen.init_s, seen.done_s) {
        (Some(i), Some(d)) if d > i => d - i,
        _ => return,
    };
    let psi_total = |text: &str, kind: &str| -> Option<f64> {
        let line = text.lines().find(|l| l.starts_with(kind))?;
        line.split_whitespace()
            .find_map(|w| w.strip_prefix("total="))?
            .parse()
            .ok()
    };
    if let (Some(a), Some(b)) = (res("psi-io-init"), res("psi-io-done")) {
        for kind in ["some", "full"] {
            if let (Some(x), Some(y)) = (psi_total(&a, kind), psi_total(&b, kind)) {
                extra[format!("psi_io_{kind}_share")] = json!((y - x) / 1e6 / span_s);
            }
        }
    }
    // An explained boot's PSI over the traced workload alone (explain's
    // own start and end wait for I/O too, in a process it does not
    // follow): what its D-state account is compared with.
    if let (Some(a), Some(b)) = (res("psi-io-traced-start"), res("psi-io-traced-end")) {
        for kind in ["some", "full"] {
            if let (Some(x), Some(y)) = (psi_total(&a, kind), psi_total(&b, kind)) {
                extra[format!("psi_io_{kind}_traced_s")] = json!((y - x) / 1e6);
            }
        }
    }
    let ticks = |t: &str| -> Vec<f64> {
        t.split_whitespace()
            .skip(1)
            .filter_map(|w| w.parse().ok())
            .collect()
    };
    if let (Some(a), Some(b)) = (res("stat-init"), res("stat-done")) {
        let (a, b) = (ticks(&a), ticks(&b));
        if a.len() > 4 && a.len() == b.len() {
            let total: f64 = b.iter().zip(&a).map(|(y, x)| y - x).sum();
            if total > 0.0 {
                extra["iowait_share"] = json!((b[4] - a[4]) / total);
            }
        }
    }
    let mut phases = serde_json::Map::new();
    for f in ["phases-services", "phases-zygote"] {
        // Written only by a guest with Android's boot phases.
        let Some(text) = res(f) else { continue };
        for l in text.lines() {
            let w: Vec<&str> = l.split_whitespace().collect();
            if let ["androidboot:", name, start, end] = w[..] {
                if let (Ok(a), Ok(b)) = (start.parse::<f64>(), end.parse::<f64>()) {
                    phases.insert(name.to_string(), json!({"start_s": a, "end_s": b}));
                }
            }
        }
    }
    if !phases.is_empty() {
        extra["phases"] = Value::Object(phases);
    }
}

/// systemd's own timestamps (a systemd guest), seconds since boot.
fn systemd_times(t: &str) -> Value {
    let us = |k: &str| {
        t.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| *v > 0.0)
            .map(|v| v / 1e6)
    };
    json!({
        "userspace_s": us("UserspaceTimestampMonotonic"),
        "multi_user_s": us("MultiUserMonotonic"),
    })
}

/// (bytes read, reads completed) from a /proc/diskstats line.
fn diskstats_read(line: &str) -> Option<(u64, u64)> {
    let d = iolab_sys::diskstats::parse(line).into_iter().next()?;
    Some((d.read_bytes(), d.reads))
}

/// Files and bytes of a prefetch list (`FILE off:len,...` lines).
fn list_size(list: &str) -> (u64, u64) {
    let (mut files, mut bytes) = (0, 0);
    for l in list
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        files += 1;
        let ranges = l.rsplit(' ').next().unwrap_or("");
        bytes += ranges
            .split(',')
            .filter_map(|r| r.split(':').nth(1)?.parse::<u64>().ok())
            .sum::<u64>();
    }
    (files, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_sizes_add_every_range() {
        let l = "/system/framework/boot.art 0:262144,1048576:524288\n/a b/c 0:4096\n\n";
        assert_eq!(list_size(l), (2, 262144 + 524288 + 4096));
    }
}
