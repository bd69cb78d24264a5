//! Hostile trace files: damaged copies of a real recording (from
//! `iolab sched record`, tests/data/small.trace) must be decoded or refused
//! with an error, never panic, hang or allocate without bound.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use iolab_sched::{analyze_file, WakeFrom};
use proptest::prelude::*;

const SMALL: &[u8] = include_bytes!("data/small.trace");

fn analyze(bytes: Vec<u8>) -> Result<usize, String> {
    iolab_testkit::within(Duration::from_secs(20), "sched analysis", move || {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.trace");
        std::fs::write(&p, &bytes).unwrap();
        analyze_file(&p, WakeFrom::Wakeup)
            .map(|l| usize::try_from(l.stats.events).unwrap())
            .map_err(|e| e.to_string())
    })
}

#[test]
fn the_fixture_decodes() {
    assert!(analyze(SMALL.to_vec()).unwrap() > 100);
}

#[test]
fn crafted_lengths_and_indices_are_refused() {
    // A PAGE section whose length would run past u64::MAX, then one for a
    // CPU index of u32::MAX: the two the review found.
    let mut huge_len = SMALL[..16].to_vec();
    huge_len.extend_from_slice(&4u32.to_le_bytes());
    huge_len.extend_from_slice(&0u32.to_le_bytes());
    huge_len.extend_from_slice(&(u64::MAX - 8).to_le_bytes());
    assert!(analyze(huge_len).is_err());
    let start_len = usize::try_from(u64::from_le_bytes(SMALL[24..32].try_into().unwrap())).unwrap();
    let mut bad_cpu = SMALL[..32 + start_len].to_vec();
    bad_cpu.extend_from_slice(&4u32.to_le_bytes());
    bad_cpu.extend_from_slice(&u32::MAX.to_le_bytes());
    bad_cpu.extend_from_slice(&8u64.to_le_bytes());
    bad_cpu.extend_from_slice(&[0u8; 8]);
    let e = analyze(bad_cpu).unwrap_err();
    assert!(e.contains("CPU index"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn damaged_traces_decode_or_fail_cleanly(bytes in iolab_testkit::mutated(SMALL.to_vec())) {
        let _ = analyze(bytes);
    }
}
