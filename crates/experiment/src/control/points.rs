//! The points of a plan: `--vary NAME=V1,V2` crossed with each other, plus
//! any `--point` given whole, each a full assignment of every axis (`-`
//! where a point leaves a setting alone). A point's text is what its runs
//! store as their variant ([`iolab_results::variant`]), so resume, the
//! report and `results compare` find it again.

use serde::{Deserialize, Serialize};

use iolab_results::variant;
use iolab_sys::UsageError;

use iolab_sys::ioprio::IoPrio;

use super::setting::{Knob, Who, UNSET};

/// One point: every axis's value, in axis order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Point(pub Vec<(String, String)>);

impl Point {
    /// `name=value; name=value`, as stored.
    pub fn text(&self) -> String {
        self.0
            .iter()
            .map(|(n, v)| variant::setting(n, v))
            .collect::<Vec<_>>()
            .join(variant::SEP)
    }

    /// The point a run's variant names (see [`Point::text`]).
    pub fn from_text(text: &str) -> Point {
        Point(
            variant::settings_of(text)
                .into_iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        )
    }

    /// The value of `name` when the point sets it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| *v != UNSET)
    }

    /// The settings the point gives a value.
    pub fn set(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0
            .iter()
            .filter(|(_, v)| v != UNSET)
            .map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// True when it sets nothing (the plan's baseline).
    pub fn is_baseline(&self) -> bool {
        self.set().next().is_none()
    }

    /// True when any of its axes is a cgroup file.
    pub fn uses_cgroups(&self) -> bool {
        self.0
            .iter()
            .any(|(n, _)| Knob::parse(n).is_ok_and(|k| k.is_cgroup()))
    }
}

/// `NAME=V1,V2,...` as an axis, each value checked.
pub fn parse_vary(text: &str) -> Result<(String, Vec<String>), UsageError> {
    let (name, values) = text.split_once('=').ok_or_else(|| {
        UsageError::new(format!(
            "--vary {text:?}: expected NAME=V1,V2,... (e.g. wbt_lat_usec=-,0)"
        ))
    })?;
    let knob = Knob::parse(name)?;
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().any(String::is_empty) {
        return Err(UsageError::new(format!(
            "--vary {text:?}: an empty value; use - for \"leave it as it is\""
        )));
    }
    for v in &values {
        knob.check(name, v)?;
    }
    Ok((name.to_string(), values))
}

/// `NAME=V;NAME=V` as one point's settings.
pub fn parse_point(text: &str) -> Result<Vec<(String, String)>, UsageError> {
    let mut out: Vec<(String, String)> = Vec::new();
    for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = part.split_once('=').ok_or_else(|| {
            UsageError::new(format!(
                "--point {text:?}: {part:?} is not NAME=VALUE (settings are separated by ;)"
            ))
        })?;
        Knob::parse(name)?.check(name, value)?;
        if out.iter().any(|(n, _)| n == name) {
            return Err(UsageError::new(format!(
                "--point {text:?} sets {name} twice"
            )));
        }
        out.push((name.to_string(), value.to_string()));
    }
    Ok(out)
}

/// Every point: the baseline (every axis `-`: the system as it is, always
/// measured, as idle always is), the product of `axes` (the first axis
/// varying slowest), then each of `extra`; every point names every axis,
/// `-` where it leaves it alone; points alike are kept once.
pub fn plan_points(axes: &[(String, Vec<String>)], extra: &[Vec<(String, String)>]) -> Vec<Point> {
    let mut names: Vec<String> = axes.iter().map(|(n, _)| n.clone()).collect();
    for p in extra {
        for (n, _) in p {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    let mut out: Vec<Point> = Vec::new();
    let mut push = |values: Vec<(String, String)>| {
        let point = Point(
            names
                .iter()
                .map(|n| {
                    let v = values.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
                    (n.clone(), v.unwrap_or_else(|| UNSET.to_string()))
                })
                .collect(),
        );
        if !out.contains(&point) {
            out.push(point);
        }
    };
    if !axes.is_empty() {
        let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
        for (name, values) in axes {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    values.iter().map(move |v| {
                        let mut c = c.clone();
                        c.push((name.clone(), v.clone()));
                        c
                    })
                })
                .collect();
        }
        for c in combos {
            push(c);
        }
    }
    for p in extra {
        push(p.clone());
    }
    if !out.is_empty() && !out.iter().any(Point::is_baseline) {
        let base = Point(
            names
                .iter()
                .map(|n| (n.clone(), UNSET.to_string()))
                .collect(),
        );
        out.insert(0, base);
    }
    out
}

