//! `--by-comm`: tasks grouped by name, with the instance numbers that
//! kernel threads and thread pools carry normalised away, so that all of a
//! pool's workers form one group.
//!
//! Rules, in order:
//! 1. Kernel thread names follow `name/instance` (`kworker/1:2H`,
//!    `kworker/u8:3`, `erofs_worker/1`, `ksoftirqd/0`, `irq/24-virtio0`,
//!    `jbd2/vda1-8`): the part before the first `/` is kept and every run
//!    of digits after it becomes `*`: `kworker/*:*H` (per-CPU, high
//!    priority), `kworker/u*:*` (unbound), `erofs_worker/*`,
//!    `irq/*-virtio*`. The letters stay, so per-CPU and unbound, normal and
//!    high-priority (`H`) worker pools remain separate groups, as they are
//!    separate pools in the kernel.
//! 2. Other names lose a trailing number that follows a separator
//!    (`-`, `.`, `_`, `:`, `#`): `worker-12` → `worker-*`, `fio.3` →
//!    `fio.*`. A number glued to a word is part of the name (`python3`,
//!    `x264`) and stays.
//!
//! This is coarser than `perf sched latency`'s default merging, which
//! joins only tasks with the same name exactly.

/// The group name of a task name.
pub fn normalize_comm(comm: &str) -> String {
    if let Some((head, rest)) = comm.split_once('/') {
        return format!("{head}/{}", star_digits(rest));
    }
    let trimmed = comm.trim_end_matches(|c: char| c.is_ascii_digit());
    if trimmed.len() < comm.len()
        && trimmed.ends_with(['-', '.', '_', ':', '#'])
        && trimmed.len() > 1
    {
        return format!("{trimmed}*");
    }
    comm.to_string()
}

fn star_digits(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_digits = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('*');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_thread_instances_are_normalised() {
        for (name, group) in [
            ("kworker/1:2H", "kworker/*:*H"),
            ("kworker/0:0", "kworker/*:*"),
            ("kworker/u8:3", "kworker/u*:*"),
            ("kworker/u17:4-erofs_unzipd", "kworker/u*:*-erofs_unzipd"),
            ("erofs_worker/1", "erofs_worker/*"),
            ("ksoftirqd/0", "ksoftirqd/*"),
            ("irq/24-virtio0", "irq/*-virtio*"),
            ("jbd2/vda1-8", "jbd2/vda*-*"),
            ("kworker/R-kbloc", "kworker/R-kbloc"),
        ] {
            assert_eq!(normalize_comm(name), group, "{name}");
        }
    }

    #[test]
    fn user_thread_numbers_need_a_separator() {
        for (name, group) in [
            ("worker-12", "worker-*"),
            ("fio.3", "fio.*"),
            ("python3", "python3"),
            ("x264", "x264"),
            ("fio", "fio"),
            ("-1", "-1"),
            ("", ""),
        ] {
            assert_eq!(normalize_comm(name), group, "{name}");
        }
    }
}
