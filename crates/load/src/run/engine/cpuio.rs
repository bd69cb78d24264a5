//! The `cpuio` engine (fio's): in each cycle of `cpuchunks`, burn CPU for
//! `cpuload` percent of it, then sleep the rest. `noop` spins on a counter;
//! `qsort` sorts a small array of pseudo-random numbers over and over,
//! which also exercises caches and branch prediction like real work.

use std::time::Instant;

use crate::job::kinds::CpuMode;
use crate::run::clone::state::Run;

const SORT_LEN: usize = 1024;

/// Burns CPU until the clone's runtime ends or the load stops.
pub fn run(run: &mut Run<'_>) {
    let job = run.job;
    let load = u32::from(job.cpuload.unwrap_or(100).min(100));
    let cycle = job.cpuchunks;
    let busy = cycle * load / 100;
    let mut arr = [0u32; SORT_LEN];
    let mut x: u32 = 0x9e37_79b9;
    loop {
        let start = Instant::now();
        run.time.tick(start);
        if run.stopped() {
            return;
        }
        let busy_end = start + busy;
        loop {
            match job.cpumode {
                CpuMode::Noop => {
                    for i in 0..4096u32 {
                        std::hint::black_box(i);
                    }
                }
                CpuMode::Qsort => {
                    for v in arr.iter_mut() {
                        // xorshift32: cheap, non-constant input for the sort.
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        *v = x;
                    }
                    arr.sort_unstable();
                    std::hint::black_box(&arr);
                }
            }
            if Instant::now() >= busy_end {
                break;
            }
        }
        let now = Instant::now();
        let idle_end = start + cycle;
        if idle_end > now {
            std::thread::sleep(idle_end - now);
        }
    }
}
