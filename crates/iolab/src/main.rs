//! The `iolab` binary: everything is in the library (`src/lib.rs`).

fn main() {
    std::process::exit(iolab::main_code());
}
