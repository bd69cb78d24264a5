//! The boot variants `iolab boot` compares: the one registry of their
//! names, read by the command line (its help and its parser), by the
//! experiment (what the guest's initramfs hands over to for each:
//! `/sbin/init` itself for `none`, or `iolab boot-init` with treadahead's
//! options before it; a board's prefetch line) and by the report (what is
//! compared with what, what is made once, what was explained).

use iolab_sys::UsageError;

/// Where the recording boot leaves the list, in the root image.
pub const LIST: &str = "/var/lib/iolab/boot.list";
/// Where the helper writes its report (tmpfs; the guest copies it out).
pub const REPORT: &str = "/run/iolab-helper.json";
/// The file the guest's init makes at the boot-done marker.
pub const DONE: &str = "/run/boot-done";
/// The variant that records the list.
pub const RECORD: &str = "record";
/// A plain boot before the measured ones, not compared.
pub const WARMUP: &str = "warmup";

/// What an explained boot's stored variant starts with
/// (`explain:idle@bfq`): the variant booted once more with its processes
/// under `iolab explain` in the guest, never compared (`boot --explain`).
pub const EXPLAIN_PREFIX: &str = "explain:";

/// The variant an explained boot explains (`explain:idle@bfq` →
/// `idle@bfq`); `None` for every other boot.
pub fn explained(variant: &str) -> Option<&str> {
    variant.strip_prefix(EXPLAIN_PREFIX)
}

/// The file an explained boot's tracer makes once it follows the boot's
/// processes; its prefetch (unless held before init) waits for it, so it
/// does not run ahead of a boot the tracer's start holds back.
pub const EXPLAIN_READY: &str = "/run/iolab-explain-ready";

/// The variant a boot runs as: an explained boot's own, or itself.
pub fn booted(variant: &str) -> &str {
    explained(variant).unwrap_or(variant)
}

/// One option of a prefetch variant: its name, seed 001's treadahead
/// flag, and boot-init's arguments.
const OPTIONS: &[(&str, &str, &[&str])] = &[
    ("background", "-e", &[]),
    ("before", "(default)", &["--before", "--budget", "120s"]),
    ("idle", "-i", &["--ioprio", "idle"]),
    ("be7", "-j", &["--ioprio", "be:7"]),
    // Real-time class, level 4: what Android's init.rc gives the services
    // a boot waits on (`ioprio rt 4`: mediaserver, camera providers), so
    // the prefetch's reads go ahead of every best-effort one.
    ("rt4", "(init.rc's ioprio rt 4)", &["--ioprio", "rt:4"]),
    ("nice19", "-p", &["--nice", "19"]),
    ("sched-none", "-n", &["--scheduler", "none"]),
    ("disk-order", "(sort)", &["--order", "disk"]),
    // The image whose listed files were rewritten in the list's order.
    ("relayout", "-w", &[]),
];

/// The boot that rewrites the recorded image's listed files in the list's
/// order (`iolab relayout --force`, on iolab's own copy of the image), for
/// the variants with `relayout`.
pub const RELAYOUT_WRITE: &str = "relayout-write";

/// True when `variant` boots the relaid-out image.
pub fn uses_relayout(variant: &str) -> bool {
    split(booted(variant)).0.split('+').any(|p| p == "relayout")
}

/// The boot disk's schedulers a variant may name after `@` (`idle@bfq`):
/// the guest's scheduler as an axis (`iolab boot --schedulers`).
pub const SCHEDULERS: &[&str] = &["none", "mq-deadline", "bfq", "kyber"];

/// A variant's prefetch part and the boot disk's scheduler it boots with
/// (`idle@bfq` → (`idle`, `bfq`); none given: the guest's default).
pub fn split(variant: &str) -> (&str, Option<&str>) {
    match variant.split_once('@') {
        Some((v, s)) => (v, Some(s)),
        None => (variant, None),
    }
}

/// What `variant` is compared with: the boot without a prefetch on the
/// same scheduler.
pub fn baseline(variant: &str) -> String {
    match split(variant).1 {
        Some(s) => format!("none@{s}"),
        None => "none".into(),
    }
}

/// True for a plain boot (`none`, `none@bfq`).
pub fn is_plain(variant: &str) -> bool {
    split(variant).0 == "none"
}

/// Boots that must not break: each runs a prefetch that goes wrong, and
/// must still reach the marker, no later than its own reads allow. Name,
/// what goes wrong, boot-init's arguments (the list included), and what
/// the guest does besides (kernel command line).
const SAFETY: &[(&str, &str, &[&str], &str)] = &[
    (
        "safety-missing",
        "the list does not exist",
        &["--prefetch", "/var/lib/iolab/missing.list", "--before"],
        "",
    ),
    (
        "safety-corrupt",
        "the list is a binary (iolab itself)",
        &["--prefetch", "/usr/bin/iolab", "--before"],
        "",
    ),
    (
        "safety-stale",
        "the list names deleted files",
        &["--prefetch", "/var/lib/iolab/stale.list", "--before"],
        "",
    ),
    (
        "safety-kill",
        "the prefetch is SIGKILLed as init starts",
        &["--prefetch", LIST],
        "iolab.kill_helper=1",
    ),
    (
        "safety-kill-sched",
        "the prefetch with --scheduler none is SIGKILLed once it switched the boot disk",
        &["--prefetch", LIST, "--scheduler", "none"],
        "iolab.kill_helper=sched",
    ),
    (
        "safety-splash",
        "the kernel hands init a bare word (Ubuntu's `splash`) before boot-init",
        &["--prefetch", LIST, "--before"],
        "splash",
    ),
    (
        "safety-full",
        "/run (the guard's journal) is full, with --scheduler none",
        &["--prefetch", LIST, "--before", "--scheduler", "none"],
        "iolab.fill_run=1",
    ),
];

