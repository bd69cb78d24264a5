//! iolab: reproduce, measure and explain the latency users feel when storage
//! is busy. The command line is thin: argument parsing lives in `cli/`, one
//! file per subcommand, and all work happens in the library crates.
//!
//! This library target exists so the package can depend on itself in
//! `[dev-dependencies]` with the `test-seams` feature: the binary that
//! `cargo test` builds has the seams, the one `cargo build` makes has not.

mod cli;
mod exit;

/// Runs iolab with the process's arguments and returns its exit code.
pub fn main_code() -> i32 {
    exit::run_and_report(cli::run)
}
