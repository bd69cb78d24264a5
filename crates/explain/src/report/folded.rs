//! Folded stacks (`cause;outermost;...;innermost value`) for flamegraph.pl,
//! inferno and speedscope: one line per distinct stack, the value being
//! its blocked time in microseconds. The cause is the root frame, so a
//! flame graph groups by cause first.

use crate::attribution::Attribution;

/// The folded lines, largest first.
pub fn render(a: &Attribution) -> String {
    lines(
        a.stacks
            .iter()
            .map(|s| (s.cause.as_str(), s.frames.as_slice(), s.blocked_ns)),
    )
}

/// The folded lines of (cause, frames innermost first, blocked ns) rows:
/// what both tracers' stacks print as, so a flame graph of one matches
/// the other's.
pub fn lines<'a>(rows: impl Iterator<Item = (&'a str, &'a [String], u64)>) -> String {
    let mut out = String::new();
    for (cause, frames, ns) in rows {
        let us = ns / 1000;
        if us == 0 {
            continue;
        }
        let mut line = sanitize(cause);
        if frames.is_empty() {
            line.push_str(";[no stack]");
        }
        for f in frames.iter().rev() {
            line.push(';');
            line.push_str(&sanitize(f));
        }
        out.push_str(&format!("{line} {us}\n"));
    }
    out
}

/// `;` separates frames and the last space the value: neither may appear
/// inside a frame.
fn sanitize(s: &str) -> String {
    s.replace(';', ",").replace(' ', "_")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::report::text::tests::sample;

    #[test]
    fn root_is_the_cause_then_outermost_frame() {
        let text = render(&sample());
        let first = text.lines().next().unwrap();
        assert_eq!(
            first,
            "page-cache_read_I/O;entry_SYSCALL_64_after_hwframe;do_syscall_64;ksys_read;filemap_read;folio_wait_bit_common;io_schedule 900000"
        );
        for l in text.lines() {
            let (_, v) = l.rsplit_once(' ').unwrap();
            v.parse::<u64>().unwrap();
        }
    }
}