/// The tunables of the schedulers Linux ships (Documentation/block/):
/// a point's `iosched.X` means nothing to a scheduler without X.
pub fn scheduler_has(scheduler: &str, tunable: &str) -> Option<bool> {
    let list: &[&str] = match scheduler {
        "none" => &[],
        "mq-deadline" => &[
            "read_expire",
            "write_expire",
            "writes_starved",
            "front_merges",
            "fifo_batch",
            "async_depth",
            "prio_aging_expire",
        ],
        "kyber" => &["read_lat_nsec", "write_lat_nsec"],
        "bfq" => &[
            "low_latency",
            "slice_idle",
            "slice_idle_us",
            "strict_guarantees",
            "back_seek_max",
            "back_seek_penalty",
            "fifo_expire_async",
            "fifo_expire_sync",
            "max_budget",
            "timeout_sync",
        ],
        _ => return None,
    };
    Some(list.contains(&tunable))
}

/// What decides, for one cell, whether a setting acts: its scheduler and
/// the state the point does not set itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Acts {
    /// The cell's scheduler.
    pub scheduler: String,
    /// blk-iocost is enabled on the place's disk now (its root's
    /// io.cost.qos says `enable=1`); a point can enable it too.
    pub iocost: bool,
    /// The target's I/O priority when the point sets none (the
    /// experiment's `--ioprio`).
    pub target_ioprio: Option<IoPrio>,
    /// The load's, likewise (`--load-ioprio`).
    pub load_ioprio: Option<IoPrio>,
}

/// One setting a point gives that would do nothing in a cell, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inert {
    /// The scheduler of the cell.
    pub scheduler: String,
    /// The point as asked.
    pub point: String,
    /// The setting's name and value.
    pub setting: String,
    /// Why it does nothing there (the kernel's reason).
    pub reason: String,
}

/// Why `name=value` does nothing in a cell of `point` under `acts`, or
/// `None` when it acts. Each reason is the kernel's: the scheduler that
/// does not read the knob, or the request the rule does not change.
pub fn inert(name: &str, value: &str, point: &Point, acts: &Acts) -> Option<String> {
    if value == UNSET {
        return None;
    }
    let sched = acts.scheduler.as_str();
    let knob = Knob::parse(name).ok()?;
    // The class a group's processes' requests carry into blk-ioprio.
    let class_of = |who: Option<Who>| -> IoPrio {
        let (own, default) = match who {
            Some(Who::Target) => (point.get("target.ioprio"), acts.target_ioprio),
            Some(Who::Load) => (point.get("load.ioprio"), acts.load_ioprio),
            // The root's processes: the flusher's kworkers and the rest of
            // the system, at no class.
            None => (None, None),
        };
        own.and_then(|v| v.parse().ok())
            .or(default)
            .unwrap_or(IoPrio::None)
    };
    let prio_class = |who: Option<Who>| -> Option<String> {
        match sched {
            "bfq" => return Some("BFQ takes a request's class from its task's I/O context (ioprio_set), not from the class blk-ioprio gives the bio".into()),
            "mq-deadline" => {}
            s => return Some(format!("{s} does not order requests by class (only mq-deadline and BFQ read a class)")),
        }
        let class = class_of(who);
        match (value, class) {
            ("no-change", _) => Some("no-change is blk-ioprio's default".into()),
            ("restrict-to-be", c) if !matches!(c, IoPrio::RealTime(_)) => Some(format!(
                "restrict-to-be changes only real-time requests (to best-effort); this group's are {}, which mq-deadline already serves as best-effort or lower",
                class_name(c)
            )),
            ("promote-to-rt" | "none-to-rt", IoPrio::RealTime(_)) => {
                Some(format!("{value}: this group's requests are real-time already"))
            }
            ("idle", IoPrio::Idle) => Some("idle: this group's requests are idle already".into()),
            _ => None,
        }
    };
    match &knob {
        Knob::Iosched(t) => (scheduler_has(sched, t) == Some(false))
            .then(|| format!("{sched} has no tunable {t}")),
        Knob::Queue(q) if q == "wbt_lat_usec" && value == "0" && sched == "bfq" => Some(
            "BFQ turns writeback throttling off when it is selected (bfq_init_queue → wbt_disable_default): wbt_lat_usec is 0 already".into(),
        ),
        Knob::Ioprio(_) if sched == "none" || sched == "kyber" => Some(format!(
            "{sched} does not read I/O priorities (only mq-deadline and BFQ do)"
        )),
        Knob::Group(_, f)
            if (f == "io.bfq.weight" || f == "blkio.bfq.weight" || f == "blkio.weight")
                && sched != "bfq" =>
        {
            Some(format!("{f} is BFQ's group weight; {sched} does not read it"))
        }
        Knob::Group(_, f) if f == "io.weight" && !iocost_on(point, acts) => Some(
            "io.weight is blk-iocost's, and io.cost is not enabled on the disk (set cg.root.io.cost.qos=enable=1 in the point)".into(),
        ),
        Knob::Group(who, f) if f == "io.prio.class" || f == "blkio.prio.class" => {
            prio_class(Some(*who))
        }
        Knob::Root(f) if f == "blkio.prio.class" => prio_class(None),
        _ => None,
    }
}

