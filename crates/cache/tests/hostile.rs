//! Hostile prefetch lists: arbitrary text and damaged lists parse or are
//! refused with an error; never a panic, a hang or a range that overflows.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use iolab_cache::prefetch::PrefetchList;
use proptest::prelude::*;

const LIST: &str = "# iolab record\n/usr/bin/ls 0:65536,131072:4096\n/usr/lib/x86_64-linux-gnu/libc.so.6 0:1048576\n/etc/hostname\n";

fn parse(text: String) -> Result<usize, String> {
    iolab_testkit::within(Duration::from_secs(10), "prefetch list parse", move || {
        PrefetchList::parse(&text)
            .map(|l| l.entries.len())
            .map_err(|e| e.to_string())
    })
}

#[test]
fn ranges_that_overflow_are_refused() {
    assert_eq!(parse(LIST.to_string()).unwrap(), 3);
    let e = parse(format!("/x {}:{}\n", u64::MAX - 10, 4096)).unwrap_err();
    assert!(!e.is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn damaged_lists_parse_or_fail_cleanly(bytes in iolab_testkit::mutated(LIST.as_bytes().to_vec())) {
        let _ = parse(String::from_utf8_lossy(&bytes).into_owned());
    }

    #[test]
    fn arbitrary_lines_parse_or_fail_cleanly(text in "(/[a-z/ ]{0,10}( [0-9]{0,20}:[0-9]{0,20}(,[0-9]{0,20}:[0-9]{0,20}){0,3})?\\n?){0,10}") {
        let _ = parse(text);
    }
}
