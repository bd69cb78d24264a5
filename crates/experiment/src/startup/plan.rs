//! The order of runs. A cell is one scheduler × point × workload; the
//! background load keeps running across the repetitions a cell runs in
//! one go, as in the thesis and the S suite: the load is started and
//! warmed up once per visit of a cell instead of once per start, which is
//! what those suites measured and what makes a 4 × 4 × 5 matrix
//! affordable.
//!
//! Those suites ran each cell's repetitions back to back, cell after
//! cell, which ties a setting to the time it ran: a drift of the machine
//! (the device's temperature or garbage collection, a daemon waking up,
//! the filesystem filling) reads as a difference between settings. A plan
//! with points therefore runs in rounds (`--rounds`, default `--reps`):
//! the repetitions are split into consecutive shares, round k runs the
//! k-th share of every cell, and within a round the cells (idle ones too,
//! every scheduler and point together) come in an order shuffled by a
//! seeded generator (`--order-seed`, stored with the experiment, so
//! `--resume` replays the same order). The price is one load start and
//! warm-up per cell per round. Without points (and without `--rounds` or
//! `--order-seed`) the plan is one round in the fixed order: scheduler,
//! then workload, `idle` first.

use super::config::StartupConfig;
use crate::engine::Cell;

/// Plans the matrix over `schedulers` × the configuration's points ×
/// workloads, in [`StartupConfig::rounds`] rounds, each shuffled when the
/// configuration has an order seed, skipping repetitions `done` says are
/// complete (`--resume`; it is given the point's text). The order depends
/// on the configuration only, so a resumed plan runs what is left in the
/// order it had.
pub fn plan(
    schedulers: &[String],
    cfg: &StartupConfig,
    done: impl Fn(&str, &str, u32, Option<&str>) -> bool,
) -> Vec<Cell> {
    let cells = cells(schedulers, cfg);
    let rounds = cfg.rounds();
    let mut rng = cfg.order_seed.map(SplitMix64);
    let mut out = Vec::new();
    for round in 0..rounds {
        let mut order: Vec<usize> = (0..cells.len()).collect();
        if let Some(rng) = rng.as_mut() {
            rng.shuffle(&mut order);
        }
        for i in order {
            let (s, point, w) = &cells[i];
            let reps: Vec<u32> = reps_of_round(cfg.reps, rounds, round)
                .filter(|r| !done(s, w, *r, point.as_deref()))
                .collect();
            if !reps.is_empty() {
                out.push(Cell {
                    scheduler: s.clone(),
                    workload: w.clone(),
                    reps,
                    variant: point.clone(),
                });
            }
        }
    }
    out
}

/// The line said before the runs when the order is not the fixed one:
/// how many rounds, and the seed that repeats it.
pub fn order_line(cfg: &StartupConfig) -> Option<String> {
    let rounds = cfg.rounds();
    let (rounds_text, each) = if rounds == 1 {
        ("1 round".to_string(), "")
    } else {
        (
            format!("{rounds} rounds"),
            " per round, the load started and warmed up anew in each",
        )
    };
    match cfg.order_seed {
        Some(seed) => Some(format!(
            "order: {rounds_text}, cells shuffled{each} (seed {seed}; --rounds {rounds} --order-seed {seed} repeats it)"
        )),
        None if rounds > 1 => Some(format!(
            "order: {rounds_text}, cells in the fixed order{each}"
        )),
        None => None,
    }
}

/// A seed for a new experiment's order: random, and below 2^53 so it
/// reads back exactly in any JSON reader (a JavaScript number). The
/// standard library's `RandomState` is keyed from the operating system's
/// randomness; the time and process id only make each call differ.
pub fn new_order_seed() -> u64 {
    use std::hash::BuildHasher;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::collections::hash_map::RandomState::new().hash_one((now, std::process::id()))
        & ((1 << 53) - 1)
}

/// Every (scheduler, point, workload) in the fixed order: scheduler, then
/// point, then workload (`idle` first).
fn cells(schedulers: &[String], cfg: &StartupConfig) -> Vec<(String, Option<String>, String)> {
    let mut out = Vec::new();
    for s in schedulers {
        let points: Vec<Option<String>> = if cfg.points.is_empty() {
            vec![None]
        } else {
            cfg.points_for(s).0.iter().map(|p| Some(p.text())).collect()
        };
        for point in points {
            for w in cfg.workloads_with_idle() {
                out.push((s.clone(), point.clone(), w));
            }
        }
    }
    out
}

