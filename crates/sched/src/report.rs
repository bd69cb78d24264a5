//! From an [`Analysis`] to report rows: select tasks (`--comm`, `--pid`,
//! `--work`), group them (`--by-comm`), summarise their samples and sort
//! (`--sort`, perf's keys). Renderers in [`crate::table`] only read rows.

use std::collections::BTreeMap;

use regex::Regex;
use serde::Serialize;

use crate::analyze::Analysis;
use crate::event::Tid;
use crate::group::normalize_comm;
use crate::summary::{DelaySummary, Span};
use crate::task::{DelayKind, DelaySample, TaskStats};
use crate::work::Symbols;
use crate::SchedError;

/// Which delays a pooled statistic (summary, histogram, compare) uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DelaySelect {
    /// Wakeup and preemption delays: every wait for a CPU (what `perf
    /// sched latency` averages, and the seed's "became eligible to run →
    /// running").
    #[default]
    All,
    /// Wakeup → switch in only.
    Wakeup,
    /// Preempted (runnable) → switch in only.
    Preempt,
}

impl DelaySelect {
    /// Parses `all`, `wakeup` or `preempt`.
    pub fn parse(s: &str) -> Result<DelaySelect, SchedError> {
        match s {
            "all" => Ok(DelaySelect::All),
            "wakeup" => Ok(DelaySelect::Wakeup),
            "preempt" => Ok(DelaySelect::Preempt),
            _ => Err(SchedError::usage(format!(
                "unknown delay kind {s:?}: expected all, wakeup or preempt"
            ))),
        }
    }

    /// Whether a sample of `kind` counts.
    pub fn admits(self, kind: DelayKind) -> bool {
        match self {
            DelaySelect::All => true,
            DelaySelect::Wakeup => kind == DelayKind::Wakeup,
            DelaySelect::Preempt => kind == DelayKind::Preempt,
        }
    }
}

/// `--sort` keys: perf's (`pid`, `avg`, `max`, `switch`, `runtime`) plus
/// `median`, `p99` and `comm`. Numbers sort descending, names ascending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// Task id (ascending).
    Pid,
    /// Average delay.
    Avg,
    /// Maximum delay.
    Max,
    /// Switches.
    Switch,
    /// Run time.
    Runtime,
    /// Median delay.
    Median,
    /// 99th percentile delay.
    P99,
    /// Name (ascending).
    Comm,
}

impl SortKey {
    /// Parses a comma-separated list such as `avg,max` (perf's default).
    pub fn parse_list(s: &str) -> Result<Vec<SortKey>, SchedError> {
        s.split(',')
            .map(|k| match k.trim() {
                "pid" => Ok(SortKey::Pid),
                "avg" => Ok(SortKey::Avg),
                "max" => Ok(SortKey::Max),
                "switch" | "switches" => Ok(SortKey::Switch),
                "runtime" => Ok(SortKey::Runtime),
                "median" => Ok(SortKey::Median),
                "p99" => Ok(SortKey::P99),
                "comm" => Ok(SortKey::Comm),
                other => Err(SchedError::usage(format!(
                    "unknown sort key {other:?}: expected a comma-separated list of avg, max, median, p99, switch, runtime, pid, comm"
                ))),
            })
            .collect()
    }
}

/// Which tasks and samples a report covers.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Tasks whose (latest) name matches.
    pub comm: Option<Regex>,
    /// The task with this id (a tid: every thread has its own).
    pub tid: Option<Tid>,
    /// Only samples after which the task ran a work function whose name
    /// matches (workqueue workers), e.g. `z_erofs`.
    pub work: Option<Regex>,
    /// Delay kinds for pooled statistics.
    pub delay: DelaySelect,
}

/// One line of the report: a task, or a group of tasks (`--by-comm`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// `comm:tid` for a task, `group:(N)` for N merged tasks (perf's
    /// notation).
    pub task: String,
    /// Name, or group name.
    pub comm: String,
    /// Task id (absent for groups).
    pub tid: Option<Tid>,
    /// Tasks in the row.
    pub tasks: usize,
    /// Time on CPU, ns.
    pub runtime_ns: u64,
    /// Switch ins.
    pub switches: u64,
    /// Every delay (wakeup and preempt): perf's "Avg/Max delay".
    pub delay: DelaySummary,
    /// Wakeup → switch in.
    pub wakeup: DelaySummary,
    /// Preempted → switch in.
    pub preempt: DelaySummary,
}

impl Selection {
    fn task_matches(&self, t: &TaskStats) -> bool {
        self.comm.as_ref().is_none_or(|re| re.is_match(&t.comm))
            && self.tid.is_none_or(|tid| tid == t.tid)
    }

    fn sample_matches(&self, a: &Analysis, s: &DelaySample, symbols: &Symbols) -> bool {
        self.work.as_ref().is_none_or(|re| {
            s.work
                .and_then(|i| a.works.get(i as usize))
                .is_some_and(|w| re.is_match(&w.label(symbols)))
        })
    }

