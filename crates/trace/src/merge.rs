//! Merging per-CPU pages into one time-ordered stream of [`Record`]s.
//!
//! Each CPU's ring buffer is ordered in time; across CPUs they are not. The
//! merger keeps each CPU's pages in a queue, decodes the next event of each
//! (its "head") and delivers the oldest head while it is not newer than a
//! limit. A live session sets the limit a small margin behind the moment
//! its reader last swept every CPU, so an event still in flight on another
//! CPU (e.g. a request's issue, read after its complete) is never passed;
//! at finish the limit is infinite. Pages are parsed in place: a record
//! borrows its bytes from the queued page.
//!
//! A `kernel_stack` entry written by a `stacktrace` trigger follows its
//! event on the same CPU and is attached to it as `Record::stack`. When a
//! triggered event is the last entry read so far on its CPU, its stack may
//! still be in flight, so the event waits (a few ms at most) for more data.

use std::collections::VecDeque;

use crate::format::{read_i32, read_u16, read_uint, Field, Formats};
use crate::page::{Cursor, Missed, PageLayout};
use crate::record::{CpuStats, Record};

/// How long a triggered event waits for its stack before going out without.
const STACK_WAIT_NS: u64 = 20_000_000;

#[derive(Debug, Clone, Copy)]
struct Span {
    page: usize,
    start: usize,
    len: usize,
}

#[derive(Debug, Clone, Copy)]
struct Head {
    ts: u64,
    data: Span,
    stack: Option<Span>,
    pending_stack: bool,
}

#[derive(Debug)]
struct CpuQueue {
    stats: CpuStats,
    pages: VecDeque<Vec<u8>>,
    /// Index in `pages` of the page `cursor` walks.
    page: usize,
    cursor: Option<Cursor>,
    head: Option<Head>,
}

enum HeadState {
    Ready(u64),
    Wait(u64),
    Empty,
}

/// A source of more pages for CPU index `i` (trace files read on demand;
/// live sessions push pages instead and return `None`).
pub(crate) type Refill<'r> = &'r mut dyn FnMut(usize) -> Option<Vec<u8>>;

/// The `kernel_stack` entry's layout.
#[derive(Debug, Clone)]
pub(crate) struct StackFormat {
    pub(crate) id: u16,
    size: Field,
    caller: Field,
}

impl StackFormat {
    pub(crate) fn from_formats(formats: &Formats) -> Option<StackFormat> {
        let f = formats.find("ftrace", "kernel_stack")?;
        Some(StackFormat {
            id: f.id,
            size: f.field("size")?.clone(),
            caller: f.field("caller")?.clone(),
        })
    }
}

/// The per-CPU queues and the merge state.
#[derive(Debug)]
pub(crate) struct Merger {
    layout: PageLayout,
    queues: Vec<CpuQueue>,
    stack: Option<StackFormat>,
    /// Event ids that carry a stacktrace trigger.
    triggered: Vec<u16>,
    last_ts: u64,
    pub(crate) out_of_order: u64,
    scratch: Vec<u64>,
}

impl Merger {
    pub(crate) fn new(
        layout: PageLayout,
        cpus: &[u32],
        stack: Option<StackFormat>,
        triggered: Vec<u16>,
    ) -> Merger {
        Merger {
            layout,
            queues: cpus
                .iter()
                .map(|&cpu| CpuQueue {
                    stats: CpuStats {
                        cpu,
                        ..CpuStats::default()
                    },
                    pages: VecDeque::new(),
                    page: 0,
                    cursor: None,
                    head: None,
                })
                .collect(),
            stack,
            triggered,
            last_ts: 0,
            out_of_order: 0,
            scratch: Vec::new(),
        }
    }

    /// Queues a page read from CPU index `i`, counting events the kernel
    /// says it lost before it.
    pub(crate) fn push(&mut self, i: usize, page: Vec<u8>) {
        let layout = self.layout;
        let q = &mut self.queues[i];
        count_page(&layout, &mut q.stats, &page);
        q.pages.push_back(page);
    }

    /// Per-CPU counters so far.
    pub(crate) fn cpu_stats(&self) -> Vec<CpuStats> {
        self.queues.iter().map(|q| q.stats).collect()
    }

    /// Delivers, oldest first, every event not newer than `limit`
    /// (`finishing`: everything, without waiting for stacks). `now` is the
    /// current trace-clock time. Returns how many were delivered.
    pub(crate) fn drain(
        &mut self,
        formats: &Formats,
        limit: u64,
        finishing: bool,
        now: u64,
        refill: Refill<'_>,
        sink: &mut dyn FnMut(&Record),
    ) -> u64 {
        let mut delivered = 0;
        loop {
            let mut best: Option<(usize, u64)> = None;
            let mut barrier = limit;
            for i in 0..self.queues.len() {
                match self.ensure_head(i, formats, finishing, now, refill) {
                    HeadState::Ready(ts) => {
                        if best.is_none_or(|(_, b)| ts < b) {
                            best = Some((i, ts));
                        }
                    }
                    HeadState::Wait(ts) => barrier = barrier.min(ts.saturating_sub(1)),
                    HeadState::Empty => {}
                }
            }
            match best {
                Some((i, ts)) if ts <= barrier => {
                    self.deliver(i, formats, sink);
                    delivered += 1;
                }
                _ => return delivered,
            }
        }
    }

