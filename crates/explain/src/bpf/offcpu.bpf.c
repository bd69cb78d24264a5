// SPDX-License-Identifier: GPL-2.0
/*
 * iolab's off-CPU collector, aggregated in the kernel: each sleep of a
 * followed task (switch-out into a sleep → its wakeup), summed by the
 * sleeping task's kernel stack (a stack id) and its state (S or D), so
 * nothing crosses to user space per sleep. User space names each stack's
 * cause with explain's rule table, as it does for the tracefs trace.
 *
 * Followed: the tasks user space seeds `follow` with (the target's tree)
 * and every task they fork (sched_process_fork), as the tracefs session's
 * event-fork does. Classic tracepoints, fields at the offsets the events'
 * tracefs format files give (written into the read-only globals below).
 *
 * Regenerate the committed object with scripts/bpf-build.sh.
 */
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

volatile const __u32 sw_prev_pid = 24, sw_prev_state = 32, sw_next_pid = 56;
volatile const __u32 wk_pid = 24;
volatile const __u32 fk_parent_pid = 24, fk_child_pid = 44;

/* TASK_REPORT bits of prev_state: R is 0; S 0x1, D 0x2 (D|K etc. count
 * as D); a preempted task's state has TASK_REPORT_MAX set. */
#define TASK_INTERRUPTIBLE 0x1
#define TASK_UNINTERRUPTIBLE 0x2
#define TASK_REPORT_MAX 0x100

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} follow SEC(".maps");

struct sleep {
	__u64 since_ns;
	__s32 stack_id;
	__u32 state; /* 'S' or 'D' */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct sleep);
} sleeping SEC(".maps");

struct agg_key {
	__s32 stack_id; /* < 0: no stack (bpf_get_stackid's error) */
	__u32 state;
};

struct agg {
	__u64 count;
	__u64 blocked_ns;
	__u64 max_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct agg_key);
	__type(value, struct agg);
} by_stack SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, 127 * sizeof(__u64));
} stacks SEC(".maps");

enum {
	C_SLEEPS = 0,     /* sleeps of followed tasks */
	C_NO_STACK = 1,   /* sleeps whose stack was not stored */
	C_NO_ROOM = 2,    /* a sleep, sum or task the maps had no room for */
	C_WOKEN = 3,      /* sleeps ended by a wakeup */
	C_RACED = 4,      /* sleeps whose wakeup came before the switch-out */
	C_COUNT = 5,
};

#include "../../../trace/src/bpf/iolab.bpf.h"

static __always_inline int followed(__u32 tid)
{
	return bpf_map_lookup_elem(&follow, &tid) != 0;
}

/* Adds a sleep of `d` ns at stack `s` to its sum. */
static __always_inline void add(struct sleep *s, __u64 d)
{
	struct agg_key k = { .stack_id = s->stack_id, .state = s->state };
	struct agg *a = bpf_map_lookup_elem(&by_stack, &k);
	if (!a) {
		struct agg n = { .count = 1, .blocked_ns = d, .max_ns = d };
		if (!bpf_map_update_elem(&by_stack, &k, &n, BPF_NOEXIST))
			return;
		/* Another CPU made it first; or there is no room. */
		a = bpf_map_lookup_elem(&by_stack, &k);
		if (!a) {
			count(C_NO_ROOM);
			return;
		}
	}
	__sync_fetch_and_add(&a->count, 1);
	/* Not for 0 (a raced sleep): clang would make it an atomic OR,
	 * which kernels before 5.12 refuse. */
	if (d)
		__sync_fetch_and_add(&a->blocked_ns, d);
	if (d > a->max_ns)
		a->max_ns = d;
}

SEC("tracepoint/sched/sched_switch")
int offcpu_switch(void *ctx)
{
	/* A followed task switched in while its sleep is open: its wakeup
	 * came while it was still switching out (sched_waking saw no sleep),
	 * so it slept for no time, as the tracefs tracker counts it. */
	__u32 next = field32(ctx, sw_next_pid);
	struct sleep *open = bpf_map_lookup_elem(&sleeping, &next);
	if (open) {
		add(open, 0);
		bpf_map_delete_elem(&sleeping, &next);
		count(C_RACED);
	}
	__u32 prev = field32(ctx, sw_prev_pid);
	if (!followed(prev))
		return 0;
	__u64 state = field64(ctx, sw_prev_state);
	if (state & TASK_REPORT_MAX || !(state & (TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE)))
		return 0;
	struct sleep s = {
		.since_ns = bpf_ktime_get_ns(),
		/* The switch runs in the sleeping task: its own stack. */
		.stack_id = bpf_get_stackid(ctx, &stacks, 0),
		.state = (state & TASK_UNINTERRUPTIBLE) ? 'D' : 'S',
	};
	count(C_SLEEPS);
	if (s.stack_id < 0)
		count(C_NO_STACK);
	if (bpf_map_update_elem(&sleeping, &prev, &s, BPF_ANY))
		count(C_NO_ROOM);
	return 0;
}

SEC("tracepoint/sched/sched_waking")
int offcpu_waking(void *ctx)
{
	__u32 tid = field32(ctx, wk_pid);
	struct sleep *s = bpf_map_lookup_elem(&sleeping, &tid);
	if (!s)
		return 0;
	struct sleep done = *s;
	bpf_map_delete_elem(&sleeping, &tid);
	count(C_WOKEN);
	add(&done, bpf_ktime_get_ns() - done.since_ns);
	return 0;
}

SEC("tracepoint/sched/sched_process_fork")
int offcpu_fork(void *ctx)
{
	__u32 parent = field32(ctx, fk_parent_pid);
	if (!followed(parent))
		return 0;
	__u32 child = field32(ctx, fk_child_pid);
	__u8 one = 1;
	if (bpf_map_update_elem(&follow, &child, &one, BPF_ANY))
		count(C_NO_ROOM);
	return 0;
}
