//! Kernel symbols (`/proc/kallsyms`): address → `symbol+0xoff` for stacks.
//!
//! Only text symbols (types `t T w W`) are kept: stack frames are code
//! addresses. Addresses read as zero when `kernel.kptr_restrict` hides them
//! from this process; that is reported as an error rather than producing
//! stacks of wrong names.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::TraceError;

/// Sorted kernel text symbols.
#[derive(Debug, Clone, Default)]
pub struct Kallsyms {
    /// (address, offset of the name in `names`, name length, module
    /// offset and length in `names` or 0).
    syms: Vec<Sym>,
    names: String,
}

#[derive(Debug, Clone, Copy)]
struct Sym {
    addr: u64,
    name: (u32, u32),
    module: (u32, u32),
}

/// A resolved address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Symbol<'a> {
    /// Function name.
    pub name: &'a str,
    /// Bytes past the function's start.
    pub offset: u64,
    /// Module name, for symbols of loadable modules.
    pub module: Option<&'a str>,
}

impl std::fmt::Display for Symbol<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}+{:#x}", self.name, self.offset)?;
        if let Some(m) = self.module {
            write!(f, " [{m}]")?;
        }
        Ok(())
    }
}

impl Kallsyms {
    /// Loads `/proc/kallsyms`.
    pub fn load() -> Result<Kallsyms, TraceError> {
        Kallsyms::load_from(Path::new("/proc/kallsyms"))
    }

    /// `/proc/kallsyms`, loaded once per process (about 120k symbols;
    /// later calls share the first load).
    pub fn shared() -> Result<Arc<Kallsyms>, TraceError> {
        static SHARED: OnceLock<Arc<Kallsyms>> = OnceLock::new();
        if let Some(k) = SHARED.get() {
            return Ok(k.clone());
        }
        let k = Arc::new(Kallsyms::load()?);
        Ok(SHARED.get_or_init(|| k).clone())
    }

    /// Loads a kallsyms-format file.
    pub fn load_from(path: &Path) -> Result<Kallsyms, TraceError> {
        let text = std::fs::read_to_string(path).map_err(|e| TraceError::io(path, e))?;
        Kallsyms::parse(&text, path)
    }

    /// Parses kallsyms text (`ffffffff81000000 T _stext [module]` lines).
    pub fn parse(text: &str, path: &Path) -> Result<Kallsyms, TraceError> {
        let mut k = Kallsyms::default();
        let mut zero = 0usize;
        for line in text.lines() {
            let mut it = line.split_ascii_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            if !matches!(kind, "t" | "T" | "w" | "W") {
                continue;
            }
            let addr = u64::from_str_radix(addr, 16).map_err(|_| {
                TraceError::parse(path, line, "expected `HEXADDR TYPE NAME [MODULE]`")
            })?;
            if addr == 0 {
                zero += 1;
                continue;
            }
            let module = it
                .next()
                .map(|m| m.trim_start_matches('[').trim_end_matches(']'));
            let name = k.intern(name, path, line)?;
            let module = match module {
                Some(m) => k.intern(m, path, line)?,
                None => (0, 0),
            };
            k.syms.push(Sym { addr, name, module });
        }
        if k.syms.is_empty() && zero > 0 {
            return Err(TraceError::parse(
                path,
                "0000000000000000",
                "kernel addresses are hidden (kernel.kptr_restrict); run as root",
            ));
        }
        k.syms.sort_by_key(|s| s.addr);
        Ok(k)
    }

    /// Appends `s` to the name table; its (offset, length) are u32s, so
    /// the table ends before 4 GiB (the kernel's is a few MiB), or the
    /// file (`path`, at `line`) is refused.
    fn intern(&mut self, s: &str, path: &Path, line: &str) -> Result<(u32, u32), TraceError> {
        let at = u32::try_from(self.names.len()).ok();
        let len = u32::try_from(s.len()).ok();
        match (at, len) {
            (Some(at), Some(len)) if at.checked_add(len).is_some() => {
                self.names.push_str(s);
                Ok((at, len))
            }
            _ => Err(TraceError::parse(
                path,
                line,
                format!(
                    "symbol names run past {} bytes: not a kallsyms file",
                    u32::MAX
                ),
            )),
        }
    }

