//! `steadystate` (`ss`): stop a job once its throughput or latency has
//! settled (fio(1), "Steady state"). After `ss_ramp`, the job's rate is
//! sampled every `steadystate_check_interval` (default 1 s); once
//! `ss_dur` of samples are in the window, the job stops when every sample
//! is within the limit of their mean (`iops:10%`), or when the slope of a
//! least-squares line through them is within the limit (`iops_slope:1%`,
//! in percent of the mean per interval), as fio judges it.

use std::collections::VecDeque;
use std::time::Instant;

use iolab_sys::cast;

use crate::job::extra::{SsMetric, SteadyState};

/// The judge of one job (run by its clone 0 over the job's totals).
#[derive(Debug)]
pub struct Steady {
    ss: SteadyState,
    go: Instant,
    last: Option<(Instant, [u64; 3])>,
    window: VecDeque<f64>,
    /// Set once the criterion was met.
    pub attained: bool,
}

impl Steady {
    /// A judge starting at `go`.
    pub fn new(ss: SteadyState, go: Instant) -> Steady {
        Steady {
            ss,
            go,
            last: None,
            window: VecDeque::new(),
            attained: false,
        }
    }

    /// Feeds the job's running totals (I/Os, bytes, latency sum in ns);
    /// true when the job has reached steady state.
    pub fn sample(&mut self, now: Instant, totals: [u64; 3]) -> bool {
        if now.saturating_duration_since(self.go) < self.ss.ramp {
            return false;
        }
        let Some((t0, prev)) = self.last else {
            self.last = Some((now, totals));
            return false;
        };
        let dt = now.saturating_duration_since(t0);
        if dt < self.ss.interval {
            return false;
        }
        self.last = Some((now, totals));
        let secs = dt.as_secs_f64();
        let ios = (totals[0] - prev[0]) as f64;
        let v = match self.ss.metric {
            SsMetric::Iops => ios / secs,
            SsMetric::Bw => (totals[1] - prev[1]) as f64 / secs,
            SsMetric::Lat => {
                if ios == 0.0 {
                    return false;
                }
                (totals[2] - prev[2]) as f64 / ios
            }
        };
        let per_window = self.ss.dur.as_secs_f64() / self.ss.interval.as_secs_f64();
        let n = cast::usize_of(cast::round_u64(per_window).max(2));
        self.window.push_back(v);
        while self.window.len() > n {
            self.window.pop_front();
        }
        if self.window.len() < n {
            return false;
        }
        self.attained = judge(&self.window, &self.ss);
        self.attained
    }
}

fn judge(w: &VecDeque<f64>, ss: &SteadyState) -> bool {
    let n = w.len() as f64;
    let mean = w.iter().sum::<f64>() / n;
    let limit = if ss.percent {
        ss.limit * mean
    } else {
        ss.limit
    };
    if ss.slope {
        let xm = (n - 1.0) / 2.0;
        let (mut num, mut den) = (0.0, 0.0);
        for (i, y) in w.iter().enumerate() {
            num += (i as f64 - xm) * (y - mean);
            den += (i as f64 - xm).powi(2);
        }
        (num / den).abs() <= limit
    } else {
        w.iter().all(|y| (y - mean).abs() <= limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ss(metric: SsMetric, slope: bool, limit: f64) -> SteadyState {
        SteadyState {
            metric,
            slope,
            limit,
            percent: true,
            dur: Duration::from_secs(4),
            ramp: Duration::ZERO,
            interval: Duration::from_secs(1),
        }
    }

    #[test]
    fn settles_only_when_flat() {
        let go = Instant::now();
        let mut s = Steady::new(ss(SsMetric::Iops, false, 0.10), go);
        let mut ios = 0;
        let mut met = None;
        // Rates 100, 200, 300, then flat at 1000 IOPS.
        for (i, rate) in [100u64, 200, 300, 1000, 1000, 1000, 1000, 1000]
            .iter()
            .enumerate()
        {
            let now = go + Duration::from_secs(i as u64);
            if s.sample(now, [ios, 0, 0]) && met.is_none() {
                met = Some(i);
            }
            ios += rate;
        }
        // Samples are ready from t=1; four flat samples exist at t=7.
        assert_eq!(met, Some(7));
        let mut slope = Steady::new(ss(SsMetric::Iops, true, 0.01), go);
        let mut ios = 0;
        for i in 0..10u64 {
            assert!(!slope.sample(go + Duration::from_secs(i), [ios, 0, 0]));
            ios += 100 * (i + 1);
        }
    }
}
