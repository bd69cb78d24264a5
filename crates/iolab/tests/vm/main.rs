//! The qemu guest tests, in one binary so that libtest runs two at once.
//! Each guest is one TCG vCPU, which keeps one host core busy while the
//! host side of its test only waits; apart, one binary after another, the
//! second core of a 2-core CI machine sat idle for every guest minute.
//! (One vCPU per guest stays: with two, qemu 7.2's TCG starved one for
//! minutes on a busy 2-core host, scripts/guest/run.sh.) The tests already
//! ran two at a time inside the boot test; what they assert holds beside
//! another guest: counters and the guest's own clock, and the boot
//! calibration's bound is TCG's spread (boot.rs).
//!
//! - boot: `iolab boot` on the boot guest (~460 s here) and on a board
//!   over ssh (~275 s);
//! - cgroup_v2: a cgroup-v2-only host's defaults (~265 s);
//! - stacks: `startup --in` on dm-crypt and f2fs stacks (~130 s).
//!
//! Named `vm` so that cargo runs this binary after every other test of
//! the crate (it runs them in name order): CI compiles its static
//! binaries in the background at SCHED_IDLE during the tests (.ci/run),
//! and beside that build the four guest tests took 836 s where alone
//! they took 671. TCG, memory-bound, loses more to a neighbour than the
//! host tests do; by the end of the others, the builds are done.
//!
//! libtest starts them in the order of their names, so the names put the
//! longest first: the boot guest beside the board, then the defaults
//! beside the rest of the boots, then the stacks. With the board first
//! (the names as they were), the four took 671 s: the stacks and the
//! defaults one after the other beside nothing at the end.
//!
//! The guest tests whose binaries have host tests to run beside them stay
//! there (control's cgroup-v2 guest, load_zbd's zoned null_blk).
#![allow(clippy::unwrap_used)]

#[path = "../guest_env/mod.rs"]
mod guest_env;
#[path = "../lab_env/mod.rs"]
mod lab_env;

mod boot;
mod cgroup_v2;
mod stacks;