    /// A span [`Self::intern`] returned: inside `names`, on character
    /// boundaries, by construction.
    fn text(&self, (at, len): (u32, u32)) -> &str {
        &self.names[at as usize..(at + len) as usize]
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// True when no symbol was loaded.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The symbol containing `addr` (the last one starting at or below it).
    pub fn resolve(&self, addr: u64) -> Option<Symbol<'_>> {
        let i = self
            .syms
            .partition_point(|s| s.addr <= addr)
            .checked_sub(1)?;
        let s = self.syms[i];
        Some(Symbol {
            name: self.text(s.name),
            offset: addr - s.addr,
            module: (s.module.1 > 0).then(|| self.text(s.module)),
        })
    }

    /// Just the function name at `addr`, or its hex address when unknown.
    pub fn name(&self, addr: u64) -> std::borrow::Cow<'_, str> {
        match self.resolve(addr) {
            Some(s) => s.name.into(),
            None => format!("{addr:#x}").into(),
        }
    }

    /// `stack` without its leading frames of the tracing machinery
    /// (`trace_event_raw_event_*`, `__traceiter_*`, ...), which every
    /// stacktrace trigger records above the traced function.
    pub fn skip_trace_frames<'s>(&self, stack: &'s [u64]) -> &'s [u64] {
        const TRACING: [&str; 5] = [
            "trace_event_raw_event_",
            "__traceiter_",
            "__probestub_",
            "__bpf_trace_",
            "perf_trace_",
        ];
        let n = stack
            .iter()
            .take_while(|&&a| {
                self.resolve(a)
                    .is_some_and(|s| TRACING.iter().any(|p| s.name.starts_with(p)))
            })
            .count();
        &stack[n..]
    }

    /// `symbol+0xoff` (or the hex address when unknown).
    pub fn format(&self, addr: u64) -> String {
        match self.resolve(addr) {
            Some(s) => s.to_string(),
            None => format!("{addr:#x}"),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const TEXT: &str = "ffffffff81000100 T schedule
ffffffff81000000 T _stext
ffffffff82000000 D some_data
ffffffffc0000000 t loop_queue_rq\t[loop]
";

    #[test]
    fn resolves_addresses() {
        let k = Kallsyms::parse(TEXT, Path::new("k")).unwrap();
        assert_eq!(k.len(), 3);
        assert_eq!(k.format(0xffffffff81000123), "schedule+0x23");
        assert_eq!(k.format(0xffffffff81000000), "_stext+0x0");
        assert_eq!(k.format(0xffffffffc0000010), "loop_queue_rq+0x10 [loop]");
        assert_eq!(k.name(0x10), "0x10");
        assert!(k.resolve(0xffffffff80ffffff).is_none());
    }

    #[test]
    fn skips_tracing_frames() {
        let text = "ffffffff81000000 T trace_event_raw_event_sched_switch
ffffffff81000100 T __traceiter_sched_switch
ffffffff81000200 T __schedule
";
        let k = Kallsyms::parse(text, Path::new("k")).unwrap();
        let stack = [
            0xffffffff81000010,
            0xffffffff81000110,
            0xffffffff81000210,
            0x1,
        ];
        assert_eq!(k.skip_trace_frames(&stack), &stack[2..]);
        assert_eq!(k.skip_trace_frames(&stack[2..]), &stack[2..]);
    }

    #[test]
    fn hidden_addresses_are_an_error() {
        let e = Kallsyms::parse("0000000000000000 T schedule\n", Path::new("k")).unwrap_err();
        assert!(e.to_string().contains("kptr_restrict"), "{e}");
    }

    #[test]
    fn live_kallsyms_has_schedule() {
        if !iolab_sys::is_root() {
            iolab_testkit::skip_line("skip live_kallsyms_has_schedule: needs root".to_string());
            return;
        }
        let k = Kallsyms::load().unwrap();
        let addr = k
            .syms
            .iter()
            .find(|s| k.text(s.name) == "schedule")
            .unwrap()
            .addr;
        assert_eq!(k.format(addr + 4), "schedule+0x4");
    }
}
