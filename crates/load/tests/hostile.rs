//! Hostile job files: arbitrary text and damaged copies of real fio job
//! files are parsed or refused with an error naming file:line — never a
//! panic, a hang, or an allocation sized by a number in the file.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use proptest::prelude::*;

const SEED004: &str = include_str!("../../../docs/experiments/seed004.fio");
const RICH: &str = "[global]\nioengine=psync\ndirect=1\nbs=4k\nsize=16m\nruntime=2\ntime_based\n\
    rate=1m,2m\niodepth=4\n\n[reader]\nrw=randread\nnumjobs=2\nfilename=/tmp/x\n\n\
    [writer]\nstonewall\nrw=write\nbs=1M\nloops=3\ncpuload=50\n";

fn parse(text: String) -> Result<usize, String> {
    iolab_testkit::within(Duration::from_secs(10), "job file parse", move || {
        iolab_load::jobfile::parse(&text, Path::new("hostile.fio"))
            .map(|jobs| jobs.len())
            .map_err(|e| e.to_string())
    })
}

#[test]
fn the_fixtures_parse() {
    assert!(parse(SEED004.to_string()).unwrap() >= 1);
    assert_eq!(parse(RICH.to_string()).unwrap(), 2);
}

#[test]
fn huge_numbers_are_refused_not_allocated() {
    for opt in [
        "numjobs=4294967295",
        "iodepth=4294967295",
        "bs=16E",
        "size=99999999999999999999",
        "loops=18446744073709551615",
    ] {
        let text = format!("[j]\nrw=read\nsize=1m\n{opt}\n");
        // Each would make the engine spawn billions of threads, size
        // buffers from the number, or loop practically forever.
        let e = parse(text).unwrap_err();
        assert!(
            e.contains("hostile.fio:4"),
            "{opt}: error without file:line: {e}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn damaged_job_files_parse_or_fail_cleanly(
        bytes in iolab_testkit::mutated(RICH.as_bytes().to_vec())
    ) {
        let _ = parse(String::from_utf8_lossy(&bytes).into_owned());
    }

    #[test]
    fn arbitrary_text_parses_or_fails_cleanly(text in "(\\[[a-z ]{0,8}\\]|[a-z_]{1,12}=[-0-9a-zA-Z:,.%/]{0,12}|#.*|;.*|\\s*)(\\n(\\[[a-z ]{0,8}\\]|[a-z_]{1,12}=[-0-9a-zA-Z:,.%/]{0,12}|\\s*)){0,20}") {
        let _ = parse(text);
    }
}
