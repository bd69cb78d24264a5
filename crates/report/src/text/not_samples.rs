//! The runs that are not samples (failed, invalid), each with its reason:
//! one list for every kind of experiment, so a start and a boot are
//! excluded from the statistics, and said to be, the same way.

use iolab_store::{ExperimentReport, RunOutcome, RunRecord};

/// Every failed or invalid run, `what` naming them (`starts`, `boots`)
/// and `name` each one (its cell and repetition); flagged cells first, a
/// failed run's last output lines under it.
pub fn render(
    report: &ExperimentReport,
    what: &str,
    name: impl Fn(&RunRecord) -> String,
) -> Option<String> {
    let bad: Vec<&RunRecord> = report
        .runs
        .iter()
        .filter(|r| !r.outcome.is_sample())
        .collect();
    if bad.is_empty() {
        return None;
    }
    let mut out = format!("{what} that are not samples (excluded from every statistic):\n");
    for c in report.cells.iter().filter(|c| c.flagged) {
        out.push_str(&format!(
            "  ! {} {}: {} failed and {} invalid of {} {what}\n",
            c.scheduler,
            c.workload,
            c.failed,
            c.invalid,
            c.stats.n + c.failed + c.invalid
        ));
    }
    for r in bad {
        out.push_str(&format!(
            "  {} {}: {}\n",
            name(r),
            r.outcome.as_str(),
            // Stored with every failed or invalid run; an older store's
            // may lack it.
            r.reason.as_deref().unwrap_or("(no reason stored)")
        ));
        if r.outcome == RunOutcome::Failed {
            let tail = r.extra["output_tail"].as_str().unwrap_or("");
            let tail = iolab_sys::text::last_lines(tail, 3);
            for line in tail.lines().filter(|l| !l.trim().is_empty()) {
                out.push_str(&format!("      | {line}\n"));
            }
        }
    }
    Some(out)
}
