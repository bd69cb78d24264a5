//! CPU utilisation (mpstat's columns, all CPUs) and pressure stall shares
//! over time from the runs' `cpu` and `psi` artifacts: the first sample
//! run of every cell (all runs' series stay in the embedded data).

use iolab_results::ArtifactKind;
use serde::Serialize;

use iolab_store::ExperimentReport;
use iolab_sys::cpustat::{CpuTrack, PsiTrack};

/// One run's series, one point per sampling interval.
#[derive(Debug, Clone, Serialize)]
pub struct CpuRun {
    /// Cell key `scheduler/workload`.
    pub cell: String,
    /// Repetition.
    pub rep: u32,
    /// End of each interval, s since the first sample.
    pub t_s: Vec<f64>,
    /// %usr + %nice.
    pub usr: Vec<f64>,
    /// %sys + %irq + %soft.
    pub sys: Vec<f64>,
    /// %iowait.
    pub iowait: Vec<f64>,
    /// %idle.
    pub idle: Vec<f64>,
    /// %steal + %guest + %gnice.
    pub other: Vec<f64>,
    /// I/O pressure, `some` share of each interval, % (empty without PSI).
    pub psi_io_some: Vec<f64>,
    /// I/O pressure, `full`.
    pub psi_io_full: Vec<f64>,
    /// CPU pressure, `some`.
    pub psi_cpu_some: Vec<f64>,
    /// Memory pressure, `some`.
    pub psi_memory_some: Vec<f64>,
}

/// The first run with a CPU series of every cell.
pub fn cpu_runs(r: &ExperimentReport) -> Vec<CpuRun> {
    let mut out: Vec<CpuRun> = Vec::new();
    for a in r.artifacts.iter().filter(|a| a.kind == ArtifactKind::Cpu) {
        let Some(workload) = super::plain_workload(&a.workload, a.variant.as_deref()) else {
            continue;
        };
        let cell = format!("{}/{}", a.scheduler, workload);
        if out.iter().any(|c| c.cell == cell) {
            continue;
        }
        let Ok(track) = serde_json::from_value::<CpuTrack>(a.json.clone()) else {
            continue;
        };
        let Some(t0) = track.statistics.first().map(|s| s.start_ns) else {
            continue;
        };
        let mut run = CpuRun {
            cell,
            rep: a.rep,
            t_s: Vec::new(),
            usr: Vec::new(),
            sys: Vec::new(),
            iowait: Vec::new(),
            idle: Vec::new(),
            other: Vec::new(),
            psi_io_some: Vec::new(),
            psi_io_full: Vec::new(),
            psi_cpu_some: Vec::new(),
            psi_memory_some: Vec::new(),
        };
        for s in &track.statistics {
            let Some(all) = s.cpu_load.iter().find(|l| l.cpu == "all") else {
                continue;
            };
            let u = &all.util;
            run.t_s.push(s.end_ns.saturating_sub(t0) as f64 / 1e9);
            run.usr.push(u.usr + u.nice);
            run.sys.push(u.sys + u.irq + u.soft);
            run.iowait.push(u.iowait);
            run.idle.push(u.idle);
            run.other.push(u.steal + u.guest + u.gnice);
        }
        let psi = r
            .artifacts
            .iter()
            .find(|p| p.kind == ArtifactKind::Psi && p.run_id == a.run_id);
        if let Some(p) = psi.and_then(|p| serde_json::from_value::<PsiTrack>(p.json.clone()).ok()) {
            for s in &p.statistics {
                run.psi_io_some.push(s.io.map_or(0.0, |x| x.some));
                run.psi_io_full
                    .push(s.io.and_then(|x| x.full).unwrap_or(0.0));
                run.psi_cpu_some.push(s.cpu.map_or(0.0, |x| x.some));
                run.psi_memory_some.push(s.memory.map_or(0.0, |x| x.some));
            }
        }
        out.push(run);
    }
    out
}
