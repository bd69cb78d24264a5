//! Where a completed I/O goes: the clone's live totals, its latency and
//! bandwidth statistics, cmdprio's per-priority latencies, fio's log
//! files, flow and steady state, and the `ratemin` floor.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use iolab_sys::cast;

use crate::job::kinds::Dir;
use crate::run::clone::result::Failure;
use crate::run::clone::state::Run;
use crate::run::sinks::logs::{CloneLogs, Issue, Rate};

impl Run<'_> {
    /// Records a completed I/O at `offset` (for logs).
    #[inline]
    pub fn complete_at(&mut self, dir: Dir, bytes: u64, lat: Duration, now: Instant, offset: u64) {
        self.complete(dir, bytes, lat, Issue::default(), now, offset);
    }

    /// The ioprio of a queueing engine's next I/O (cmdprio), 0 for the
    /// job's own: drawn per I/O as fio draws it.
    #[inline]
    pub fn cmdprio(&mut self, dir: Dir, len: u64) -> u16 {
        use rand::Rng;
        let Some((rules, _, _)) = &self.cmdprio else {
            return 0;
        };
        let rules = &rules[(dir as usize).min(1)];
        if rules.is_empty() {
            return 0;
        }
        let r = self.rng.random_range(0..100u32);
        crate::job::cmdprio::pick(rules, len, r).unwrap_or(0)
    }

    /// Records a completed I/O of a queueing engine: `lat` from its
    /// preparation, `slat` of that to its submission (fio's slat; the rest
    /// is its clat; `None` with `disable_slat`), `prio` its own ioprio (0:
    /// the job's).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn complete_queued(
        &mut self,
        dir: Dir,
        bytes: u64,
        lat: Duration,
        slat: Option<Duration>,
        prio: u16,
        now: Instant,
        offset: u64,
    ) {
        let lat_ns = cast::duration_ns(lat);
        let slat_ns = slat.map(|s| cast::duration_ns(s).min(lat_ns));
        self.complete(dir, bytes, lat, Issue { slat_ns, prio }, now, offset);
    }

    #[inline(always)]
    fn complete(
        &mut self,
        dir: Dir,
        bytes: u64,
        lat: Duration,
        issue: Issue,
        now: Instant,
        offset: u64,
    ) {
        self.time.tick(now);
        let d = dir as usize;
        let t = &mut self.live_totals[d];
        t.0 += bytes;
        t.1 += 1;
        self.spec.live.publish(dir, t.0, t.1);
        let measuring = self.time.measuring();
        let asked = bytes.max(1);
        if measuring {
            if self.sampler.next.is_none_or(|n| now >= n) {
                self.sample(now);
            }
            if self.timed {
                let lat_ns = cast::duration_ns(lat);
                self.dirs[d].record(bytes, asked, lat_ns);
                if let Some(s) = issue.slat_ns {
                    self.dirs[d].record_split(s, lat_ns - s);
                }
                if let Some((_, default, use_lat)) = self.cmdprio {
                    // fio's `prios`: lat with lat_percentiles, else clat.
                    let v = if use_lat {
                        lat_ns
                    } else {
                        lat_ns - issue.slat_ns.unwrap_or(0)
                    };
                    let key = if issue.prio == 0 { default } else { issue.prio };
                    self.dirs[d].record_prio(key, v);
                }
            } else {
                self.dirs[d].record_untimed(bytes, asked);
            }
            if self.per_io_samples && d < 2 {
                let clat = cast::duration_ns(lat) - issue.slat_ns.unwrap_or(0);
                self.per_io_sample(d, bytes, clat);
            }
        }
        if self.slow_path {
            self.slow_complete(d, bytes, lat, issue, now, offset, measuring);
        }
    }

    /// Takes the bandwidth/IOPS samples due, before the completion at
    /// `now` counts, and hands them to the windowed rate logs.
    #[cold]
    fn sample(&mut self, now: Instant) {
        let totals = [0, 1].map(|d| (self.dirs[d].bytes, self.dirs[d].ios));
        let epoch = self.time.measure_start.unwrap_or(now);
        let logs = &mut self.logs;
        self.sampler.tick(
            now,
            epoch,
            totals,
            self.time.deadline(),
            &mut self.fx.samples,
            &mut |(kind, d, v, at)| {
                if let Some(l) = logs {
                    let kind = if kind == 0 { Rate::Bw } else { Rate::Iops };
                    l.rate(kind, d, v, at);
                }
            },
        );
    }

    /// True when a slat log waits for submissions (see [`Run::log_slat`]).
    #[inline]
    pub fn logs_slat(&self) -> bool {
        self.logs.as_ref().is_some_and(CloneLogs::wants_slat)
    }

    /// A queued I/O's submission latency, logged when its submit returns
    /// (fio's `add_slat_sample`), so the slat log's windows close as
    /// fio's do: I/Os still in flight at the end add nothing to it.
    #[cold]
    pub fn log_slat(
        &mut self,
        dir: Dir,
        slat: Duration,
        bytes: u64,
        offset: u64,
        prio: u16,
        now: Instant,
    ) {
        let Some(epoch) = self.time.measure_start.filter(|_| self.time.measuring()) else {
            return;
        };
        let real = self.names.real(offset);
        if let Some(l) = &mut self.logs {
            l.begin(epoch);
            l.slat(
                dir as usize,
                cast::duration_ns(slat),
                bytes,
                real,
                prio,
                now,
            );
        }
    }

    /// A per-I/O log's sample (fio's `add_bw_sample`/`add_iops_sample`):
    /// the I/O's bytes over its clat, and 1.
    #[cold]
    fn per_io_sample(&mut self, d: usize, bytes: u64, clat_ns: u64) {
        let s = &mut self.fx.samples[d];
        if self.sampler.per_io(0) {
            s.bw.add((bytes * 1_000_000).checked_div(clat_ns).unwrap_or(0));
        }
        if self.sampler.per_io(1) {
            s.iops.add(1);
        }
    }

    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn slow_complete(
        &mut self,
        d: usize,
        bytes: u64,
        lat: Duration,
        issue: Issue,
        now: Instant,
        offset: u64,
        measuring: bool,
    ) {
        let shared = self.me;
        if self.job.x.flow != 0 {
            shared.flow_ios.fetch_add(1, Ordering::Relaxed);
        }
        if !measuring {
            return;
        }
        if let Some(l) = &mut self.lat {
            let ios = self.dirs[0].ios + self.dirs[1].ios;
            let step = l.completed(lat, now, ios);
            if step != crate::run::lat_target::Step::Go {
                self.lat_pending.get_or_insert(step);
            }
        }
        let lat_ns = cast::duration_ns(lat);
        let real = self.names.real(offset);
        if let Some(l) = &mut self.logs {
            if let Some(epoch) = self.time.measure_start {
                l.begin(epoch);
            }
            l.record(d, lat_ns, issue, bytes, real, now);
        }
        if self.steady.is_some() {
            shared.ss[0].fetch_add(1, Ordering::Relaxed);
            shared.ss[1].fetch_add(bytes, Ordering::Relaxed);
            shared.ss[2].fetch_add(lat_ns, Ordering::Relaxed);
            // Clone 0 judges for the whole job.
            if self.spec.clone == 0 {
                let totals = [0, 1, 2].map(|i| shared.ss[i].load(Ordering::Relaxed));
                if let Some(s) = &mut self.steady {
                    if s.sample(now, totals) {
                        shared.stop.store(true, Ordering::Relaxed);
                    }
                }
            }
        }
        if let Some((start, bytes0, ios0)) = self.min_window {
            let cycle = self.job.x.ratecycle;
            let el = now.saturating_duration_since(start);
            if el >= cycle {
                let totals = [self.live_totals[0], self.live_totals[1]];
                for (i, dir) in [(0, Dir::Read), (1, Dir::Write)] {
                    let secs = el.as_secs_f64();
                    let bw = (totals[i].0 - bytes0[i]) as f64 / secs;
                    let iops = (totals[i].1 - ios0[i]) as f64 / secs;
                    let uses = if i == 0 {
                        self.job.reads()
                    } else {
                        self.job.writes()
                    };
                    if !uses {
                        continue;
                    }
                    let low_bw = self.job.x.ratemin.get(dir).filter(|m| bw < *m as f64);
                    let low_iops = self
                        .job
                        .x
                        .rate_iops_min
                        .get(dir)
                        .filter(|m| iops < *m as f64);
                    if low_bw.is_some() || low_iops.is_some() {
                        let what = match (low_bw, low_iops) {
                            (Some(m), _) => format!("{:.0} B/s, below ratemin={m}", bw),
                            (_, Some(m)) => format!("{iops:.0} IOPS, below rate_iops_min={m}"),
                            _ => String::new(),
                        };
                        let f = Failure {
                            errno: 0,
                            message: format!(
                                "job {}: {} ran at {what} over the last {} ms (ratecycle); the job stopped, results so far are kept",
                                self.job.name,
                                if i == 0 { "reading" } else { "writing" },
                                el.as_millis()
                            ),
                        };
                        self.fail(f);
                        return;
                    }
                }
                self.min_window =
                    Some((now, [totals[0].0, totals[1].0], [totals[0].1, totals[1].1]));
            }
        }
    }
}