/// The boots made once, as needed, never compared: the recording, the
/// relayout and the warm-up.
pub const MADE_ONCE: [&str; 3] = [RECORD, RELAYOUT_WRITE, WARMUP];

/// True for a boot made once (not compared).
pub fn is_made_once(variant: &str) -> bool {
    MADE_ONCE.contains(&variant)
}

/// True for a boot stored apart and never compared: one made once, or
/// an explained one.
pub fn is_apart(variant: &str) -> bool {
    is_made_once(variant) || explained(variant).is_some()
}

/// True for a boot whose prefetch is made to go wrong.
pub fn is_safety(variant: &str) -> bool {
    let v = split(variant).0;
    SAFETY.iter().any(|s| s.0 == v)
}

/// What the guest does besides for `variant` (kernel command line).
pub fn cmdline(variant: &str) -> String {
    if let Some(inner) = explained(variant) {
        return format!("{} iolab.explain=1", cmdline(inner))
            .trim_start()
            .to_string();
    }
    let (v, sched) = split(variant);
    let safety = SAFETY.iter().find(|s| s.0 == v).map_or("", |s| s.3);
    match sched {
        Some(s) => format!("{safety} iolab.sched={s}").trim_start().to_string(),
        None => safety.to_string(),
    }
}

/// What goes wrong in a safety boot.
pub fn safety_what(variant: &str) -> Option<&'static str> {
    let v = split(variant).0;
    SAFETY.iter().find(|s| s.0 == v).map(|s| s.1)
}

/// What a board's prefetch unit does for `variant` (the line `iolab boot
/// --ssh` writes to /var/lib/iolab/boot.next): `none`, `record`, or
/// `prefetch` with iolab prefetch's options.
pub fn board_line(variant: &str) -> Result<String, UsageError> {
    if variant.contains('@') {
        return Err(UsageError::new(format!(
            "boot variant {variant:?} over ssh: a board boots with its own scheduler; give the variant without @SCHEDULER"
        )));
    }
    match variant {
        "none" | WARMUP => return Ok("none".into()),
        RECORD => return Ok("record".into()),
        _ => {}
    }
    let mut line = vec!["prefetch".to_string()];
    for part in variant.split('+') {
        let args: &[&str] = match part {
            "background" => &[],
            "before" => &["--wait=120s"],
            "idle" => &["--ioprio", "idle"],
            "be7" => &["--ioprio", "be:7"],
            "nice19" => &["--nice", "19"],
            "sched-none" => &["--scheduler", "none"],
            "disk-order" => &["--order", "disk"],
            _ => {
                return Err(UsageError::new(format!(
                    "boot variant {variant:?} over ssh: {part} is for the qemu guest only; a board takes none, background, before, idle, be7, nice19, sched-none and disk-order"
                )))
            }
        };
        line.extend(args.iter().map(|s| s.to_string()));
    }
    Ok(line.join(" "))
}

/// The names a user may give: `none`, and prefetch options joined by `+`
/// (`idle+sched-none`); every prefetch runs in the background unless
/// `before` is among them.
pub fn help() -> String {
    let opts: Vec<String> = OPTIONS
        .iter()
        .map(|(n, flag, _)| format!("{n} ({flag})"))
        .collect();
    let safety: Vec<&str> = SAFETY.iter().map(|s| s.0).collect();
    format!(
        "none, prefetch options joined by +: {}; or a safety boot: {}; each optionally @SCHEDULER, the boot disk's ({})",
        opts.join(", "),
        safety.join(", "),
        SCHEDULERS.join(", ")
    )
}