/// Round `round`'s (from 0) repetitions of `reps` split into `rounds`
/// consecutive shares, the first `reps % rounds` one longer: 6 in 3 are
/// 1–2, 3–4, 5–6; 7 in 3 are 1–3, 4–5, 6–7.
fn reps_of_round(reps: u32, rounds: u32, round: u32) -> std::ops::RangeInclusive<u32> {
    let rounds = rounds.max(1);
    let (base, longer) = (reps / rounds, reps % rounds);
    let first = round * base + round.min(longer) + 1;
    let len = base + u32::from(round < longer);
    first..=first + len - 1
}

/// SplitMix64 (Steele, Lea and Flood, 2014), written out so that a stored
/// seed gives the same order on every platform and with every version of
/// iolab's dependencies: `rand`'s `SmallRng` is documented as not
/// portable, `StdRng` may change between its versions, and its `shuffle`
/// is not promised stable either.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` ≥ 1) by Lemire's multiply-shift: its bias,
    /// below n / 2^64, is immaterial for ordering a plan's cells.
    fn below(&mut self, n: usize) -> usize {
        let wide = u128::from(self.next()) * n as u128;
        // The high 64 bits of the product, below n by construction.
        usize::try_from(wide >> 64).unwrap_or(0)
    }

    /// Fisher–Yates: every order of `v` as likely.
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::config::tests::cfg;
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    fn scheds() -> Vec<String> {
        vec!["none".into(), "bfq".into()]
    }

    fn total_runs(cells: &[Cell]) -> usize {
        cells.iter().map(|c| c.reps.len()).sum()
    }

    /// Two points (read_ahead_kb left alone and 128), three rounds of one
    /// repetition each, seed `seed`.
    fn with_points(seed: u64) -> StartupConfig {
        let mut c = cfg();
        let axes = vec![crate::control::points::parse_vary("read_ahead_kb=-,128").unwrap()];
        c.points = crate::control::points::plan_points(&axes, &[]);
        c.rounds = Some(3);
        c.order_seed = Some(seed);
        c
    }

    fn key(c: &Cell) -> (String, String, String) {
        (
            c.scheduler.clone(),
            c.variant.clone().unwrap_or_default(),
            c.workload.clone(),
        )
    }

    #[test]
    fn idle_first_once_and_every_cell_planned() {
        let p = plan(&scheds(), &cfg(), |_, _, _, _| false);
        let names: Vec<_> = p
            .iter()
            .map(|c| format!("{}/{}", c.scheduler, c.workload))
            .collect();
        assert_eq!(
            names,
            [
                "none/idle",
                "none/1r",
                "none/1w",
                "bfq/idle",
                "bfq/1r",
                "bfq/1w"
            ]
        );
        assert_eq!(total_runs(&p), 18);
    }

    #[test]
    fn resume_skips_completed_reps_and_cells() {
        let p = plan(&scheds(), &cfg(), |s, w, r, _| {
            s == "none" && (w == "idle" || (w == "1r" && r < 3))
        });
        assert_eq!(p[0].workload, "1r");
        assert_eq!(p[0].reps, [3]);
        assert_eq!(total_runs(&p), 13);
    }

    #[test]
    fn without_points_one_round_in_the_fixed_order() {
        let c = cfg();
        assert_eq!(c.rounds(), 1);
        assert!(order_line(&c).is_none());
        let p = plan(&scheds(), &c, |_, _, _, _| false);
        assert!(p.iter().all(|c| c.reps == [1, 2, 3] && c.variant.is_none()));
    }

    #[test]
    fn each_round_visits_every_cell_once_with_its_own_reps() {
        let c = with_points(7);
        let p = plan(&scheds(), &c, |_, _, _, _| false);
        // 2 schedulers × 2 points × 3 workloads, in each of 3 rounds.
        assert_eq!(p.len(), 3 * 12);
        let all: BTreeSet<_> = p.iter().map(key).collect();
        assert_eq!(all.len(), 12);
        let mut reps: BTreeMap<_, Vec<u32>> = BTreeMap::new();
        for (round, cells) in p.chunks(12).enumerate() {
            let seen: BTreeSet<_> = cells.iter().map(key).collect();
            assert_eq!(seen, all, "round {round}");
            let want = u32::try_from(round).unwrap() + 1;
            assert!(cells.iter().all(|c| c.reps == [want]), "round {round}");
            for c in cells {
                reps.entry(key(c)).or_default().extend(&c.reps);
            }
        }
        assert!(reps.values().all(|r| *r == [1, 2, 3]), "{reps:?}");
        assert_eq!(total_runs(&p), 36);
    }

    #[test]
    fn the_order_is_the_seeds() {
        let order = |seed| -> Vec<_> {
            plan(&scheds(), &with_points(seed), |_, _, _, _| false)
                .iter()
                .map(key)
                .collect()
        };
        assert_eq!(order(7), order(7));
        assert_ne!(order(7), order(8));
        // Not the fixed order, and each round its own.
        let fixed: Vec<_> = {
            let mut c = with_points(7);
            c.order_seed = None;
            plan(&scheds(), &c, |_, _, _, _| false)
                .iter()
                .map(key)
                .collect()
        };
        assert_ne!(order(7), fixed);
        let o = order(7);
        assert_ne!(o[..12], o[12..24]);
        // Pinned: the generator and shuffle are iolab's own, so a stored
        // seed gives this order on every platform and build.
        assert_eq!(
            o[..3],
            [
                ("bfq".into(), "read_ahead_kb=-".into(), "1w".into()),
                ("bfq".into(), "read_ahead_kb=-".into(), "1r".into()),
                ("bfq".into(), "read_ahead_kb=128".into(), "1w".into()),
            ]
        );
    }

    #[test]
    fn a_resumed_plan_keeps_the_order_of_what_is_left() {
        let c = with_points(42);
        let full = plan(&scheds(), &c, |_, _, _, _| false);
        // Everything of round 1, and round 2 of the bfq cells, is stored.
        let done = |s: &str, _: &str, r: u32, _: Option<&str>| r == 1 || (r == 2 && s == "bfq");
        let resumed = plan(&scheds(), &c, done);
        let left: Vec<Cell> = full
            .into_iter()
            .filter(|c| !done(&c.scheduler, &c.workload, c.reps[0], c.variant.as_deref()))
            .collect();
        assert_eq!(resumed, left);
        assert_eq!(total_runs(&resumed), 6 + 12);
    }

    #[test]
    fn splitmix64_is_the_reference() {
        // Vigna's splitmix64.c from the seed 1234567.
        let mut r = SplitMix64(1_234_567);
        assert_eq!(r.next(), 6_457_827_717_110_365_317);
        assert_eq!(r.next(), 3_203_168_211_198_807_973);
        let mut v: Vec<u32> = (0..50).collect();
        r.shuffle(&mut v);
        let mut sorted = v.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..50).collect::<Vec<_>>());
        assert!((0..1000).all(|_| r.below(3) < 3));
    }

    #[test]
    fn reps_split_into_consecutive_shares() {
        let shares = |reps, rounds| -> Vec<Vec<u32>> {
            (0..rounds)
                .map(|k| reps_of_round(reps, rounds, k).collect())
                .collect()
        };
        assert_eq!(shares(5, 5), [[1], [2], [3], [4], [5]]);
        assert_eq!(shares(6, 3), [[1, 2], [3, 4], [5, 6]]);
        assert_eq!(shares(7, 3), [vec![1, 2, 3], vec![4, 5], vec![6, 7]]);
        assert_eq!(shares(4, 1), [[1, 2, 3, 4]]);
    }

    #[test]
    fn rounds_with_several_reps_each_and_the_order_line() {
        let mut c = with_points(5);
        c.reps = 5;
        c.rounds = Some(2);
        let p = plan(&scheds(), &c, |_, _, _, _| false);
        assert_eq!(p.len(), 24);
        assert!(p[..12].iter().all(|c| c.reps == [1, 2, 3]));
        assert!(p[12..].iter().all(|c| c.reps == [4, 5]));
        assert_eq!(
            order_line(&c).unwrap(),
            "order: 2 rounds, cells shuffled per round, the load started and warmed up anew in each (seed 5; --rounds 2 --order-seed 5 repeats it)"
        );
        assert!(new_order_seed() < 1 << 53);
    }
}
