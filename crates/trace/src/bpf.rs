//! What every BPF collector of iolab shares (bio's block latency, sched's
//! wakeup delay): whether BPF may run here, loading an embedded object
//! with its read-only globals set, attaching its programs (BTF-typed, raw
//! or classic tracepoints) all or none, and detaching them.
//!
//! Each attachment is a perf event or raw-tracepoint file of this process,
//! so a SIGKILL leaves nothing attached (the kernel drops the programs
//! with the last file) and no guard change is needed.

use aya::programs::{BtfTracePoint, RawTracePoint, TracePoint};
use aya::{Btf, Ebpf};

/// Why BPF could not be used here: the reason `--tracer bpf` exits 2 with,
/// and what a run that fell back to tracefs stores.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BpfUnavailable(pub String);

/// Whether this process may load BPF programs here, without loading one:
/// root (CAP_BPF and CAP_PERFMON are part of it), and no kernel lockdown
/// in confidentiality mode (which refuses the programs' reads of the
/// event records). A verifier's refusal is only known at load.
pub fn check() -> Result<(), BpfUnavailable> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(BpfUnavailable(
            "BPF needs root (CAP_BPF and CAP_PERFMON): run iolab as root, or use --tracer tracefs"
                .into(),
        ));
    }
    if let Ok(l) = std::fs::read_to_string("/sys/kernel/security/lockdown") {
        if l.contains("[confidentiality]") {
            return Err(BpfUnavailable(
                "the kernel is locked down (confidentiality): BPF programs may not read kernel memory"
                    .into(),
            ));
        }
    }
    Ok(())
}

/// [`check`], then tracefs mounted (through `guard`, undone at exit)
/// where it is not: a classic tracepoint's id and format are read there.
pub fn prepare(guard: &iolab_guard::Guard) -> Result<(), BpfUnavailable> {
    check()?;
    guard
        .ensure_tracefs()
        .map_err(|e| BpfUnavailable(format!("mounting tracefs: {e}")))
}

/// The kernel's BTF, which relocates a raw program's reads of kernel
/// structures (CO-RE); without it they would read the wrong fields.
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

