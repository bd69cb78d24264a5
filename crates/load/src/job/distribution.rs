//! `random_distribution`: which blocks random I/O hits when not every
//! block once (fio(1), "random_distribution"). `zipf:THETA` and
//! `pareto:H` make a few blocks hot; the hot blocks are spread over the
//! file by a hash, as fio does, so "hot" does not mean "at the start".
//! `normal:DEV` centres accesses with a deviation of DEV percent of the
//! file; `zoned:A/R:...` sends A % of accesses to the next R % of the
//! file; `zoned_abs:A/SIZE:...` does the same with sizes.
//! `sequence:B1,B2,...` (fio after 3.33, commit 1629fb0f) visits those
//! block indices in that order, again and again; with
//! `random_sequence_stride=1` each round moves on by the sequence's
//! length (2,0,1, 5,3,4, ...). The n-th I/O of a direction takes the
//! n-th element, as fio counts `io_issues`.

use iolab_sys::cast;
use rand::Rng;
use rand_distr::{Distribution as _, Normal, Zipf};

/// A random-offset distribution over `n` blocks.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum Distribution {
    /// Every block equally likely (fio's `random`).
    Uniform,
    /// Zipf with exponent theta.
    Zipf(f64),
    /// Pareto with power h (0 < h < 1).
    Pareto(f64),
    /// Gaussian, deviation in percent of the file.
    Normal(f64),
    /// `(percent of accesses, percent of the file)` per zone, in order.
    Zoned(Vec<(f64, f64)>),
    /// `(percent of accesses, bytes)` per zone, in order.
    ZonedAbs(Vec<(f64, u64)>),
    /// Block indices visited in order, and whether each round strides
    /// on (`random_sequence_stride`).
    Sequence(Vec<u64>, bool),
}

