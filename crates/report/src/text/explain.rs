//! "Where the extra time went": per scheduler and workload, the top causes
//! of the change in time from the same scheduler's idle starts (means over
//! the stored `explain` attributions), e.g.
//! `mq-deadline  1w  +4.1 s: 62 % journal commit wait`.

use iolab_explain::describe_diff;

use crate::view::explain::CauseStack;

/// The table; `None` when no loaded cell has an idle cell to compare with.
pub fn render_causes(stacks: &[CauseStack]) -> Option<String> {
    let mut rows = vec![vec![
        "scheduler".to_string(),
        "workload".to_string(),
        "n".to_string(),
        "time vs idle: top causes of the change".to_string(),
    ]];
    for c in stacks.iter().filter(|c| c.workload != "idle") {
        let Some(idle) = stacks
            .iter()
            .find(|i| i.scheduler == c.scheduler && i.workload == "idle")
        else {
            continue;
        };
        let d = c.mean_ns.diff(&idle.mean_ns);
        // A censored start was killed at the timeout: its attribution ends
        // there, so the change is a lower bound (the matrix's [k/n]).
        let mut text = describe_diff(&d, 3);
        if c.censored > 0 {
            text.push_str(&format!(" [{}/{} timed out]", c.censored, c.n));
        }
        rows.push(vec![
            c.scheduler.clone(),
            c.workload.clone(),
            c.n.to_string(),
            text,
        ]);
    }
    if rows.len() == 1 {
        return None;
    }
    Some(format!(
        "Where the extra time went (iolab explain, mean per start, vs idle):\n{}",
        iolab_sys::text::align_columns(&rows, usize::MAX)
    ))
}