    fn ensure_head(
        &mut self,
        i: usize,
        formats: &Formats,
        finishing: bool,
        now: u64,
        refill: Refill<'_>,
    ) -> HeadState {
        let layout = self.layout;
        let stack_id = self.stack.as_ref().map(|s| s.id);
        let q = &mut self.queues[i];
        if q.head.is_none() {
            loop {
                let Some((page, e)) = q.next_entry(&layout, i, refill) else {
                    return HeadState::Empty;
                };
                let id = read_u16(&q.pages[page], e.start);
                // An orphan stack (its event was not delivered) or an
                // event this session did not ask for: skip it.
                if Some(id) == stack_id || formats.get(id).is_none() {
                    continue;
                }
                q.head = Some(Head {
                    ts: e.ts,
                    data: Span {
                        page,
                        start: e.start,
                        len: e.len,
                    },
                    stack: None,
                    pending_stack: stack_id.is_some() && self.triggered.contains(&id),
                });
                break;
            }
        }
        let Some(mut head) = q.head else {
            return HeadState::Empty;
        };
        if head.pending_stack {
            let (saved_page, saved_cursor) = (q.page, q.cursor);
            let pid = read_uint(span(&q.pages, head.data), 4, 4);
            match q.next_entry(&layout, i, refill) {
                // The stack of this event: same CPU, next entry, same task.
                Some((page, e))
                    if Some(read_u16(&q.pages[page], e.start)) == stack_id
                        && read_uint(&q.pages[page], e.start + 4, 4) == pid =>
                {
                    head.stack = Some(Span {
                        page,
                        start: e.start,
                        len: e.len,
                    });
                    head.pending_stack = false;
                }
                next => {
                    // Not a stack: leave it for the next head.
                    (q.page, q.cursor) = (saved_page, saved_cursor);
                    if next.is_some() || finishing || now.saturating_sub(head.ts) > STACK_WAIT_NS {
                        head.pending_stack = false;
                    }
                }
            }
            q.head = Some(head);
        }
        if head.pending_stack {
            HeadState::Wait(head.ts)
        } else {
            HeadState::Ready(head.ts)
        }
    }

    fn deliver(&mut self, i: usize, formats: &Formats, sink: &mut dyn FnMut(&Record)) {
        let q = &mut self.queues[i];
        let Some(head) = q.head.take() else {
            return;
        };
        let data = span(&q.pages, head.data);
        // `unsigned short common_type; offset:0; size:2;` in every format.
        let id = read_u16(data, 0);
        let stack = match (head.stack, &self.stack) {
            (Some(s), Some(fmt)) => {
                let raw = span(&q.pages, s);
                // A count read from the data: negative is none, and the
                // loop below stops at the end of the payload.
                let n = usize::try_from(fmt.size.i64(raw)).unwrap_or(0);
                self.scratch.clear();
                self.scratch.extend((0..n).map_while(|k| {
                    let off = fmt.caller.offset + k * 8;
                    (off + 8 <= raw.len()).then(|| read_uint(raw, off, 8))
                }));
                Some(&self.scratch[..])
            }
            _ => None,
        };
        if let Some(format) = formats.get(id) {
            if head.ts < self.last_ts {
                self.out_of_order += 1;
            }
            self.last_ts = self.last_ts.max(head.ts);
            q.stats.events += 1;
            let rec = Record {
                format,
                ts_ns: head.ts,
                cpu: q.stats.cpu,
                // `int common_pid; offset:4; size:4; signed:1;`.
                pid: read_i32(data, 4),
                data,
                stack,
            };
            sink(&rec);
        }
        // Nothing before the cursor's page is referenced any more.
        let done = q.page.min(q.pages.len());
        q.pages.drain(..done);
        q.page -= done;
    }
}

fn span(pages: &VecDeque<Vec<u8>>, s: Span) -> &[u8] {
    pages
        .get(s.page)
        .and_then(|p| p.get(s.start..s.start + s.len))
        .unwrap_or(&[])
}

fn count_page(layout: &PageLayout, stats: &mut CpuStats, page: &[u8]) {
    stats.pages += 1;
    // Saturating: the count is read from the page, which a damaged file
    // can make anything.
    stats.lost = stats.lost.saturating_add(match layout.header(page).missed {
        Missed::None => 0,
        // Lost, count not stored: at least one.
        Missed::Unknown => 1,
        Missed::Count(n) => n,
    });
}

impl CpuQueue {
    /// The next data entry of this CPU, pulling pages from `refill` when
    /// the queue runs dry.
    fn next_entry(
        &mut self,
        layout: &PageLayout,
        i: usize,
        refill: Refill<'_>,
    ) -> Option<(usize, crate::page::Entry)> {
        loop {
            if self.cursor.is_none() {
                if self.page >= self.pages.len() {
                    let p = refill(i)?;
                    count_page(layout, &mut self.stats, &p);
                    self.pages.push_back(p);
                }
                self.cursor = Some(Cursor::new(layout, &self.pages[self.page]));
            }
            let cursor = self.cursor.as_mut()?;
            match cursor.next(&self.pages[self.page]) {
                Some(e) => return Some((self.page, e)),
                None => {
                    self.cursor = None;
                    self.page += 1;
                }
            }
        }
    }
}