/// boot-init's command line for `variant` (empty: plain /sbin/init).
pub fn init_args(variant: &str) -> Result<Vec<String>, UsageError> {
    let whole = variant;
    let (variant, sched) = split(booted(variant));
    if let Some(s) = sched {
        if !SCHEDULERS.contains(&s) {
            return Err(UsageError::new(format!(
                "boot variant {variant}@{s}: unknown scheduler {s:?}; expected one of {}",
                SCHEDULERS.join(", ")
            )));
        }
        if is_made_once(variant) {
            return Err(UsageError::new(format!(
                "boot variant {variant}@{s}: {variant} is made once, without a scheduler"
            )));
        }
    }
    let base = |mode: &[&str]| -> Vec<String> {
        ["/usr/bin/iolab", "boot-init"]
            .iter()
            .chain(mode)
            .chain(&["--report", REPORT])
            .map(|s| s.to_string())
            .collect()
    };
    let mut v = match variant {
        "none" | WARMUP => return Ok(Vec::new()),
        RECORD => base(&["--record", LIST, "--until-file", DONE, "--max", "600s"]),
        RELAYOUT_WRITE => return Ok(vec!["/sbin/relayout-init".into()]),
        v if is_safety(v) => base(SAFETY.iter().find(|s| s.0 == v).map_or(&[], |s| s.2)),
        _ => {
            let mut v = base(&["--prefetch", LIST]);
            let mut seen = Vec::new();
            for part in variant.split('+') {
                let Some((_, _, args)) = OPTIONS.iter().find(|(n, ..)| *n == part) else {
                    return Err(UsageError::new(format!(
                        "boot variant {variant:?}: unknown part {part:?}; expected {}",
                        help()
                    )));
                };
                if seen.contains(&part) {
                    return Err(UsageError::new(format!(
                        "boot variant {variant:?}: {part} given twice"
                    )));
                }
                // Two parts setting one option (idle and be7: two I/O
                // priorities) contradict each other, whichever they are.
                if let Some(flag) = args.first().filter(|f| f.starts_with("--")) {
                    if let Some(other) = seen.iter().find(|o| {
                        OPTIONS
                            .iter()
                            .any(|(n, _, a)| n == *o && a.first() == Some(flag))
                    }) {
                        return Err(UsageError::new(format!(
                            "boot variant {variant:?}: {other} and {part} both set {flag}; give one"
                        )));
                    }
                }
                seen.push(part);
                v.extend(args.iter().map(|s| s.to_string()));
            }
            v
        }
    };
    if explained(whole).is_some() && !v.iter().any(|a| a == "--before" || a == "--record") {
        v.extend(["--hold-until", EXPLAIN_READY].map(String::from));
    }
    v.extend(["--", "/sbin/init"].map(String::from));
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scheduler_after_at_sets_the_boot_disks_and_keeps_the_variant() {
        assert_eq!(split("idle@bfq"), ("idle", Some("bfq")));
        assert_eq!(baseline("idle@bfq"), "none@bfq");
        assert_eq!(baseline("idle"), "none");
        assert!(is_plain("none@kyber"));
        assert_eq!(cmdline("idle@bfq"), "iolab.sched=bfq");
        assert_eq!(
            cmdline("safety-splash@mq-deadline"),
            "splash iolab.sched=mq-deadline"
        );
        assert_eq!(init_args("idle@bfq").unwrap(), init_args("idle").unwrap());
        assert!(init_args("none@bfq").unwrap().is_empty());
        assert!(init_args("idle@cfq")
            .unwrap_err()
            .to_string()
            .contains("bfq"));
        assert!(init_args("record@bfq").is_err());
        assert!(board_line("idle@bfq").is_err());
        assert!(uses_relayout("relayout@bfq"));
        assert_eq!(
            cmdline("explain:idle@bfq"),
            "iolab.sched=bfq iolab.explain=1"
        );
        assert_eq!(cmdline("explain:none"), "iolab.explain=1");
        let explained = init_args("explain:idle@bfq").unwrap().join(" ");
        assert!(
            explained
                .ends_with("--ioprio idle --hold-until /run/iolab-explain-ready -- /sbin/init"),
            "{explained}"
        );
        assert!(!init_args("explain:before")
            .unwrap()
            .iter()
            .any(|a| a == "--hold-until"));
        assert!(init_args("explain:none").unwrap().is_empty());
        assert!(uses_relayout("explain:relayout"));
    }

    #[test]
    fn variants_become_boot_init_options() {
        assert!(init_args("none").unwrap().is_empty());
        let v = init_args("before+idle").unwrap().join(" ");
        assert_eq!(
            v,
            "/usr/bin/iolab boot-init --prefetch /var/lib/iolab/boot.list --report \
             /run/iolab-helper.json --before --budget 120s --ioprio idle -- /sbin/init"
        );
        let r = init_args(RECORD).unwrap().join(" ");
        assert!(
            r.contains("--record /var/lib/iolab/boot.list --until-file /run/boot-done"),
            "{r}"
        );
    }

    #[test]
    fn a_board_gets_prefetch_options_and_refuses_what_only_the_guest_has() {
        assert_eq!(board_line("none").unwrap(), "none");
        assert_eq!(board_line(RECORD).unwrap(), "record");
        assert_eq!(
            board_line("before+idle").unwrap(),
            "prefetch --wait=120s --ioprio idle"
        );
        assert!(board_line("relayout").is_err());
        assert!(board_line("safety-kill").is_err());
    }

    #[test]
    fn unknown_or_contradictory_variants_are_refused_with_the_names() {
        let e = init_args("idle+fast").unwrap_err().to_string();
        assert!(
            e.contains("\"fast\"") && e.contains("sched-none (-n)"),
            "{e}"
        );
        assert!(init_args("idle+be7").is_err());
        assert!(init_args("idle+idle").is_err());
    }
}
