//! Trace records → [`Timed`] events. Fields are found by name in each
//! event's `format` file once per event id (not per record), so decoding
//! is a table lookup and a few loads per record, with no offsets compiled
//! into iolab.

use iolab_trace::{Field, Field32, Format, Formats, Record};

use crate::event::{PrevState, SchedEvent, Timed};

/// The events `iolab sched record` enables: `(system, name, required)`.
/// The workqueue pair is added with `--workqueue`.
pub const SCHED_EVENTS: [(&str, &str, bool); 8] = [
    ("sched", "sched_switch", true),
    ("sched", "sched_wakeup", true),
    ("sched", "sched_wakeup_new", true),
    ("sched", "sched_waking", false),
    ("sched", "sched_migrate_task", false),
    ("sched", "sched_process_fork", false),
    ("sched", "sched_process_exec", false),
    ("sched", "sched_process_exit", false),
];

/// Workqueue events for work-item latency and worker attribution.
pub const WORKQUEUE_EVENTS: [(&str, &str, bool); 2] = [
    ("workqueue", "workqueue_queue_work", false),
    ("workqueue", "workqueue_execute_start", false),
];

#[derive(Debug, Clone)]
enum Kind {
    Waking {
        pid: Field32,
        comm: Field,
    },
    Wakeup {
        pid: Field32,
        comm: Field,
        new: bool,
    },
    Switch {
        prev_pid: Field32,
        prev_comm: Field,
        prev_state: Field,
        next_pid: Field32,
        next_comm: Field,
    },
    Migrate {
        pid: Field32,
        orig: Field32,
        dest: Field32,
    },
    Fork {
        parent: Field32,
        child: Field32,
        child_comm: Field,
    },
    Exec {
        pid: Field32,
        old_pid: Field32,
    },
    Exit {
        pid: Field32,
        comm: Field,
    },
    Queued {
        work: Field,
        function: Field,
        workqueue: Field,
    },
    Start {
        work: Field,
        function: Field,
    },
}

fn kind(f: &Format) -> Option<Kind> {
    let g = |n: &str| f.field(n).cloned();
    // pid_t and int cpu fields: 4 bytes on every kernel. A format that
    // declares one wider does not describe the event iolab knows.
    let g32 = |n: &str| f.field(n).and_then(Field::narrow32);
    Some(match (f.system.as_str(), f.name.as_str()) {
        ("sched", "sched_waking") => Kind::Waking {
            pid: g32("pid")?,
            comm: g("comm")?,
        },
        ("sched", "sched_wakeup") | ("sched", "sched_wakeup_new") => Kind::Wakeup {
            pid: g32("pid")?,
            comm: g("comm")?,
            new: f.name == "sched_wakeup_new",
        },
        ("sched", "sched_switch") => Kind::Switch {
            prev_pid: g32("prev_pid")?,
            prev_comm: g("prev_comm")?,
            prev_state: g("prev_state")?,
            next_pid: g32("next_pid")?,
            next_comm: g("next_comm")?,
        },
        ("sched", "sched_migrate_task") => Kind::Migrate {
            pid: g32("pid")?,
            orig: g32("orig_cpu")?,
            dest: g32("dest_cpu")?,
        },
        ("sched", "sched_process_fork") => Kind::Fork {
            parent: g32("parent_pid")?,
            child: g32("child_pid")?,
            child_comm: g("child_comm")?,
        },
        ("sched", "sched_process_exec") => Kind::Exec {
            pid: g32("pid")?,
            old_pid: g32("old_pid")?,
        },
        ("sched", "sched_process_exit") => Kind::Exit {
            pid: g32("pid")?,
            comm: g("comm")?,
        },
        ("workqueue", "workqueue_queue_work") => Kind::Queued {
            work: g("work")?,
            function: g("function")?,
            workqueue: g("workqueue")?,
        },
        ("workqueue", "workqueue_execute_start") => Kind::Start {
            work: g("work")?,
            function: g("function")?,
        },
        _ => return None,
    })
}

/// Decodes records of the events above; other events are skipped.
#[derive(Debug, Clone, Default)]
pub struct Decoder {
    by_id: Vec<Option<Kind>>,
}

impl Decoder {
    /// A decoder for the events described by `formats`.
    pub fn new(formats: &Formats) -> Decoder {
        let mut by_id: Vec<Option<Kind>> = Vec::new();
        for f in formats.iter() {
            let id = usize::from(f.id);
            if by_id.len() <= id {
                by_id.resize(id + 1, None);
            }
            by_id[id] = kind(f);
        }
        Decoder { by_id }
    }

    /// True when `sched_wakeup` (or `sched_wakeup_new`) is decodable.
    pub fn knows(&self, formats: &Formats, system: &str, name: &str) -> bool {
        formats
            .find(system, name)
            .is_some_and(|f| matches!(self.by_id.get(usize::from(f.id)), Some(Some(_))))
    }

    /// The event in `r`, if it is one the analysis uses.
    #[inline]
    pub fn decode<'a>(&self, r: &Record<'a>) -> Option<Timed<'a>> {
        let d = r.data;
        let tid = |f: &Field32| f.i32(d);
        // An `int` cpu read as C converts it to `unsigned int`.
        let cpu = |f: &Field32| f.i32(d) as u32;
        let event = match self.by_id.get(usize::from(r.format.id))?.as_ref()? {
            Kind::Waking { pid, comm } => SchedEvent::Waking {
                tid: tid(pid),
                comm: comm.str(d),
            },
            Kind::Wakeup { pid, comm, new } => SchedEvent::Wakeup {
                tid: tid(pid),
                comm: comm.str(d),
                new: *new,
            },
            Kind::Switch {
                prev_pid,
                prev_comm,
                prev_state,
                next_pid,
                next_comm,
            } => SchedEvent::Switch {
                prev_tid: tid(prev_pid),
                prev_comm: prev_comm.str(d),
                prev_state: PrevState(prev_state.i64(d)),
                next_tid: tid(next_pid),
                next_comm: next_comm.str(d),
            },
            Kind::Migrate { pid, orig, dest } => SchedEvent::Migrate {
                tid: tid(pid),
                orig_cpu: cpu(orig),
                dest_cpu: cpu(dest),
            },
            Kind::Fork {
                parent,
                child,
                child_comm,
            } => SchedEvent::Fork {
                parent_tid: tid(parent),
                child_tid: tid(child),
                child_comm: child_comm.str(d),
            },
            Kind::Exec { pid, old_pid } => SchedEvent::Exec {
                tid: tid(pid),
                old_tid: tid(old_pid),
            },
            Kind::Exit { pid, comm } => SchedEvent::Exit {
                tid: tid(pid),
                comm: comm.str(d),
            },
            Kind::Queued {
                work,
                function,
                workqueue,
            } => SchedEvent::WorkQueued {
                work: work.u64(d),
                function: function.u64(d),
                workqueue: workqueue.str(d),
            },
            Kind::Start { work, function } => SchedEvent::WorkStart {
                work: work.u64(d),
                function: function.u64(d),
            },
        };
        Some(Timed {
            ts_ns: r.ts_ns,
            cpu: r.cpu,
            current: r.pid,
            event,
        })
    }
}