fn iocost_on(point: &Point, acts: &Acts) -> bool {
    match point.get("cg.root.io.cost.qos") {
        Some(v) => v.split_whitespace().any(|kv| kv == "enable=1"),
        None => acts.iocost,
    }
}

fn class_name(p: IoPrio) -> String {
    match p {
        IoPrio::None => "of no class".into(),
        other => format!("{other}"),
    }
}

/// The points as a cell under `acts` runs them: every setting that does
/// nothing there (see [`inert`]) is `-`, the points that then match are
/// run once, and each setting so dropped is returned with its reason (said
/// before the plan runs and stored with it).
pub fn for_cell(points: &[Point], acts: &Acts) -> (Vec<Point>, Vec<Inert>) {
    let mut out: Vec<Point> = Vec::new();
    let mut dropped = Vec::new();
    for p in points {
        let q = Point(
            p.0.iter()
                .map(|(n, v)| match inert(n, v, p, acts) {
                    Some(reason) => {
                        dropped.push(Inert {
                            scheduler: acts.scheduler.clone(),
                            point: p.text(),
                            setting: variant::setting(n, v),
                            reason,
                        });
                        (n.clone(), UNSET.to_string())
                    }
                    None => (n.clone(), v.clone()),
                })
                .collect(),
        );
        if !out.contains(&q) {
            out.push(q);
        }
    }
    (out, dropped)
}