    /// The selected tasks with their selected samples.
    pub fn tasks<'a>(
        &'a self,
        a: &'a Analysis,
        symbols: &'a Symbols,
    ) -> impl Iterator<Item = (&'a TaskStats, Vec<&'a DelaySample>)> + 'a {
        a.tasks
            .iter()
            .filter(|t| self.task_matches(t))
            .map(move |t| {
                let samples: Vec<&DelaySample> = t
                    .samples
                    .iter()
                    .filter(|s| self.sample_matches(a, s, symbols))
                    .collect();
                (t, samples)
            })
            .filter(move |(_, s)| self.work.is_none() || !s.is_empty())
    }

    /// Every selected delay (of the selected kinds), pooled: for the
    /// seed's summary table, histograms and compare.
    pub fn pooled(&self, a: &Analysis, symbols: &Symbols) -> Vec<Span> {
        self.tasks(a, symbols)
            .flat_map(|(_, ss)| ss.into_iter())
            .filter(|s| self.delay.admits(s.kind))
            .map(|s| (s.ready_ns, s.start_ns))
            .collect()
    }
}

fn spans<'a>(
    samples: impl Iterator<Item = &'a &'a DelaySample> + 'a,
    kind: Option<DelayKind>,
) -> impl Iterator<Item = Span> + 'a {
    samples
        .filter(move |s| kind.is_none_or(|k| s.kind == k))
        .map(|s| (s.ready_ns, s.start_ns))
}

/// Builds the rows: one per selected task, or per name group with
/// `by_comm`, sorted by `sort` (ties broken by task name).
pub fn rows(
    a: &Analysis,
    sel: &Selection,
    symbols: &Symbols,
    by_comm: bool,
    sort: &[SortKey],
) -> Vec<Row> {
    let selected: Vec<(&TaskStats, Vec<&DelaySample>)> = sel.tasks(a, symbols).collect();
    let mut rows: Vec<Row> = if by_comm {
        let mut groups: BTreeMap<String, Vec<&(&TaskStats, Vec<&DelaySample>)>> = BTreeMap::new();
        for entry in &selected {
            groups
                .entry(normalize_comm(&entry.0.comm))
                .or_default()
                .push(entry);
        }
        groups
            .into_iter()
            .map(|(name, members)| {
                let all = || members.iter().flat_map(|(_, ss)| ss.iter());
                Row {
                    task: if members.len() == 1 {
                        members[0].0.label()
                    } else {
                        format!("{name}:({})", members.len())
                    },
                    tid: (members.len() == 1).then(|| members[0].0.tid),
                    comm: name,
                    tasks: members.len(),
                    runtime_ns: members.iter().map(|(t, _)| t.runtime_ns).sum(),
                    switches: members.iter().map(|(t, _)| t.switches).sum(),
                    delay: DelaySummary::of(spans(all(), None)),
                    wakeup: DelaySummary::of(spans(all(), Some(DelayKind::Wakeup))),
                    preempt: DelaySummary::of(spans(all(), Some(DelayKind::Preempt))),
                }
            })
            .collect()
    } else {
        selected
            .iter()
            .map(|(t, ss)| Row {
                task: t.label(),
                comm: t.comm.clone(),
                tid: Some(t.tid),
                tasks: 1,
                runtime_ns: t.runtime_ns,
                switches: t.switches,
                delay: DelaySummary::of(spans(ss.iter(), None)),
                wakeup: DelaySummary::of(spans(ss.iter(), Some(DelayKind::Wakeup))),
                preempt: DelaySummary::of(spans(ss.iter(), Some(DelayKind::Preempt))),
            })
            .collect()
    };
    sort_rows(&mut rows, sort);
    rows
}

/// Sorts rows by `keys` (ties broken by task name).
pub(crate) fn sort_rows(rows: &mut [Row], keys: &[SortKey]) {
    use std::cmp::Ordering;
    let f = |x: Option<f64>| x.unwrap_or(-1.0);
    let u = |x: Option<u64>| x.map_or(-1.0, |v| v as f64);
    rows.sort_by(|l, r| {
        for k in keys {
            let o = match k {
                SortKey::Pid => l.tid.cmp(&r.tid),
                SortKey::Comm => l.comm.cmp(&r.comm),
                SortKey::Avg => f(r.delay.avg_ns).total_cmp(&f(l.delay.avg_ns)),
                SortKey::Median => f(r.delay.median_ns).total_cmp(&f(l.delay.median_ns)),
                SortKey::Max => u(r.delay.max_ns).total_cmp(&u(l.delay.max_ns)),
                SortKey::P99 => u(r.delay.p99_ns).total_cmp(&u(l.delay.p99_ns)),
                SortKey::Switch => r.switches.cmp(&l.switches),
                SortKey::Runtime => r.runtime_ns.cmp(&l.runtime_ns),
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        l.task.cmp(&r.task)
    });
}
