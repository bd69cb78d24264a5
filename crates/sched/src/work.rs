//! Workqueue items: how long a queued work item waited before a worker
//! started it, per work function. For the seed's decompression work this
//! is "eligible to run → running" of the work itself, which includes the
//! worker's scheduling delay when a worker had to be woken.

use std::collections::HashMap;

use serde::Serialize;

use crate::event::Tid;

/// One work item: queued → started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WorkSample {
    /// `workqueue_queue_work` time (CLOCK_MONOTONIC ns).
    pub queued_ns: u64,
    /// `workqueue_execute_start` time.
    pub start_ns: u64,
    /// The worker that ran it.
    pub tid: Tid,
    /// Its CPU.
    pub cpu: u32,
}

impl WorkSample {
    /// Queue → start.
    pub fn latency_ns(&self) -> u64 {
        self.start_ns.saturating_sub(self.queued_ns)
    }
}

/// Every item of one kind: a work function on a workqueue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkStats {
    /// Kernel address of the function.
    pub function: u64,
    /// Workqueue the items were queued on ("" when queued before the
    /// trace started).
    pub workqueue: String,
    /// Items queued and started within the trace, in start order.
    pub samples: Vec<WorkSample>,
}

impl WorkStats {
    pub(crate) fn new(function: u64, workqueue: &str) -> WorkStats {
        WorkStats {
            function,
            workqueue: workqueue.to_string(),
            samples: Vec::new(),
        }
    }

    /// `function@workqueue` (or the function alone), with names from
    /// `symbols`.
    pub fn label(&self, symbols: &Symbols) -> String {
        let f = symbols.name(self.function);
        if self.workqueue.is_empty() {
            f
        } else {
            format!("{f}@{}", self.workqueue)
        }
    }
}

/// Kernel function names by address, from a `/proc/kallsyms` snapshot
/// (work functions are reported by their start address, so an exact match
/// is all that is needed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Symbols(HashMap<u64, String>);

impl Symbols {
    /// Parses `/proc/kallsyms` text (`ADDR TYPE NAME [MODULE]`), keeping
    /// only `wanted` addresses (all of them when `wanted` is empty).
    pub fn from_kallsyms(text: &str, wanted: &[u64]) -> Symbols {
        let mut map = HashMap::new();
        for line in text.lines() {
            let mut it = line.split_ascii_whitespace();
            let (Some(addr), Some(_), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            if wanted.is_empty() || wanted.contains(&addr) {
                map.entry(addr).or_insert_with(|| name.to_string());
            }
        }
        Symbols(map)
    }

    /// Adds one name (tests, or symbols stored with a trace).
    pub fn insert(&mut self, addr: u64, name: &str) {
        self.0.insert(addr, name.to_string());
    }

    /// The name of `addr`, or `0x…` when unknown.
    pub fn name(&self, addr: u64) -> String {
        self.0
            .get(&addr)
            .cloned()
            .unwrap_or_else(|| format!("{addr:#x}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kallsyms_lines_resolve_exact_addresses() {
        let text = "ffffffff81000000 T _stext\nffffffff81234560 t z_erofs_decompressqueue_work\nbad line\nffffffffc0001000 t foo\t[mod]\n";
        let s = Symbols::from_kallsyms(text, &[0xffffffff81234560]);
        assert_eq!(s.name(0xffffffff81234560), "z_erofs_decompressqueue_work");
        assert_eq!(s.name(0xffffffff81000000), "0xffffffff81000000");
        let all = Symbols::from_kallsyms(text, &[]);
        assert_eq!(all.name(0xffffffffc0001000), "foo");
    }
}
