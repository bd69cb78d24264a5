//! One clone's state, as every engine's loop drives it: [`Run`]
//! ([`state`]), made of owned parts — what to issue next ([`issue`]:
//! passes, offsets, rate limits, think time), where completions go
//! ([`complete`]: statistics, logs, steady state, rate floors), what is
//! written and checked ([`data`], with its [`verifier::Verifier`]) — and
//! what it is given ([`spec`]) and hands back ([`result`]). The thread
//! that runs it is [`crate::run::thread`]. Engines only move bytes.

mod complete;
mod data;
mod issue;
pub mod result;
pub mod spec;
pub mod state;
pub mod verifier;

pub use result::{CloneResult, Failure};
pub use spec::{clone_seeds, CloneSpec};
pub use state::Run;
