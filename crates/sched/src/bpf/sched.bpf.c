// SPDX-License-Identifier: GPL-2.0
/*
 * iolab's scheduling-delay collector, aggregated in the kernel: the same
 * state machine as iolab_sched::analyze (and perf sched latency) run on
 * sched_switch, sched_wakeup and sched_wakeup_new, each task's waits for a
 * CPU summed per task instead of kept one by one:
 *
 *   Sleeping --sched_wakeup--> Runnable(wakeup) --switch in--> Running
 *   Running --switch out, prev_state R/R+--> Runnable(preempt)
 *   Running --switch out, prev_state S/D/I..--> Sleeping
 *   Running --switch out, prev_state X/Z--> Dead (the tid may be reused)
 *
 * Per task: switches, run time, and for wakeup and preemption delays the
 * count, sum, min, max (with both ends of the longest, perf's "Max delay
 * start/end") and a log-linear histogram (8 bins per power of two:
 * median and p99 within 1/16 of their value; stddev from the bins'
 * middles). What the trace
 * could not tell is counted as the analyser counts it (unknown start,
 * missing wakeup, ignored wakeups, inconsistent), and a task the map had
 * no room for is counted, never dropped silently.
 *
 * Classic tracepoints: fields at the offsets the events' tracefs format
 * files give (user space writes them into the read-only globals below), so
 * no BTF of the kernel is needed. Events of one task are serialised by its
 * run queue's lock (a wakeup of a task still switching out waits for it),
 * so a task's state is never updated from two CPUs at once.
 *
 * Regenerate the committed object with scripts/bpf-build.sh.
 */
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

/* Field offsets, from the format files. */
volatile const __u32 sw_prev_comm = 8, sw_prev_pid = 24, sw_prev_state = 32;
volatile const __u32 sw_next_comm = 40, sw_next_pid = 56;
volatile const __u32 wk_comm = 8, wk_pid = 24;
volatile const __u32 wn_comm = 8, wn_pid = 24;

#define COMM_LEN 16
/* Log-linear bins: below 8 ns one per ns, then 8 per power of two up to
 * 2^40 ns (18 min); longer waits land in the last bin (max is exact). */
#define SUB_BITS 3
#define SUB (1 << SUB_BITS)
#define NBINS ((40 - SUB_BITS + 1) * SUB)

enum { S_RUNNING = 1, S_SLEEPING = 2, S_RUNNABLE = 3, S_DEAD = 4 };
enum { K_WAKEUP = 0, K_PREEMPT = 1 };

/* Where a task stands: absent from the map is Unknown. */
struct state {
	__u64 ready_ns; /* Runnable: since when */
	__u64 since_ns; /* Running: since when */
	__u32 cpu;      /* Running: on which CPU */
	__u8 state;
	__u8 kind;      /* Runnable: K_WAKEUP or K_PREEMPT */
	__u8 kernel_preempt;
	__u8 pad;
};

struct delays {
	__u64 count;
	__u64 sum_ns;
	__u64 min_ns;
	__u64 max_ns;
	__u64 max_start_ns;
	__u64 max_end_ns;
	__u64 kernel_preempt; /* preempt delays only: switched out "R+" */
	__u32 bins[NBINS];
};

/* One life of a task id: a tid reused after its task died starts a new
 * one (`life` counts them), as the analyser's slots do. */
struct task_key {
	__u32 tid;
	__u32 life;
};

struct task {
	char comm[COMM_LEN];
	__u64 switches;
	__u64 runtime_ns;
	struct delays d[2];
};

#define MAX_TASKS 32768

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TASKS);
	__type(key, __u32);
	__type(value, struct state);
} states SEC(".maps");