/// The points as `scheduler` runs them with nothing else known (no
/// io.cost, no class set outside the points): see [`for_cell`].
pub fn for_scheduler(points: &[Point], scheduler: &str) -> Vec<Point> {
    for_cell(
        points,
        &Acts {
            scheduler: scheduler.to_string(),
            ..Acts::default()
        },
    )
    .0
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn axes_cross_and_points_join_with_every_axis_named() {
        let axes = vec![
            parse_vary("wbt_lat_usec=-,0").unwrap(),
            parse_vary("cg.target.io.weight=100,1000").unwrap(),
        ];
        let extra = vec![parse_point("cg.load.io.prio.class=idle").unwrap()];
        let p = plan_points(&axes, &extra);
        let texts: Vec<String> = p.iter().map(Point::text).collect();
        assert_eq!(
            texts,
            [
                "wbt_lat_usec=-; cg.target.io.weight=-; cg.load.io.prio.class=-",
                "wbt_lat_usec=-; cg.target.io.weight=100; cg.load.io.prio.class=-",
                "wbt_lat_usec=-; cg.target.io.weight=1000; cg.load.io.prio.class=-",
                "wbt_lat_usec=0; cg.target.io.weight=100; cg.load.io.prio.class=-",
                "wbt_lat_usec=0; cg.target.io.weight=1000; cg.load.io.prio.class=-",
                "wbt_lat_usec=-; cg.target.io.weight=-; cg.load.io.prio.class=idle",
            ]
        );
        assert!(p.iter().all(Point::uses_cgroups));
        assert!(p.iter().all(|q| Point::from_text(&q.text()) == *q));
        assert_eq!(p[3].get("wbt_lat_usec"), Some("0"));
        assert_eq!(p[1].get("wbt_lat_usec"), None);
        assert!(p[0].is_baseline(), "the baseline is added, first");
        assert!(!p[1].is_baseline());
        assert!(plan_points(&[parse_vary("read_ahead_kb=-,128").unwrap()], &[])[0].is_baseline());
    }

    #[test]
    fn a_tunable_the_scheduler_lacks_collapses_its_points() {
        let p = plan_points(&[parse_vary("iosched.low_latency=1,0").unwrap()], &[]);
        assert_eq!(for_scheduler(&p, "bfq").len(), 3, "with the baseline");
        let dl = for_scheduler(&p, "mq-deadline");
        assert_eq!(dl.len(), 1);
        assert_eq!(dl[0].text(), "iosched.low_latency=-");
    }

    #[test]
    fn bad_axes_are_refused_in_one_line() {
        for bad in [
            "wbt_lat_usec",
            "wbt_lat_usec=0,",
            "cg.load.io.weight=0",
            "nope=1",
        ] {
            let e = parse_vary(bad).unwrap_err().to_string();
            assert!(!e.contains('\n'), "{e}");
        }
        assert!(parse_point("wbt_lat_usec=0;wbt_lat_usec=1").is_err());
    }

    #[test]
    fn settings_a_cell_would_not_act_on_collapse_with_the_reason() {
        let p = plan_points(
            &[parse_vary("cg.load.io.prio.class=-,idle,restrict-to-be").unwrap()],
            &[],
        );
        let at = |s: &str, load: Option<IoPrio>| Acts {
            scheduler: s.into(),
            load_ioprio: load,
            ..Acts::default()
        };
        // BFQ: the class is the task's; everything collapses to the baseline.
        let (bfq, why) = for_cell(&p, &at("bfq", None));
        assert_eq!(bfq.len(), 1);
        assert_eq!(why.len(), 2);
        assert!(why[0].reason.contains("I/O context"), "{why:?}");
        // mq-deadline: idle acts; restrict-to-be on a load of no class not.
        let (dl, why) = for_cell(&p, &at("mq-deadline", None));
        assert_eq!(dl.len(), 2);
        assert_eq!(why.len(), 1);
        assert_eq!(why[0].setting, "cg.load.io.prio.class=restrict-to-be");
        // ... but it does on a real-time load.
        let (dl_rt, why) = for_cell(&p, &at("mq-deadline", Some(IoPrio::RealTime(4))));
        assert_eq!((dl_rt.len(), why.len()), (3, 0));
        // Weights: BFQ's only under BFQ; io.weight only with io.cost on.
        let w = plan_points(
            &[parse_vary("cg.target.io.bfq.weight=-,1000").unwrap()],
            &[
                parse_point("cg.target.io.weight=1000").unwrap(),
                parse_point("cg.target.io.weight=1000;cg.root.io.cost.qos=enable=1").unwrap(),
            ],
        );
        assert_eq!(for_cell(&w, &at("bfq", None)).0.len(), 3);
        let (dl, why) = for_cell(&w, &at("mq-deadline", None));
        assert_eq!(dl.len(), 2, "{dl:?}");
        assert!(why.iter().any(|i| i.reason.contains("blk-iocost")));
        let mut on = at("mq-deadline", None);
        on.iocost = true;
        assert_eq!(for_cell(&w, &on).0.len(), 3);
        // wbt off under BFQ is BFQ's default; priorities mean nothing to
        // kyber.
        let q = plan_points(
            &[
                parse_vary("wbt_lat_usec=-,0").unwrap(),
                parse_vary("load.ioprio=-,idle").unwrap(),
            ],
            &[],
        );
        assert_eq!(for_cell(&q, &at("bfq", None)).0.len(), 2);
        assert_eq!(for_cell(&q, &at("kyber", None)).0.len(), 2);
        assert_eq!(for_cell(&q, &at("mq-deadline", None)).0.len(), 4);
    }
}
