//! iolab: reproduce, measure and explain the latency users feel when storage
//! is busy. The binary is thin: argument parsing lives in `cli/`, one file
//! per subcommand, and all work happens in the library crates.

mod cli;
mod exit;

fn main() {
    std::process::exit(exit::run_and_report(cli::run));
}
