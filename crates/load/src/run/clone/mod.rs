//! One clone's state, as every engine's loop drives it: [`Run`]
//! ([`state`]), made of owned parts — what is drawn and issued next
//! ([`issue`]: the pattern or a replayed log, loops, trims, the iolog),
//! where it goes in the files ([`place`]: offsets, strided and zbd
//! zones), when it may go ([`pace`]: rate limits and their floor, flow,
//! think time, latency_target's depth), where completions are counted
//! ([`complete`]: statistics, samples, logs, steady state), what is
//! written and checked ([`data`]: buffers, syncs, verify through its
//! [`verifier::Verifier`]) — and what it is given ([`spec`]) and hands
//! back ([`result`]). The thread that runs it is [`crate::run::thread`].
//! Engines only move bytes.

mod complete;
mod data;
mod issue;
mod pace;
mod place;
pub mod result;
pub mod spec;
pub mod state;
pub mod verifier;

pub use result::{CloneResult, Failure};
pub use spec::{clone_seeds, CloneSpec};
pub use state::Run;
