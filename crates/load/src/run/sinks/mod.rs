//! Where a completed I/O is counted: latency histograms and totals
//! ([`stats`], fio's bins in [`plat`]), bandwidth and IOPS samples and
//! queue depths ([`fio_stats`]), fio's log files ([`logs`]), steady
//! state ([`steady`]), and the clone's clock and CPU use ([`timeline`],
//! [`cpu`]).

pub(crate) mod cpu;
pub mod fio_stats;
pub(crate) mod logs;
pub(crate) mod plat;
pub(crate) mod stats;
pub(crate) mod steady;
pub(crate) mod timeline;
