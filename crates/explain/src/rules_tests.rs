//! The rule table against real stacks captured on this machine
//! (`tests/fixtures/*.stack`, each naming the cause it must get), and the
//! rule-file syntax.
#![allow(clippy::unwrap_used)]

use super::*;

/// `(file name, expected cause, frames)` of every fixture.
fn fixtures() -> Vec<(String, String, Vec<String>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().and_then(|x| x.to_str()) != Some("stack") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let expect = text
            .lines()
            .find_map(|l| l.strip_prefix("# expect: "))
            .unwrap_or_else(|| panic!("{} has no `# expect:` line", path.display()))
            .trim()
            .to_string();
        let frames = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| crate::pattern::normalize(l.trim_start_matches(" => ")).to_string())
            .filter(|f| !crate::stacks::is_tracing_frame(f))
            .collect();
        out.push((
            path.file_name().unwrap().to_string_lossy().into_owned(),
            expect,
            frames,
        ));
    }
    out.sort();
    out
}

#[test]
fn real_stacks_get_their_cause() {
    let rules = RuleSet::builtin();
    let fx = fixtures();
    assert!(
        fx.len() >= 10,
        "expected at least 10 fixtures, found {}",
        fx.len()
    );
    let mut wrong = Vec::new();
    for (name, expect, frames) in &fx {
        let got = rules.name(rules.classify(frames));
        if got != expect {
            wrong.push(format!("{name}: expected {expect:?}, got {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn fixtures_cover_the_seed_causes() {
    let fx = fixtures();
    for cause in [
        "page-cache read I/O",
        "dirty throttling",
        "fsync/commit wait",
        "journal buffer shadow wait",
        "block tag starvation",
        "metadata read",
        "idle: waiting for a child",
        "idle: futex wait",
    ] {
        assert!(
            fx.iter().any(|(_, e, _)| e == cause),
            "no fixture for {cause}"
        );
    }
}

#[test]
fn every_builtin_rule_is_documented_and_has_a_kind() {
    let rules = RuleSet::builtin();
    assert!(rules.rules.len() >= 15);
    for r in &rules.rules {
        assert!(!r.doc.is_empty(), "{} has no doc", r.cause);
        assert!(r.kind != Kind::Other, "{} has no kind", r.cause);
    }
}

#[test]
fn site_skips_wait_machinery_and_names_the_lock() {
    let rules = RuleSet::builtin();
    let frames = [
        "schedule",
        "rwsem_down_read_slowpath",
        "down_read",
        "ext4_map_blocks",
        "ext4_da_get_block_prep",
    ];
    let id = rules.classify(&frames);
    assert_eq!(rules.name(id), "inode/extent lock");
    let site = rules.site(&frames).unwrap();
    assert_eq!(site, "ext4_map_blocks");
    assert_eq!(rules.lock_name(id, site), Some("i_data_sem"));
}

#[test]
fn order_decides_proximate_over_context() {
    let rules = RuleSet::builtin();
    // A tag wait while fsync writes back: the proximate cause wins.
    let frames = [
        "io_schedule",
        "blk_mq_get_tag",
        "blk_mq_submit_bio",
        "ext4_writepages",
        "file_write_and_wait_range",
        "ext4_sync_file",
    ];
    assert_eq!(rules.name(rules.classify(&frames)), "block tag starvation");
    assert_eq!(rules.name(rules.classify(&["schedule", "mystery"])), OTHER);
    assert_eq!(rules.name(rules.classify::<&str>(&[])), OTHER);
}

#[test]
fn user_rules_come_first_and_replace_replaces() {
    let user = "cause my wait\nkind io\nany mystery\ndoc mine\n";
    let set = RuleSet::with_text(user, "mine.rules").unwrap();
    assert_eq!(set.name(set.classify(&["schedule", "mystery"])), "my wait");
    assert_eq!(
        set.name(set.classify(&["io_schedule", "balance_dirty_pages"])),
        "dirty throttling"
    );
    assert_eq!(set.source, "mine.rules + builtin");
    // A user rule can take over a built-in cause's frames.
    let user = "cause early\nkind io\nany balance_dirty_pages\n";
    let set = RuleSet::with_text(user, "u").unwrap();
    assert_eq!(set.name(set.classify(&["balance_dirty_pages"])), "early");

    let set = RuleSet::with_text("replace\ncause only\nkind io\nany x\n", "r").unwrap();
    assert_eq!(set.rules.len(), 1);
    assert_eq!(set.name(set.classify(&["balance_dirty_pages"])), OTHER);
}

#[test]
fn bad_rule_files_say_what_is_wrong() {
    let e = RuleSet::with_text("kind io\n", "f")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("f:1") && e.contains("expected `cause NAME`"),
        "{e}"
    );
    let e = RuleSet::with_text("cause x\nkind disk\nany y\n", "f")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("f:2") && e.contains("io, lock, memory, idle or other"),
        "{e}"
    );
    let e = RuleSet::with_text("cause x\nkind io\n", "f")
        .unwrap_err()
        .to_string();
    assert!(e.contains("no `any PATTERN...` line"), "{e}");
    let e = RuleSet::with_text("cause x\nany y\nfrobnicate z\n", "f")
        .unwrap_err()
        .to_string();
    assert!(e.contains("f:3") && e.contains("expected one of"), "{e}");
    let e = RuleSet::with_text("cause x\nany y\nname nope\n", "f")
        .unwrap_err()
        .to_string();
    assert!(e.contains("FUNCTION=LOCK"), "{e}");
}
