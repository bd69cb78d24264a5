//! The in-kernel off-CPU collector against the tracefs explainer (root):
//! both follow the same held command at once (a sleep, direct reads and
//! a cold buffered read of a fresh loop device); every cause with more
//! than a few ms of blocked time gets the same time from both (within
//! 5 % and 2 ms: the two read their clocks at the same tracepoints), and
//! the direct reads' sleeps are counted alike, checked also against the
//! number of reads the command made.
#![allow(clippy::unwrap_used)]

use iolab_explain::bpf::OffCpuBpf;
use iolab_explain::{Explainer, ExplainerConfig, RuleSet};
use iolab_guard::Guard;

#[test]
fn bpf_and_tracefs_name_the_same_causes() {
    let test = "bpf_and_tracefs_name_the_same_causes";
    if !iolab_testkit::root_or_skip(test, "BPF, a tracefs instance, loop devices") {
        return;
    }
    let run = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    let guard = Guard::in_dir(run.path().to_path_buf());
    let img = work.path().join("explain-bpf.img");
    let f = guard.create_file(&img).unwrap();
    f.set_len(64 << 20).unwrap();
    drop(f);
    let dev = guard.attach_loop(&img, true).unwrap();
    let p = dev.dev_path();
    let p = p.to_str().unwrap();
    const READS: u64 = 500;
    let script = format!(
        "sleep 0.2; dd if={p} of=/dev/null bs=4k count={READS} iflag=direct status=none; \
         dd if={p} of=/dev/null bs=1M count=32 status=none"
    );
    let argv = ["sh".to_string(), "-c".to_string(), script];
    let held = iolab_spawn::hold(&iolab_spawn::Spec::new(&argv)).unwrap();
    let pid = held.pid();
    let rules = RuleSet::builtin();
    let config = ExplainerConfig {
        held_root: true,
        rules: rules.clone(),
        ..ExplainerConfig::default()
    };
    let explainer = Explainer::start_with(&guard, pid, config).unwrap();
    let bpf = OffCpuBpf::start(&guard, &[pid]).unwrap();
    let done = held.release().unwrap().wait().unwrap();
    assert!(done.status.success());
    let off = bpf.finish(&rules).unwrap();
    let a = explainer.finish().unwrap();
    assert_eq!(a.trace.lost, 0, "{:?}", a.trace);
    assert_eq!(off.counters.no_room, 0, "{:?}", off.counters);
    // Every sleep the programs saw ended in the window, one way or another.
    let k = off.counters;
    assert_eq!(k.sleeps, k.woken + k.raced + k.open, "{k:?}");
    eprintln!("bpf: {:?}", off.counters);
    for c in &a.causes {
        eprintln!(
            "tracefs {:<32} {:>10} ns {:>5} sleeps",
            c.cause, c.blocked_ns, c.stalls
        );
    }
    for c in &off.causes {
        eprintln!(
            "bpf     {:<32} {:>10} ns {:>5} sleeps",
            c.cause, c.blocked_ns, c.sleeps
        );
    }
    let mut compared = 0;
    for t in a.causes.iter().filter(|c| c.blocked_ns > 5_000_000) {
        let b = off
            .causes
            .iter()
            .find(|c| c.cause == t.cause)
            .unwrap_or_else(|| panic!("bpf has no {}: {:?}", t.cause, off.causes));
        let tol = t.blocked_ns / 20 + 2_000_000;
        assert!(
            b.blocked_ns.abs_diff(t.blocked_ns) <= tol,
            "{}: bpf {} ns, tracefs {} ns",
            t.cause,
            b.blocked_ns,
            t.blocked_ns
        );
        compared += 1;
    }
    assert!(compared >= 3, "too few causes compared: {:?}", a.causes);
    // dd's direct reads each sleep once for their completion.
    let direct = |n: u64| n.abs_diff(READS) <= 5;
    let t = a
        .causes
        .iter()
        .find(|c| c.cause == "direct I/O wait")
        .unwrap();
    let b = off
        .causes
        .iter()
        .find(|c| c.cause == "direct I/O wait")
        .unwrap();
    assert!(
        direct(t.stalls) && direct(b.sleeps),
        "direct reads {READS}: tracefs {} sleeps, bpf {}",
        t.stalls,
        b.sleeps
    );
}
