//! Printing that never panics. `eprintln!` and `println!` panic when the
//! stream is gone, and on a phone it goes mid-run: adbd closes every pipe
//! of a shell whose host link dropped (and sends SIGHUP). iolab then has
//! its device to restore and its results to keep, which a panic at the
//! next progress line would cut short. Lines that cannot be written are
//! dropped; what was measured is in the database.

/// `eprintln!` that ignores a closed or failing stderr.
#[macro_export]
macro_rules! say {
    () => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stderr());
    }};
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stderr(), $($arg)*);
    }};
}

/// `eprint!` that ignores a closed or failing stderr.
#[macro_export]
macro_rules! say_part {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::write!(::std::io::stderr(), $($arg)*);
    }};
}

/// `println!` that ignores a closed or failing stdout.
#[macro_export]
macro_rules! show {
    () => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stdout());
    }};
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stdout(), $($arg)*);
    }};
}

/// `print!` that ignores a closed or failing stdout.
#[macro_export]
macro_rules! show_part {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::write!(::std::io::stdout(), $($arg)*);
    }};
}
