//! Where a completed I/O goes ([`Tally`]): the clone's live totals, its
//! latency and bandwidth statistics, cmdprio's per-priority latencies,
//! fio's log files and steady state; and, through the clone, flow,
//! `latency_target` and the `ratemin` floor.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use iolab_sys::cast;
use iolab_sys::ioprio::IoPrio;

use crate::job::kinds::{Dir, IoEngine};
use crate::run::clone::spec::CloneSpec;
use crate::run::clone::state::Run;
use crate::run::shared::JobShared;
use crate::run::sinks::fio_stats::{DepthMaps, FioExtras, Sampler};
use crate::run::sinks::logs::{CloneLogs, Issue, Rate};
use crate::run::sinks::stats::DirAcc;
use crate::run::sinks::steady::Steady;
use crate::run::sinks::timeline::Timeline;

/// What completions are counted in.
pub(crate) struct Tally {
    /// Per direction: read, write, trim.
    pub(super) dirs: [DirAcc; 3],
    /// Samples, queue depths and sync latencies (fio's other per-job
    /// statistics).
    pub(super) fx: FioExtras,
    sampler: Sampler,
    /// A per-I/O bandwidth or IOPS log: samples per I/O (fio's
    /// `add_bw_sample`).
    per_io_samples: bool,
    /// Bytes and I/Os completed per direction, measured or not (the live
    /// view, the `ratemin` floor).
    pub(super) live_totals: [(u64, u64); 3],
    logs: Option<CloneLogs>,
    steady: Option<Steady>,
    /// Extra per-I/O work (flow, steadystate sharing, logs, the
    /// `ratemin` floor, `latency_target`).
    pub(super) slow_path: bool,
    /// Latencies are measured (not `gtod_reduce`).
    pub(super) timed: bool,
    /// cmdprio: the rules per direction, the ioprio of the job's other
    /// I/Os, and whether the per-priority latency is lat (else clat).
    cmdprio: Option<([Vec<crate::job::cmdprio::Rule>; 2], u16, bool)>,
    /// Syncs made (fsync, fdatasync, sync_file_range, end_fsync, replayed).
    pub(super) syncs: u64,
}