impl Distribution {
    /// Parses fio's spelling; `size` reads byte sizes.
    pub fn parse(
        v: &str,
        size: impl Fn(&str) -> Result<u64, String>,
    ) -> Result<Distribution, String> {
        let bad = |why: &str| format!("random_distribution={v}: {why}");
        let (kind, arg) = v.split_once(':').unwrap_or((v, ""));
        let num = |what: &str| -> Result<f64, String> {
            arg.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| bad(&format!("expected {kind}:{what}")))
        };
        Ok(match kind {
            "random" => Distribution::Uniform,
            "zipf" => {
                let t = num("THETA, e.g. zipf:1.2")?;
                if t <= 0.0 || t == 1.0 {
                    return Err(bad("theta must be > 0 and not 1 (as in fio)"));
                }
                Distribution::Zipf(t)
            }
            "pareto" => {
                let h = num("H, e.g. pareto:0.9")?;
                if !(h > 0.0 && h < 1.0) {
                    return Err(bad("h must be between 0 and 1"));
                }
                Distribution::Pareto(h)
            }
            "normal" | "gauss" => {
                let d = num("DEV, e.g. normal:10 (percent of the file)")?;
                if !(d > 0.0 && d <= 100.0) {
                    return Err(bad("the deviation is a percentage in (0, 100]"));
                }
                Distribution::Normal(d)
            }
            "zoned" | "zoned_abs" => {
                let abs = kind == "zoned_abs";
                let mut zones: Vec<(f64, String)> = Vec::new();
                for z in arg.split(':').filter(|z| !z.trim().is_empty()) {
                    let (a, r) = z.split_once('/').ok_or_else(|| {
                        bad("expected ACCESS%/RANGE[:ACCESS%/RANGE...], e.g. zoned:60/10:30/20:10/70")
                    })?;
                    let a: f64 = a.trim().parse().map_err(|_| bad(&format!("{a:?} is not a percentage")))?;
                    zones.push((a, r.trim().to_string()));
                }
                if zones.is_empty() {
                    return Err(bad("expected at least one zone, e.g. zoned:60/10:40/90"));
                }
                let total: f64 = zones.iter().map(|z| z.0).sum();
                if (total - 100.0).abs() > 0.01 {
                    return Err(bad(&format!("the access percentages add up to {total}, expected 100")));
                }
                if abs {
                    let mut out = Vec::new();
                    for (a, r) in zones {
                        out.push((a, size(&r)?));
                    }
                    Distribution::ZonedAbs(out)
                } else {
                    // An empty range means "the rest of the file", as in
                    // fio's examples (zoned:50/5:30/15:20/).
                    let given: f64 = zones.iter().filter_map(|z| z.1.parse::<f64>().ok()).sum();
                    let mut out = Vec::new();
                    for (a, r) in zones {
                        let r = if r.is_empty() {
                            100.0 - given
                        } else {
                            r.parse::<f64>().map_err(|_| bad(&format!("{r:?} is not a percentage")))?
                        };
                        out.push((a, r));
                    }
                    let sum: f64 = out.iter().map(|z| z.1).sum();
                    if (sum - 100.0).abs() > 0.01 {
                        return Err(bad(&format!("the ranges add up to {sum} %, expected 100")));
                    }
                    Distribution::Zoned(out)
                }
            }
            "sequence" => {
                let mut blocks = Vec::new();
                for b in arg.split(',') {
                    let b = b.trim();
                    if b.is_empty() || !b.bytes().all(|c| c.is_ascii_digit()) {
                        return Err(bad(&format!(
                            "{b:?} is not a block index (expected sequence:B1,B2,..., e.g. sequence:2,0,1)"
                        )));
                    }
                    blocks.push(b.parse().map_err(|_| bad(&format!("{b} is too large")))?);
                }
                if blocks.len() > 64 {
                    return Err(bad(&format!("at most 64 elements, as in fio (got {})", blocks.len())));
                }
                Distribution::Sequence(blocks, false)
            }
            _ => {
                return Err(bad(
                    "expected random, zipf:THETA, pareto:H, normal:DEV, zoned:A/R:..., zoned_abs:A/SIZE:... or sequence:B1,B2,...",
                ))
            }
        })
    }

    /// True for fio's default.
    pub fn is_uniform(&self) -> bool {
        matches!(self, Distribution::Uniform)
    }
}

/// Draws block numbers in `0..n` from a distribution.
#[derive(Debug, Clone)]
pub struct Sampler {
    n: u64,
    kind: Kind,
    scramble: u64,
}

#[derive(Debug, Clone)]
enum Kind {
    Uniform,
    Zipf(Zipf<f64>),
    Pareto(f64),
    Normal(Normal<f64>),
    /// Cumulative access fraction, first block, blocks.
    Zones(Vec<(f64, u64, u64)>),
    /// Block indices (in units) and whether rounds stride on.
    Sequence(Vec<u64>, bool),
}

impl Sampler {
    /// A sampler over `n` blocks of `unit` bytes.
    pub fn new(d: &Distribution, n: u64, unit: u64, scramble: u64) -> Sampler {
        let n = n.max(1);
        let nf = n as f64;
        let kind = match d {
            Distribution::Uniform => Kind::Uniform,
            Distribution::Zipf(t) => Zipf::new(nf, *t).map_or(Kind::Uniform, Kind::Zipf),
            Distribution::Pareto(h) => Kind::Pareto(h.ln() / (1.0 - h).ln()),
            Distribution::Normal(dev) => {
                Normal::new(nf / 2.0, nf * dev / 100.0).map_or(Kind::Uniform, Kind::Normal)
            }
            Distribution::Zoned(z) => Kind::Zones(zones(
                n,
                z.iter()
                    .map(|(a, r)| (*a, cast::round_u64((r / 100.0) * nf))),
            )),
            Distribution::ZonedAbs(z) => {
                Kind::Zones(zones(n, z.iter().map(|(a, s)| (*a, s / unit.max(1)))))
            }
            Distribution::Sequence(b, stride) => Kind::Sequence(b.clone(), *stride),
        };
        Sampler { n, kind, scramble }
    }