/* The current life of each tid. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TASKS);
	__type(key, __u32);
	__type(value, __u32);
} lives SEC(".maps");

/* Preallocated (user space sizes it to the machine's tasks before load):
 * a map that allocates on insert draws from a per-CPU cache that holds
 * only a few entries this big and is refilled later, so a burst of new
 * tasks inside sched_switch (interrupts off) found it empty. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TASKS);
	__type(key, struct task_key);
	__type(value, struct task);
} tasks SEC(".maps");

/* A zeroed task to insert from (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct task);
} blank SEC(".maps");

/* Each CPU's first event: a task running when the trace began counts its
 * run time from there, as the analyser's cpu_first. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} cpu_first SEC(".maps");

/* The task each CPU last switched in, plus one (0: none seen yet; 1: the
 * idle task): a switch out of another task means a switch the programs
 * did not see. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s64);
} cpu_curr SEC(".maps");

enum {
	C_EVENTS = 0,
	C_UNKNOWN_START = 1,
	C_MISSING_WAKEUP = 2,
	C_WAKEUPS_IGNORED = 3,
	C_INCONSISTENT = 4,
	C_UNTRACED_SWITCHES = 5,
	C_NO_ROOM = 6, /* a task or state the maps had no room for */
	C_COUNT = 7,
};

#include "../../../trace/src/bpf/iolab.bpf.h"

static __always_inline __u32 bin_of(__u64 v)
{
	if (v < SUB)
		return v;
	__u32 msb = bits(v) - 1; /* v >= SUB > 0 */
	if (msb >= 40)
		return NBINS - 1;
	__u32 group = msb - SUB_BITS + 1;
	__u32 i = group * SUB + ((v >> (msb - SUB_BITS)) & (SUB - 1));
	return i < NBINS ? i : NBINS - 1;
}

/* The task entry of `tid`'s current life, made (named `comm`) if absent. */
static __always_inline struct task *task_of(__u32 tid, void *ctx, __u32 comm_off)
{
	__u32 zero = 0;
	__u32 *life = bpf_map_lookup_elem(&lives, &tid);
	struct task_key k = { .tid = tid, .life = life ? *life : 0 };
	struct task *t = bpf_map_lookup_elem(&tasks, &k);
	if (t)
		return t;
	struct task *b = bpf_map_lookup_elem(&blank, &zero);
	if (!b)
		return 0;
	/* Refused when full (or made meanwhile): the lookup tells. */
	bpf_map_update_elem(&tasks, &k, b, BPF_NOEXIST);
	t = bpf_map_lookup_elem(&tasks, &k);
	if (!t) {
		count(C_NO_ROOM);
		return 0;
	}
	bpf_probe_read_kernel(t->comm, COMM_LEN, (char *)ctx + comm_off);
	return t;
}

/* A tid seen again after its task died: a new life, state Unknown. */
static __always_inline void new_life(__u32 tid)
{
	__u32 *life = bpf_map_lookup_elem(&lives, &tid);
	__u32 next = life ? *life + 1 : 1;
	/* Without room the next life would add to the last one's entry. */
	if (bpf_map_update_elem(&lives, &tid, &next, BPF_ANY))
		count(C_NO_ROOM);
	bpf_map_delete_elem(&states, &tid);
}

static __always_inline void set_state(__u32 tid, struct state *s)
{
	if (bpf_map_update_elem(&states, &tid, s, BPF_ANY))
		count(C_NO_ROOM);
}

static __always_inline __u64 first_ns(__u64 now)
{
	__u32 zero = 0;
	__u64 *f = bpf_map_lookup_elem(&cpu_first, &zero);
	if (!f)
		return now;
	if (!*f)
		*f = now;
	return *f;
}

static __always_inline void add_delay(struct delays *d, __u64 ready, __u64 now, __u8 kp)
{
	__u64 v = now - ready;
	d->count++;
	d->sum_ns += v;
	if (d->count == 1 || v < d->min_ns)
		d->min_ns = v;
	/* The first of equal maxima wins, as in perf. */
	if (d->count == 1 || v > d->max_ns) {
		d->max_ns = v;
		d->max_start_ns = ready;
		d->max_end_ns = now;
	}
	d->kernel_preempt += kp;
	__u32 i = bin_of(v);
	if (i < NBINS)
		d->bins[i]++;
}