impl Tally {
    /// The clone's counts from `go`; its log files open. `slow` says the
    /// clone's other parts want every completion too.
    pub(super) fn new(spec: &CloneSpec, go: Instant, slow: bool) -> Result<Tally, String> {
        let job = &*spec.job;
        let io = job.ioengine != IoEngine::CpuIo;
        // fio's priority column: with log_prio the ioprio value in hex
        // (class << 13 | level), else 1 for the real-time class, 0 otherwise.
        let prio = job.x.prio.or(spec.ioprio);
        let prio_col = if job.x.logs.prio {
            format!("0x{:04x}", prio.map_or(0, IoPrio::raw))
        } else {
            u32::from(matches!(prio, Some(IoPrio::RealTime(_)))).to_string()
        };
        let logs = CloneLogs::open(&job.x.logs.for_job(&job.name), spec.number, go, prio_col)?;
        let steady = job.x.steadystate.clone().map(|s| Steady::new(s, go));
        let every = job.x.logs.sample_every();
        Ok(Tally {
            dirs: [
                DirAcc::new(io && job.reads()),
                DirAcc::new(io && job.rw.offsets_as().writes()),
                DirAcc::new(io && job.rw.trims()),
            ],
            fx: Default::default(),
            sampler: Sampler::new(every),
            per_io_samples: every.contains(&None),
            live_totals: [(0, 0); 3],
            slow_path: slow || logs.is_some() || steady.is_some(),
            logs,
            steady,
            timed: !job.x.no_latency,
            cmdprio: job.x.cmdprio.active().then(|| {
                #[allow(
                    clippy::cast_possible_truncation,
                    reason = "IoPrio::raw is class (0..=3) << 13 | level (a u8): below 0x6100, the kernel's 16-bit ioprio"
                )]
                let default = job.x.prio.or(spec.ioprio).map_or(0, |p| p.raw() as u16);
                (
                    [job.x.cmdprio.rules(0), job.x.cmdprio.rules(1)],
                    default,
                    job.x.percentiles_in.1,
                )
            }),
            syncs: 0,
        })
    }

    /// Reads and writes completed (what `latency_target` counts).
    pub(super) fn ios(&self) -> u64 {
        self.dirs[0].ios + self.dirs[1].ios
    }

    /// cmdprio's ioprio for an I/O of `dir`, `len` bytes, drawn from
    /// `rng`; 0 for the job's own.
    #[inline]
    fn cmdprio(&self, dir: Dir, len: u64, rng: &mut rand::rngs::SmallRng) -> u16 {
        use rand::Rng;
        let Some((rules, _, _)) = &self.cmdprio else {
            return 0;
        };
        let rules = &rules[(dir as usize).min(1)];
        if rules.is_empty() {
            return 0;
        }
        let r = rng.random_range(0..100u32);
        crate::job::cmdprio::pick(rules, len, r).unwrap_or(0)
    }

    /// Counts a completion at `now` (the clock just ticked): the live
    /// totals always, the statistics and samples while `measuring`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn count(
        &mut self,
        spec: &CloneSpec,
        time: &Timeline,
        dir: Dir,
        bytes: u64,
        lat: Duration,
        issue: Issue,
        now: Instant,
        measuring: bool,
    ) {
        let d = dir as usize;
        let t = &mut self.live_totals[d];
        t.0 += bytes;
        t.1 += 1;
        spec.live.publish(dir, t.0, t.1);
        if !measuring {
            return;
        }
        let asked = bytes.max(1);
        if self.sampler.next.is_none_or(|n| now >= n) {
            self.sample(time, now);
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

    /// Takes the bandwidth/IOPS samples due, before the completion at
    /// `now` counts, and hands them to the windowed rate logs.
    #[cold]
    fn sample(&mut self, time: &Timeline, now: Instant) {
        let totals = [0, 1].map(|d| (self.dirs[d].bytes, self.dirs[d].ios));
        let epoch = time.measure_start.unwrap_or(now);
        let logs = &mut self.logs;
        self.sampler.tick(
            now,
            epoch,
            totals,
            time.deadline(),
            &mut self.fx.samples,
            &mut |(kind, d, v, at)| {
                if let Some(l) = logs {
                    let kind = if kind == 0 { Rate::Bw } else { Rate::Iops };
                    l.rate(kind, d, v, at);
                }
            },
        );
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

    /// A measured completion into fio's per-I/O logs (`real`: its byte in
    /// its file; `epoch`: when measuring began).
    #[allow(clippy::too_many_arguments)]
    fn log(
        &mut self,
        epoch: Option<Instant>,
        d: usize,
        lat_ns: u64,
        issue: Issue,
        bytes: u64,
        real: u64,
        now: Instant,
    ) {
        if let Some(l) = &mut self.logs {
            if let Some(epoch) = epoch {
                l.begin(epoch);
            }
            l.record(d, lat_ns, issue, bytes, real, now);
        }
    }

    /// A measured completion for steadystate: the job's totals grow, and
    /// clone 0 (`judge`) decides for the whole job whether it is steady
    /// (then the job stops).
    fn steady(&mut self, shared: &JobShared, judge: bool, bytes: u64, lat_ns: u64, now: Instant) {
        if self.steady.is_none() {
            return;
        }
        shared.ss[0].fetch_add(1, Ordering::Relaxed);
        shared.ss[1].fetch_add(bytes, Ordering::Relaxed);
        shared.ss[2].fetch_add(lat_ns, Ordering::Relaxed);
        if judge {
            let totals = [0, 1, 2].map(|i| shared.ss[i].load(Ordering::Relaxed));
            if let Some(s) = &mut self.steady {
                if s.sample(now, totals) {
                    shared.stop.store(true, Ordering::Relaxed);
                }
            }
        }
    }

    /// The statistics start again (latency_target's final window).
    pub(super) fn restart(&mut self, sample_every: [Option<u64>; 2]) {
        for d in &mut self.dirs {
            *d = DirAcc::new(d.plat.is_some());
        }
        self.fx = Default::default();
        self.sampler = Sampler::new(sample_every);
    }

    /// The log files, written out at `end`.
    pub(super) fn finish_logs(&mut self, end: Instant) -> Result<(), String> {
        match self.logs.take() {
            Some(l) => l.finish(end),
            None => Ok(()),
        }
    }
}

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
        self.tally.cmdprio(dir, len, &mut self.rng)
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
        let measuring = self.time.measuring();
        self.tally.count(
            self.spec, &self.time, dir, bytes, lat, issue, now, measuring,
        );
        if self.tally.slow_path {
            self.slow_complete(dir as usize, bytes, lat, issue, now, offset, measuring);
        }
    }

    /// The queue depths (fio's `depth`, submit and complete maps).
    #[inline]
    pub fn depth(&mut self) -> &mut DepthMaps {
        &mut self.tally.fx.depth
    }

    /// True when a slat log waits for submissions (see [`Run::log_slat`]).
    #[inline]
    pub fn logs_slat(&self) -> bool {
        self.tally.logs.as_ref().is_some_and(CloneLogs::wants_slat)
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
        let real = self.place.names.real(offset);
        if let Some(l) = &mut self.tally.logs {
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

    /// The completion's other consumers: flow, and while measuring
    /// `latency_target`, the logs, steady state and the `ratemin` floor.
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
        if self.job.x.flow != 0 {
            self.me.flow_ios.fetch_add(1, Ordering::Relaxed);
        }
        if !measuring {
            return;
        }
        self.pace.lat_completed(lat, now, self.tally.ios());
        let lat_ns = cast::duration_ns(lat);
        let real = self.place.names.real(offset);
        self.tally
            .log(self.time.measure_start, d, lat_ns, issue, bytes, real, now);
        self.tally
            .steady(self.me, self.spec.clone == 0, bytes, lat_ns, now);
        let totals = [self.tally.live_totals[0], self.tally.live_totals[1]];
        if let Some(f) = self.pace.below_floor(self.job, now, totals) {
            self.fail(f);
        }
    }
}