/// An attached program, detached by [`detach_all`] (or by the kernel when
/// the process ends).
pub enum Link {
    /// A BTF-typed tracepoint program (tp_btf).
    Btf(&'static str, aya::programs::tp_btf::BtfTracePointLinkId),
    /// A raw-tracepoint program.
    Raw(
        &'static str,
        aya::programs::raw_trace_point::RawTracePointLinkId,
    ),
    /// A classic-tracepoint program.
    Classic(&'static str, aya::programs::trace_point::TracePointLinkId),
}

impl Link {
    /// Detaches this program.
    pub fn detach(self, ebpf: &mut Ebpf) -> Result<(), BpfUnavailable> {
        let gone = |prog: &str, e: &dyn std::fmt::Display| {
            BpfUnavailable(format!("detaching {prog}: {e}"))
        };
        match self {
            Link::Btf(prog, id) => {
                let p: Option<&mut BtfTracePoint> =
                    ebpf.program_mut(prog).and_then(|p| p.try_into().ok());
                if let Some(p) = p {
                    p.detach(id).map_err(|e| gone(prog, &e))?;
                }
            }
            Link::Raw(prog, id) => {
                let p: Option<&mut RawTracePoint> =
                    ebpf.program_mut(prog).and_then(|p| p.try_into().ok());
                if let Some(p) = p {
                    p.detach(id).map_err(|e| gone(prog, &e))?;
                }
            }
            Link::Classic(prog, id) => {
                let p: Option<&mut TracePoint> =
                    ebpf.program_mut(prog).and_then(|p| p.try_into().ok());
                if let Some(p) = p {
                    p.detach(id).map_err(|e| gone(prog, &e))?;
                }
            }
        }
        Ok(())
    }
}

/// Detaches every link (the first error is returned, the rest still
/// detached), then reads how many runs of their programs the kernel
/// skipped ([`skipped_runs`]): a count that cannot be read is a warning
/// and `None`, so the recording is not lost over it.
pub fn detach_all(ebpf: &mut Ebpf, links: Vec<Link>) -> Result<Option<u64>, BpfUnavailable> {
    let progs: Vec<(&'static str, bool)> = links
        .iter()
        .map(|l| match l {
            Link::Btf(p, _) | Link::Raw(p, _) => (*p, false),
            Link::Classic(p, _) => (*p, true),
        })
        .collect();
    let mut first = Ok(());
    for l in links {
        if let Err(e) = l.detach(ebpf) {
            if first.is_ok() {
                first = Err(e);
            }
        }
    }
    first?;
    Ok(skipped_runs(ebpf, &progs).unwrap_or_else(|e| {
        iolab_sys::say!("iolab: warning: {e}: the program runs the kernel skipped are not known");
        None
    }))
}

/// Runs of `progs` (name, classic) the kernel skipped while they were
/// attached: an event each program never saw. The kernel runs one classic
/// tracepoint (or kprobe) program per CPU at a time, so an event that
/// fires in an interrupt while any of them runs on that CPU (a completion
/// during an issue's program) is skipped; a raw or tp_btf tracepoint's program is
/// skipped only when it interrupts itself (since 6.1; before, it nested
/// and ran). The kernel counts both as the program's `recursion_misses`
/// (its fdinfo, what `bpftool prog` shows): the line is there since
/// 5.12, classic tracepoints' skips counted since 6.7. `None`: this
/// kernel does not count what these programs may miss.
pub fn skipped_runs(ebpf: &Ebpf, progs: &[(&str, bool)]) -> Result<Option<u64>, BpfUnavailable> {
    use aya::util::KernelVersion;
    let counted_since = |classic: bool| {
        if classic {
            KernelVersion::new(6, 7, 0)
        } else {
            KernelVersion::new(5, 12, 0)
        }
    };
    let kernel = KernelVersion::current()
        .map_err(|e| BpfUnavailable(format!("reading the kernel's version: {e}")))?;
    let mut sum = 0;
    for &(prog, classic) in progs {
        if kernel < counted_since(classic) {
            return Ok(None);
        }
        match misses(ebpf, prog)? {
            Some(n) => sum += n,
            None => return Ok(None),
        }
    }
    Ok(Some(sum))
}

/// `prog`'s `recursion_misses` from its fdinfo; `None` where the line is
/// absent (a kernel before 5.12).
fn misses(ebpf: &Ebpf, prog: &str) -> Result<Option<u64>, BpfUnavailable> {
    use std::os::fd::{AsFd, AsRawFd};
    let fd = ebpf
        .program(prog)
        .ok_or_else(|| BpfUnavailable(format!("no program {prog}")))?
        .fd()
        .map_err(|e| BpfUnavailable(format!("{prog}'s file: {e}")))?
        .as_fd()
        .as_raw_fd();
    let path = format!("/proc/self/fdinfo/{fd}");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| BpfUnavailable(format!("reading {path} ({prog}): {e}")))?;
    parse_misses(&text).map_err(|why| BpfUnavailable(format!("{path} ({prog}): {why}")))
}

/// The `recursion_misses:` value of a BPF program's fdinfo.
fn parse_misses(fdinfo: &str) -> Result<Option<u64>, String> {
    for line in fdinfo.lines() {
        if let Some(v) = line.strip_prefix("recursion_misses:") {
            return v
                .trim()
                .parse()
                .map(Some)
                .map_err(|e| format!("recursion_misses {:?}: {e}", v.trim()));
        }
    }
    Ok(None)
}

/// A program and the tracepoint it sits on: (program, category, event).
pub type Attachment = (&'static str, &'static str, &'static str);

/// How a collector's programs sit on their tracepoints.
#[derive(Clone, Copy)]
pub enum TracepointKind<'a> {
    /// BTF-typed (tp_btf): the arguments are typed by the kernel's BTF
    /// (given here), so a program reads their fields with plain loads.
    Btf(&'a Btf),
    /// Raw tracepoints: the arguments as they are, read with helper calls.
    Raw,
    /// Classic tracepoints: the event's record, built before the program
    /// runs.
    Classic,
}

/// Loads every program of `programs` as `kind` says, then attaches them:
/// a verifier's refusal of any one leaves none attached, so no program of
/// a rung that does not load runs (and writes the maps) before the caller
/// falls back to another. (An attach that fails after others succeeded
/// has let those run until they are detached: not expected once every
/// program loaded, and not undone in the maps.) On any failure what was attached is detached,
/// what was loaded unloaded, and the error returned.
pub fn attach_all(
    ebpf: &mut Ebpf,
    programs: &[Attachment],
    kind: TracepointKind<'_>,
) -> Result<Vec<Link>, BpfUnavailable> {
    let mut loaded = Vec::new();
    for &(prog, _, event) in programs {
        if let Err(e) = load_one(ebpf, prog, event, kind) {
            unload(ebpf, &loaded, kind);
            return Err(e);
        }
        loaded.push(prog);
    }
    let mut links = Vec::new();
    for &(prog, category, event) in programs {
        match attach_one(ebpf, prog, category, event, kind) {
            Ok(l) => links.push(l),
            Err(e) => {
                for l in links {
                    let _ = l.detach(ebpf);
                }
                unload(ebpf, &loaded, kind);
                return Err(e);
            }
        }
    }
    Ok(links)
}

/// Unloads `progs` (best effort: each is also unloaded with the `Ebpf`).
fn unload(ebpf: &mut Ebpf, progs: &[&str], kind: TracepointKind<'_>) {
    for prog in progs {
        let Some(p) = ebpf.program_mut(prog) else {
            continue;
        };
        let _ = match kind {
            TracepointKind::Btf(_) => <&mut BtfTracePoint>::try_from(p).map(|p| p.unload().is_ok()),
            TracepointKind::Raw => <&mut RawTracePoint>::try_from(p).map(|p| p.unload().is_ok()),
            TracepointKind::Classic => <&mut TracePoint>::try_from(p).map(|p| p.unload().is_ok()),
        };
    }
}

fn load_one(
    ebpf: &mut Ebpf,
    prog: &'static str,
    event: &str,
    kind: TracepointKind<'_>,
) -> Result<(), BpfUnavailable> {
    let p = ebpf
        .program_mut(prog)
        .ok_or_else(|| BpfUnavailable(format!("no program {prog}")))?;
    let kind_err = |e: &dyn std::fmt::Display| BpfUnavailable(format!("{prog}: {e}"));
    let refused = |e: &aya::programs::ProgramError| {
        BpfUnavailable(format!("the verifier refused {prog}: {}", first_line(e)))
    };
    match kind {
        TracepointKind::Btf(btf) => {
            let p: &mut BtfTracePoint = p.try_into().map_err(|e| kind_err(&e))?;
            p.load(event, btf).map_err(|e| refused(&e))
        }
        TracepointKind::Raw => {
            let p: &mut RawTracePoint = p.try_into().map_err(|e| kind_err(&e))?;
            p.load().map_err(|e| refused(&e))
        }
        TracepointKind::Classic => {
            let p: &mut TracePoint = p.try_into().map_err(|e| kind_err(&e))?;
            p.load().map_err(|e| refused(&e))
        }
    }
}

fn attach_one(
    ebpf: &mut Ebpf,
    prog: &'static str,
    category: &str,
    event: &str,
    kind: TracepointKind<'_>,
) -> Result<Link, BpfUnavailable> {
    let p = ebpf
        .program_mut(prog)
        .ok_or_else(|| BpfUnavailable(format!("no program {prog}")))?;
    let kind_err = |e: &dyn std::fmt::Display| BpfUnavailable(format!("{prog}: {e}"));
    let unattached = |e: &dyn std::fmt::Display| {
        BpfUnavailable(format!("attaching {prog} to {category}/{event}: {e}"))
    };
    match kind {
        TracepointKind::Btf(_) => {
            let p: &mut BtfTracePoint = p.try_into().map_err(|e| kind_err(&e))?;
            Ok(Link::Btf(prog, p.attach().map_err(|e| unattached(&e))?))
        }
        TracepointKind::Raw => {
            let p: &mut RawTracePoint = p.try_into().map_err(|e| kind_err(&e))?;
            Ok(Link::Raw(
                prog,
                p.attach(event).map_err(|e| unattached(&e))?,
            ))
        }
        TracepointKind::Classic => {
            let p: &mut TracePoint = p.try_into().map_err(|e| kind_err(&e))?;
            Ok(Link::Classic(
                prog,
                p.attach(category, event).map_err(|e| unattached(&e))?,
            ))
        }
    }
}

/// An error and its causes, each cut to its first line (aya's verifier
/// errors carry the whole log; the OS's reason is a cause).
pub fn first_line(e: &dyn std::error::Error) -> String {
    let mut parts = Vec::new();
    let mut next = Some(e);
    while let Some(err) = next {
        let text = err.to_string();
        let line = text.lines().next().unwrap_or("").to_string();
        if !line.is_empty() && !parts.contains(&line) {
            parts.push(line);
        }
        next = err.source();
    }
    parts.join(": ")
}

/// Each counter of the `counters` map every program shares (iolab.bpf.h),
/// summed over the CPUs, by index.
pub fn counters<const N: usize>(ebpf: &aya::Ebpf) -> Result<[u64; N], BpfUnavailable> {
    let read = |e: &dyn std::fmt::Display| BpfUnavailable(format!("reading the counters: {e}"));
    let map: aya::maps::PerCpuArray<_, u64> = aya::maps::PerCpuArray::try_from(
        ebpf.map("counters")
            .ok_or_else(|| BpfUnavailable("no counters map".into()))?,
    )
    .map_err(|e| read(&e))?;
    let mut out = [0u64; N];
    for (i, v) in (0u32..).zip(out.iter_mut()) {
        *v = map.get(&i, 0).map_err(|e| read(&e))?.iter().sum();
    }
    Ok(out)
}

/// A classic tracepoint's fields a program reads: (global prefix, event,
/// fields).
pub type EventFields<'a> = (&'a str, &'a str, &'a [&'a str]);

/// [`field_offsets`] of several events of one category.
pub fn event_offsets(
    category: &str,
    events: &[EventFields<'_>],
) -> Result<Vec<(String, u32)>, BpfUnavailable> {
    let mut off = Vec::new();
    for (prefix, event, fields) in events {
        off.extend(field_offsets(category, event, prefix, fields)?);
    }
    Ok(off)
}

/// The offsets of `fields` in `category/event`'s record, from its tracefs
/// format file, as (`{prefix}_{field}`, offset): what a classic program's
/// read-only globals are set to.
pub fn field_offsets(
    category: &str,
    event: &str,
    prefix: &str,
    fields: &[&str],
) -> Result<Vec<(String, u32)>, BpfUnavailable> {
    let events = std::path::Path::new(crate::TRACEFS).join("events");
    let mut formats = crate::Formats::new();
    let f = formats
        .load(&events, category, event)
        .map_err(|e| BpfUnavailable(format!("{category}/{event}: {e}")))?;
    fields
        .iter()
        .map(|field| {
            let fl = f.field(field).ok_or_else(|| {
                BpfUnavailable(format!("{category}/{event} has no field {field}"))
            })?;
            let o = u32::try_from(fl.offset)
                .map_err(|_| BpfUnavailable(format!("{category}/{event}: {field} offset")))?;
            Ok((format!("{prefix}_{field}"), o))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::parse_misses;

    #[test]
    fn recursion_misses_read_from_a_programs_fdinfo() {
        // A raw-tracepoint program's fdinfo as 6.x prints it
        // (kernel/bpf/syscall.c bpf_prog_show_fdinfo).
        let fdinfo = "pos:\t0\nflags:\t02000002\nmnt_id:\t16\nino:\t2063\n\
                      prog_type:\t17\nprog_jited:\t1\nprog_tag:\t3b185187f1855c4c\n\
                      memlock:\t4096\nprog_id:\t91\nrun_time_ns:\t0\nrun_cnt:\t0\n\
                      recursion_misses:\t3\nverified_insns:\t412\n";
        assert_eq!(parse_misses(fdinfo), Ok(Some(3)));
        // Before 5.12 the line is absent: not counted, not 0.
        let old = "prog_type:\t5\nprog_jited:\t1\nrun_time_ns:\t0\nrun_cnt:\t0\n";
        assert_eq!(parse_misses(old), Ok(None));
        assert!(parse_misses("recursion_misses:\tx\n").is_err());
    }
}
