/* The least a BPF latency collector can cost per I/O on this kernel: a
 * tp_btf program on each of the two tracepoints every latency needs (a
 * bio's queue and completion on zram; a request's issue and completion on
 * a request-based disk), doing nothing (EMPTY) or only what a latency
 * needs: each reads the clock and stores it in a per-CPU array (CLOCK).
 * bench/trace_overhead.py's floor-* modes load them beside its other
 * modes, so what iolab's programs add beyond the floor is shown in the
 * same run. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

#ifdef CLOCK
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} t SEC(".maps");

static __always_inline int stamp(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&t, &i);
	if (v)
		*v = bpf_ktime_get_ns() - *v;
	return 0;
}
#else
static __always_inline int stamp(__u32 i)
{
	return 0;
}
#endif

#ifdef RQ
SEC("tp_btf/block_rq_issue")
int start(__u64 *ctx) { return stamp(0); }
SEC("tp_btf/block_rq_complete")
int done(__u64 *ctx) { return stamp(1); }
#else
SEC("tp_btf/block_bio_queue")
int start(__u64 *ctx) { return stamp(0); }
SEC("tp_btf/block_bio_complete")
int done(__u64 *ctx) { return stamp(1); }
#endif
