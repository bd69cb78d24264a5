//! Hostile rule files (`iolab explain --rules FILE`): arbitrary text and
//! damaged copies of the built-in table load or are refused with an error
//! naming the line; never a panic or a hang, and a loaded table classifies.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use iolab_explain::rules::RuleSet;
use proptest::prelude::*;

const DEFAULT: &str = include_str!("../rules/default.rules");

fn load(text: String) -> Result<String, String> {
    iolab_testkit::within(Duration::from_secs(10), "rule file", move || {
        RuleSet::with_text(&text, "hostile.rules")
            .map(|r| {
                let id = r.classify(&["io_schedule", "folio_wait_bit", "filemap_read"]);
                r.name(id).to_string()
            })
            .map_err(|e| e.to_string())
    })
}

#[test]
fn the_builtin_table_loads_from_text() {
    assert!(!load(DEFAULT.to_string()).unwrap().is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn damaged_rule_files_load_or_fail_cleanly(bytes in iolab_testkit::mutated(DEFAULT.as_bytes().to_vec())) {
        let _ = load(String::from_utf8_lossy(&bytes).into_owned());
    }
}
