//! Fixtures shared by the unit tests.

use crate::event::{BlockEvent, Comm, Dev, EventKind, Rwbs};

/// A request-based device (loop0).
pub const LOOP0: Dev = Dev(7 << 20);
/// A bio-based device (zram0).
pub const ZRAM0: Dev = Dev(252 << 20);

/// One synthetic event.
#[allow(clippy::too_many_arguments)]
pub fn ev(
    kind: EventKind,
    ts_ns: u64,
    dev: Dev,
    sector: u64,
    nr_sector: u32,
    rwbs: &str,
    tid: i32,
    comm: &str,
) -> BlockEvent {
    BlockEvent {
        kind,
        ts_ns,
        cpu: 0,
        tid,
        dev,
        sector,
        nr_sector,
        rwbs: Rwbs::parse(rwbs.as_bytes()),
        comm: Comm::new(comm.as_bytes()),
        error: 0,
    }
}