    /// The block of a direction's `nth` I/O; `None` when a sequence has
    /// run past the file (the pass ends, as fio's draw fails).
    #[inline]
    pub fn draw(&self, rng: &mut impl Rng, nth: u64) -> Option<u64> {
        if let Kind::Sequence(b, stride) = &self.kind {
            let len = b.len() as u64;
            let i = cast::usize_of(nth % len);
            let block = if *stride {
                nth / len * len + b[i]
            } else {
                b[i]
            };
            return (block < self.n).then_some(block);
        }
        Some(self.draw_random(rng))
    }

    fn draw_random(&self, rng: &mut impl Rng) -> u64 {
        match &self.kind {
            Kind::Uniform => rng.random_range(0..self.n),
            Kind::Zipf(z) => self.spread(cast::floor_u64(z.sample(rng)) - 1),
            Kind::Pareto(pow) => {
                let r: f64 = rng.random();
                self.spread(cast::floor_u64((self.n - 1) as f64 * r.powf(*pow)))
            }
            Kind::Normal(nd) => {
                let x = nd.sample(rng).round();
                cast::floor_u64(x.clamp(0.0, (self.n - 1) as f64))
            }
            Kind::Zones(z) => {
                let r: f64 = rng.random::<f64>() * 100.0;
                let (_, first, len) = z
                    .iter()
                    .find(|(c, _, _)| r < *c)
                    .or(z.last())
                    .copied()
                    .unwrap_or((100.0, 0, self.n));
                first + rng.random_range(0..len.max(1))
            }
            Kind::Sequence(..) => 0,
        }
    }

    /// Hot ranks are spread over the file (fio hashes them the same way,
    /// so "the hottest block" is not block 0).
    fn spread(&self, rank: u64) -> u64 {
        let mut z = rank
            .wrapping_add(self.scramble)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        (z ^ (z >> 29)) % self.n
    }
}

fn zones(n: u64, spec: impl Iterator<Item = (f64, u64)>) -> Vec<(f64, u64, u64)> {
    let mut out = Vec::new();
    let (mut cum, mut first) = (0.0, 0u64);
    for (access, blocks) in spec {
        let first_here = first.min(n - 1);
        let len = blocks.min(n - first_here).max(1);
        cum += access;
        out.push((cum, first_here, len));
        first += blocks;
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn sz(s: &str) -> Result<u64, String> {
        iolab_sys::units::parse_size(s).map_err(|e| e.to_string())
    }

    #[test]
    fn zoned_sends_the_share_of_accesses_to_each_zone() {
        let d = Distribution::parse("zoned:50/5:30/15:20/", sz).unwrap();
        let s = Sampler::new(&d, 1000, 4096, 0);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        let n = 100_000;
        let first = (0..n).filter(|_| s.draw(&mut rng, 0).unwrap() < 50).count();
        assert!((48_000..52_000).contains(&first), "{first}");
        assert!(Distribution::parse("zoned:50/5:30/15", sz)
            .unwrap_err()
            .contains("80"));
    }

    #[test]
    fn zipf_is_skewed_and_stays_in_range() {
        let d = Distribution::parse("zipf:1.2", sz).unwrap();
        let s = Sampler::new(&d, 10_000, 4096, 7);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(4);
        let mut counts = std::collections::HashMap::new();
        for _ in 0..100_000 {
            let b = s.draw(&mut rng, 0).unwrap();
            assert!(b < 10_000);
            *counts.entry(b).or_insert(0u32) += 1;
        }
        // Uniform would give ~10 per block; zipf:1.2's hottest gets ~1/5.
        assert!(counts.values().max().unwrap() > &5_000);
        assert!(Distribution::parse("zipf:1", sz).is_err());
        assert!(Distribution::parse("lognormal:2", sz).is_err());
    }
}
