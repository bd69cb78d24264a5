//! The points of a plan: `--vary NAME=V1,V2` crossed with each other, plus
//! any `--point` given whole, each a full assignment of every axis (`-`
//! where a point leaves a setting alone). A point's text is what its runs
//! store as their variant ([`iolab_results::variant`]), so resume, the
//! report and `results compare` find it again.

use serde::{Deserialize, Serialize};

use iolab_results::variant;
use iolab_sys::UsageError;

use super::setting::{Knob, UNSET};

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

/// The points as `scheduler` runs them: an `iosched.X` it does not have
/// is `-` there, and the points that then match are run once.
pub fn for_scheduler(points: &[Point], scheduler: &str) -> Vec<Point> {
    let mut out: Vec<Point> = Vec::new();
    for p in points {
        let q = Point(
            p.0.iter()
                .map(|(n, v)| match n.strip_prefix("iosched.") {
                    Some(t) if scheduler_has(scheduler, t) == Some(false) => {
                        (n.clone(), UNSET.to_string())
                    }
                    _ => (n.clone(), v.clone()),
                })
                .collect(),
        );
        if !out.contains(&q) {
            out.push(q);
        }
    }
    out
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
}
