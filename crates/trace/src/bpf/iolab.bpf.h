/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every iolab BPF program shares (the C twin of iolab_trace::bpf):
 * reading a classic tracepoint's field at the offset its tracefs format
 * gives (user space writes the offsets into read-only globals before
 * load), per-CPU counters of what could not be counted, which user
 * space sums and reports (never silent), and a bit length for the
 * programs' log-scaled bins.
 *
 * Before including it, a program defines C_COUNT, the number of its
 * counters.
 */
#ifndef IOLAB_BPF_H
#define IOLAB_BPF_H

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, C_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 c)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &c);
	if (v)
		*v += 1;
}

/* A field of the event record `ctx` at `off`, of the given width. */
#define IOLAB_FIELD(name, type)                                          \
	static __always_inline type name(void *ctx, __u32 off)           \
	{                                                                \
		type v = 0;                                              \
		bpf_probe_read_kernel(&v, sizeof(v), (char *)ctx + off); \
		return v;                                                \
	}

IOLAB_FIELD(field64, __u64)
IOLAB_FIELD(field32, __u32)
IOLAB_FIELD(field_s64, __s64)
IOLAB_FIELD(field_s32, __s32)


/* The bit length of v (0 for 0): floor(log2 v) + 1, by halving (BPF has
 * no clz, and clang 14 crashes on __builtin_clzll). */
static __always_inline __u32 bits(__u64 v)
{
	__u32 r = 0;
	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { v >>= 1; r += 1; }
	return r + (__u32)v;
}

#endif
