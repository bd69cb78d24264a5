//! Trace records → [`SchedEvent`]s, with fields resolved once from the
//! kernel's `format` files and stack addresses symbolized (and cached)
//! through kallsyms — only for followed tasks.

use std::collections::HashMap;

use iolab_trace::{Field, Format, Formats, Kallsyms, Record, TraceError};

use crate::explainer::ExplainError;

use crate::event::{Frame, SchedEvent, WakerContext};
use crate::stacks::is_tracing_frame;
use crate::timeline::Tracker;

struct Switch {
    id: u16,
    prev_pid: Field,
    prev_comm: Field,
    prev_state: Field,
    next_pid: Field,
    next_comm: Field,
}

struct Waking {
    id: u16,
    pid: Field,
    flags: Field,
}

struct Fork {
    id: u16,
    parent_pid: Field,
    child_pid: Field,
    child_comm: Field,
}

/// Field `name` of `f`, checked to be a `pid_t` as every kernel declares
/// it (4 bytes, signed), so that [`pid_of`] reads it without loss.
fn pid_field(f: &Format, name: &str) -> Result<Field, TraceError> {
    let field = f.require(name)?;
    if field.size == 4 && field.signed {
        return Ok(field.clone());
    }
    Err(TraceError::Parse {
        path: format!("events/{}/{}/format", f.system, f.name).into(),
        text: format!("{} {name}", field.type_name),
        why: format!(
            "a pid of {} bytes (signed: {}); expected a 4-byte signed pid_t",
            field.size, field.signed
        ),
    })
}

/// The pid in a field [`pid_field`] admitted.
#[allow(
    clippy::cast_possible_truncation,
    reason = "pid_field admits only 4-byte signed fields, which Field::i64 sign-extends: the value is an i32"
)]
fn pid_of(f: &Field, d: &[u8]) -> i32 {
    f.i64(d) as i32
}

/// Decodes the sched events of a session and feeds them to a tracker.
pub struct Decoder {
    switch: Switch,
    waking: Option<Waking>,
    wakeup_new: Option<(u16, Field)>,
    fork: Option<Fork>,
    exit: Option<(u16, Field)>,
    runtime: Option<(u16, Field, Field)>,
    kallsyms: Kallsyms,
    names: HashMap<u64, Frame>,
}

fn find<'a>(formats: &'a Formats, name: &str) -> Option<&'a Format> {
    formats.find("sched", name)
}

impl Decoder {
    /// Resolves the fields of the enabled sched events (`sched_switch` is
    /// required, the others used when present).
    pub fn new(formats: &Formats, kallsyms: Kallsyms) -> Result<Decoder, ExplainError> {
        let f = find(formats, "sched_switch")
            .ok_or_else(|| ExplainError::MissingEvent("sched_switch".into()))?;
        let switch = Switch {
            id: f.id,
            prev_pid: pid_field(f, "prev_pid")?,
            prev_comm: f.require("prev_comm")?.clone(),
            prev_state: f.require("prev_state")?.clone(),
            next_pid: pid_field(f, "next_pid")?,
            next_comm: f.require("next_comm")?.clone(),
        };
        let waking = match find(formats, "sched_waking") {
            Some(f) => Some(Waking {
                id: f.id,
                pid: pid_field(f, "pid")?,
                flags: f.require("common_flags")?.clone(),
            }),
            None => None,
        };
        let single_pid = |name: &str, field: &str| -> Result<Option<(u16, Field)>, TraceError> {
            match find(formats, name) {
                Some(f) => Ok(Some((f.id, pid_field(f, field)?))),
                None => Ok(None),
            }
        };
        let fork = match find(formats, "sched_process_fork") {
            Some(f) => Some(Fork {
                id: f.id,
                parent_pid: pid_field(f, "parent_pid")?,
                child_pid: pid_field(f, "child_pid")?,
                child_comm: f.require("child_comm")?.clone(),
            }),
            None => None,
        };
        Ok(Decoder {
            switch,
            waking,
            wakeup_new: single_pid("sched_wakeup_new", "pid")?,
            fork,
            exit: single_pid("sched_process_exit", "pid")?,
            runtime: match find(formats, "sched_stat_runtime") {
                Some(f) => Some((f.id, pid_field(f, "pid")?, f.require("runtime")?.clone())),
                None => None,
            },
            kallsyms,
            names: HashMap::new(),
        })
    }

    fn frames(&mut self, stack: &[u64]) -> Vec<Frame> {
        let mut out = Vec::with_capacity(stack.len());
        for &addr in stack {
            let kallsyms = &self.kallsyms;
            let name = self
                .names
                .entry(addr)
                .or_insert_with(|| Frame::from(crate::pattern::normalize(&kallsyms.name(addr))))
                .clone();
            if !is_tracing_frame(&name) {
                out.push(name);
            }
        }
        out
    }

    /// Decodes `rec` and applies it to `tracker`.
    pub fn feed(&mut self, rec: &Record<'_>, tracker: &mut Tracker) {
        let d = rec.data;
        let id = rec.format.id;
        if id == self.switch.id {
            let s = &self.switch;
            let prev_pid = pid_of(&s.prev_pid, d);
            let next_pid = pid_of(&s.next_pid, d);
            let (prev_state, prev_comm, next_comm) =
                (s.prev_state.u64(d), s.prev_comm.str(d), s.next_comm.str(d));
            // Stacks of tasks handing the CPU to a followed one are dropped.
            let stack = match rec.stack {
                Some(st) if tracker.follows(prev_pid) => Some(self.frames(st)),
                _ => None,
            };
            tracker.event(SchedEvent::Switch {
                ts_ns: rec.ts_ns,
                prev_pid,
                prev_comm,
                prev_state,
                next_pid,
                next_comm,
                stack,
            });
        } else if let Some(w) = self.waking.as_ref().filter(|w| w.id == id) {
            let pid = pid_of(&w.pid, d);
            if !tracker.follows(pid) {
                // Wakeups done by followed tasks of others.
                return;
            }
            let context = WakerContext::from_flags(w.flags.u64(d));
            let waker_stack = rec.stack.map(|st| self.frames(st));
            tracker.event(SchedEvent::Waking {
                ts_ns: rec.ts_ns,
                pid,
                waker_pid: rec.pid,
                context,
                waker_stack,
            });
        } else if let Some(f) = self.fork.as_ref().filter(|f| f.id == id) {
            tracker.event(SchedEvent::Fork {
                ts_ns: rec.ts_ns,
                parent_pid: pid_of(&f.parent_pid, d),
                child_pid: pid_of(&f.child_pid, d),
                child_comm: f.child_comm.str(d),
            });
        } else if let Some((_, f)) = self.wakeup_new.as_ref().filter(|(i, _)| *i == id) {
            tracker.event(SchedEvent::WakeupNew {
                ts_ns: rec.ts_ns,
                pid: pid_of(f, d),
            });
        } else if let Some((_, pid, runtime)) = self.runtime.as_ref().filter(|(i, _, _)| *i == id) {
            tracker.event(SchedEvent::Runtime {
                ts_ns: rec.ts_ns,
                pid: pid_of(pid, d),
                runtime_ns: runtime.u64(d),
            });
        } else if let Some((_, f)) = self.exit.as_ref().filter(|(i, _)| *i == id) {
            tracker.event(SchedEvent::Exit {
                ts_ns: rec.ts_ns,
                pid: pid_of(f, d),
            });
        }
    }
}