static __always_inline void wakeup(void *ctx, __u32 pid_off, __u32 comm_off, int is_new)
{
	__u64 now = bpf_ktime_get_ns();
	count(C_EVENTS);
	first_ns(now);
	__s32 pid = field_s32(ctx, pid_off);
	if (pid <= 0)
		return;
	__u32 tid = pid;
	struct state *s = bpf_map_lookup_elem(&states, &tid);
	if (is_new && s && s->state == S_DEAD) {
		new_life(tid);
		s = 0;
	}
	if (!task_of(tid, ctx, comm_off))
		return;
	if (s && (s->state == S_RUNNABLE || s->state == S_RUNNING)) {
		count(C_WAKEUPS_IGNORED);
		return;
	}
	if (s && s->state == S_DEAD) {
		count(C_INCONSISTENT);
		return;
	}
	struct state n = { .ready_ns = now, .state = S_RUNNABLE, .kind = K_WAKEUP };
	set_state(tid, &n);
}

SEC("tracepoint/sched/sched_wakeup")
int sched_wakeup(void *ctx)
{
	wakeup(ctx, wk_pid, wk_comm, 0);
	return 0;
}

SEC("tracepoint/sched/sched_wakeup_new")
int sched_wakeup_new(void *ctx)
{
	wakeup(ctx, wn_pid, wn_comm, 1);
	return 0;
}

static __always_inline void switch_out(void *ctx, __u32 tid, __u64 now, __u32 cpu, int untraced)
{
	struct task *t = task_of(tid, ctx, sw_prev_comm);
	if (!t)
		return;
	struct state *s = bpf_map_lookup_elem(&states, &tid);
	__u64 since = 0;
	if (!s) {
		if (!untraced)
			since = first_ns(now);
	} else if (s->state == S_RUNNING && s->cpu == cpu) {
		since = s->since_ns;
	} else if (s->state != S_DEAD && !untraced) {
		count(C_INCONSISTENT);
	}
	if (since && now > since)
		t->runtime_ns += now - since;
	__s64 st = field_s64(ctx, sw_prev_state);
	struct state n = {};
	if (st & 0x30) {
		n.state = S_DEAD;
	} else if ((st & 0xff) == 0) {
		n.state = S_RUNNABLE;
		n.kind = K_PREEMPT;
		n.ready_ns = now;
		n.kernel_preempt = st != 0;
	} else {
		n.state = S_SLEEPING;
	}
	set_state(tid, &n);
}

static __always_inline void switch_in(void *ctx, __u32 tid, __u64 now, __u32 cpu)
{
	struct state *s = bpf_map_lookup_elem(&states, &tid);
	if (s && s->state == S_DEAD) {
		new_life(tid);
		s = 0;
	}
	struct task *t = task_of(tid, ctx, sw_next_comm);
	if (!t)
		return;
	/* The latest name (an exec renames). */
	bpf_probe_read_kernel(t->comm, COMM_LEN, (char *)ctx + sw_next_comm);
	t->switches++;
	if (!s) {
		count(C_UNKNOWN_START);
	} else if (s->state == S_RUNNABLE && s->ready_ns <= now) {
		if (s->kind == K_WAKEUP)
			add_delay(&t->d[0], s->ready_ns, now, 0);
		else
			add_delay(&t->d[1], s->ready_ns, now, s->kernel_preempt);
	} else if (s->state == S_SLEEPING) {
		count(C_MISSING_WAKEUP);
	} else {
		count(C_INCONSISTENT);
	}
	struct state n = { .since_ns = now, .cpu = cpu, .state = S_RUNNING };
	set_state(tid, &n);
}

SEC("tracepoint/sched/sched_switch")
int sched_switch(void *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 zero = 0;
	__u32 cpu = bpf_get_smp_processor_id();
	count(C_EVENTS);
	first_ns(now);
	__s32 prev = field_s32(ctx, sw_prev_pid);
	__s32 next = field_s32(ctx, sw_next_pid);
	__s64 *curr = bpf_map_lookup_elem(&cpu_curr, &zero);
	int untraced = 0;
	if (curr) {
		untraced = *curr != 0 && *curr != (__s64)prev + 1;
		if (untraced)
			count(C_UNTRACED_SWITCHES);
		*curr = (__s64)next + 1;
	}
	if (prev > 0)
		switch_out(ctx, prev, now, cpu, untraced);
	if (next > 0)
		switch_in(ctx, next, now, cpu);
	return 0;
}
