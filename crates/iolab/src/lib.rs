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
    // Boot prefetch, possibly as PID 1: before anything that could fail
    // or exit (state recovery, the signal thread, an exit code), it only
    // starts its helper and execs init.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(at) = cli::boot_init::position(&args) {
        cli::boot_init::main(args[at..].to_vec());
    }
    panic_note();
    exit::run_and_report(cli::run)
}

/// After the usual panic message: a device build carries no symbols (they
/// stay on the host in `iolab.debug`), so its backtrace frames are bare
/// addresses; say where the binary was loaded, so each frame can be named
/// on the host.
fn panic_note() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default(info);
        let stripped = std::env::current_exe()
            .ok()
            .and_then(|p| iolab_remote::binary::has_symbols(&p).ok())
            == Some(false);
        if stripped {
            extern "C" {
                // The ELF header, where the linker put it: the load address.
                static __ehdr_start: u8;
            }
            // Only the address is taken (addr_of! of an extern static
            // needs no unsafe).
            let base = std::ptr::addr_of!(__ehdr_start) as usize;
            iolab_sys::say!(
                "iolab: this binary carries no symbols (a device build) and was loaded at {base:#x}: \
                 with RUST_BACKTRACE=1, name a frame on the host with \
                 `addr2line -f -C -e iolab.debug <frame address - {base:#x}>` (iolab.debug lies next to iolab-device)"
            );
        }
    }));
}
