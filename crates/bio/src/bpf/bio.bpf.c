// SPDX-License-Identifier: GPL-2.0
/*
 * iolab's block-latency collector, aggregated in the kernel: every block
 * request's issue → complete (device time, what biolatency shows) and
 * insert → issue (queue time, biolatency -Q) go into log2 histograms (bcc's
 * slots) and fio's latency bins (linear within each power of two, 1/64
 * apart: percentiles within 1.6 %) per device × operation, so nothing crosses to user space per
 * request. Classic tracepoints (no BTF of the kernel needed): each field
 * is read at the offset the tracepoint's tracefs `format` file gives,
 * which user space writes into the read-only globals below before load.
 *
 * Requests carry no pointer in these events, so they are matched as
 * iolab's tracefs tracker and ftrace's iosnoop match them: by device and
 * start sector. Bio-based devices (zram) emit only block_bio_queue →
 * block_bio_complete; user space lists them in `bio_based`.
 *
 * Regenerate the committed object with scripts/bpf-build.sh.
 */
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

/* Field offsets in each event's record, from its tracefs format file. */
volatile const __u32 rq_dev = 8, rq_sector = 16, rq_nr_sector = 24, rq_rwbs = 28;
volatile const __u32 rqq_dev = 8, rqq_sector = 16, rqq_nr_sector = 24, rqq_rwbs = 28;
volatile const __u32 cp_dev = 8, cp_sector = 16, cp_nr_sector = 24, cp_rwbs = 32;
volatile const __u32 bio_dev = 8, bio_sector = 16, bio_nr_sector = 24, bio_rwbs = 28;
volatile const __u32 bc_dev = 8, bc_sector = 16, bc_nr_sector = 24, bc_rwbs = 32;
/* The devices traced (a disk and its partitions), their histogram slot
 * (their disk's) and whether each is bio-based: read-only globals, so
 * finding a device is a few compares, not a map lookup. */
#define MAX_DEVS 64
#define MAX_SLOTS 32
volatile const __u32 ndevs = 0;
volatile const __u32 devs[MAX_DEVS] = {};
volatile const __u32 dev_slot[MAX_DEVS] = {};
volatile const __u64 bio_based_mask = 0;
/* Each histogram slot's disk (its whole-disk device number): a bio names
 * its partition, a request its disk. */
volatile const __u32 slot_dev[MAX_SLOTS] = {};
/* 1: a record per completed request through `records_rb*` (biosnoop's
 * lines, --summary, --perfetto), with the task that queued it; 0: only
 * the histograms below (--hist), nothing per request. */
volatile const __u32 records = 0;
/* 1: each request's histograms are its owner's: the app's (a task of the
 * processes in `app`, which follows their forks) or the rest's (the load,
 * the kernel's writeback), cells [nslots * OPS, 2 * nslots * OPS). */
volatile const __u32 by_owner = 0;
/* Disks traced (histogram slots in use). */
volatile const __u32 nslots = 32;
/* 1 where the kernel has block_io_start (≥ 6.5), whose program the typed
 * rungs attach: every request made while they are attached is seen there. */
volatile const __u32 has_io_start = 0;

struct key {
	__u32 dev;
	__u32 flush;
	__u64 sector;
};

/* How a request's queue time and owner were found (iolab_bio::Origin). */
enum { O_BIO_QUEUE = 0, O_IO_START = 1, O_INSERT = 2, O_ISSUE = 3 };

struct pending {
	__u64 insert_ns;
	__u64 issue_ns;
	__u64 sector;      /* where it starts (a partial completion's is later) */
	__u32 nr_sector;   /* still to complete */
	__u32 all_sectors; /* the request's size at issue */
	/* With `records`: the task that queued it, as biosnoop names it. */
	__u32 tid;
	__u32 pid;
	char comm[16];
	__u16 requeues;
	__u8 origin;
	__u8 app;    /* with `by_owner`: queued by the app */
	__u8 pad[4];
};

/*
 * A bio-based device (zram) completes most bios in the task that queued
 * them, on the same CPU, before it queues the next: each CPU keeps its
 * latest bio in a slot of its own, out of `start`, whose update and delete
 * take a bucket lock (on this machine 0.34 µs of the programs' ~1 µs per
 * bio; a slot costs a few ns). A second bio queued on the CPU spills the
 * first into `start`; a completion looks in its CPU's slot, then `start`,
 * then the other CPUs' slots (a task that moved). `gen` is odd while the
 * slot holds a bio; whoever takes or spills it moves `gen` on with a
 * compare-and-swap, so a bio is taken once. fast_cpus = 0 (user space,
 * on kernels without bpf_map_lookup_percpu_elem, < 5.19) keeps every bio
 * in `start`.
 */
#define MAX_CPUS 256
volatile const __u32 fast_cpus = 0;

/* The app's processes (tgids), seeded by user space with the app's first
 * process; raw_app_fork adds every process they fork. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} app SEC(".maps");

/* One completed request (`records`): what iolab_bio::BioRequest holds. */
struct rec {
	__u64 queue_ns; /* 0: only its issue was seen */
	__u64 issue_ns;
	__u64 complete_ns;
	__u64 sector;
	__u32 dev;
	__u32 nr_sector;
	__u32 tid;
	__u32 pid;
	char comm[16];
	__u16 requeues;
	__u8 origin;
	__u8 op;     /* R W D F N */
	__u8 flags;  /* iolab_bio::RWBS_* */
	__u8 status; /* blk_status_t */
	__u8 pad[2];
};

struct slot {
	__u64 gen;
	struct key k;
	struct pending p;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct slot);
} slots SEC(".maps");

/* The records' ring buffers, one per CPU (CPUs past the eighth share
 * them, by the CPU number's low bits): a reserve takes its ring's spinlock,
 * and with one ring two CPUs completing I/O waited on each other there
 * (__bpf_ringbuf_reserve was 8.5 % of a two-job zram load's CPU). Sized
 * by user space (a power of two of pages): a page each when only
 * histograms are kept, or for a CPU the machine does not have. */
#define NR_RINGS 8
#define RING(n)                                                                                    \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_RINGBUF);                                                \
		__uint(max_entries, 4096);                                                         \
	} records_rb##n SEC(".maps")
RING(0);
RING(1);
RING(2);
RING(3);
RING(4);
RING(5);
RING(6);
RING(7);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct key);
	__type(value, struct pending);
} start SEC(".maps");

/* fio's latency bins (below) and bcc's log2 slots. */
#define PLAT_BITS 6
#define PLAT_VAL (1 << PLAT_BITS)
#define PLAT_NR (29 * PLAT_VAL)
#define LOG2_NR 65
#define OPS 5 /* R W D F N */

/* One device slot × operation, per CPU: what a completion adds to. */
struct cell {
	__u64 count;
	__u64 bytes;
	__u64 lat_ns;
	__u64 que_ns;
	__u64 lat_max_ns;
	__u64 lat_min_ns;
	__u64 lat_log2[LOG2_NR];
	__u64 que_log2[LOG2_NR];
	__u64 lat_plat[PLAT_NR];
	__u64 que_plat[PLAT_NR]; /* 30,784 bytes in all: under the kernel's 32 KiB per-CPU value */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_SLOTS * OPS);
	__type(key, __u32);
	__type(value, struct cell);
} cells SEC(".maps");

/* Counters: what could not be counted, never silent. */
enum {
	C_UNMATCHED = 0,   /* completion whose issue was not seen */
	C_START_FULL = 1,  /* a request not tracked: `start` was full */
	C_NO_SLOT = 2,     /* a device not in the table (none are: kept for the format) */
	C_PARTIAL = 3,     /* partial completions (the rest stays pending) */
	C_REQUEUE = 4,
	C_LOST = 5,        /* a record the ring buffer had no room for */
	C_MERGED = 6,      /* requests merged into another before issue */
	C_SPILLED = 7,     /* bios moved from a CPU's slot into `start` */
	C_FROM_OTHER = 8,  /* bios completed on another CPU than their slot's */
	C_APP_FULL = 9,    /* an app process not followed: `app` was full */
	C_COUNT = 10,
};

#include "../../../trace/src/bpf/iolab.bpf.h"

/* The operation letter of an rwbs string, as iolab_bio::Rwbs::parse
 * reads it: a leading F (preflush) before another operation is a flag. */
static __always_inline __u8 op_of(void *ctx, __u32 off, __u32 *flush)
{
	char r[2] = {};
	bpf_probe_read_kernel(r, sizeof(r), (char *)ctx + off);
	__u8 op = r[0];
	if (op == 'F' && (r[1] == 'W' || r[1] == 'D' || r[1] == 'F' || r[1] == 'R' ||
			  r[1] == 'N' || r[1] == 'Z'))
		op = r[1];
	if (op != 'R' && op != 'W' && op != 'D' && op != 'F')
		op = 'N';
	*flush = op == 'F';
	return op;
}

/* bcc's log2 slot of a latency in µs (slot i: [2^(i-1), 2^i) µs; 0 µs is
 * slot 0, which user space counts with slot 1 as bcc prints them). */
static __always_inline __u16 log2_slot(__u64 ns)
{
	return (__u16)bits(ns / 1000);
}

/* fio's latency bin of a value in ns (stat.c plat_val_to_idx, 6 bits):
 * exact below 128 ns, within 1/64 above; 1856 bins up to 2^34 ns (17 s),
 * the last one holding anything longer (the max stays exact). */
static __always_inline __u16 plat_slot(__u64 ns)
{
	__u32 msb = ns ? bits(ns) - 1 : 0;
	if (msb <= PLAT_BITS)
		return (__u16)ns;
	__u32 error_bits = msb - PLAT_BITS;
	__u32 base = (error_bits + 1) << PLAT_BITS;
	__u32 offset = (PLAT_VAL - 1) & (__u32)(ns >> error_bits);
	__u32 idx = base + offset;
	return (__u16)(idx < PLAT_NR - 1 ? idx : PLAT_NR - 1);
}

/* The index of `dev` in the device table, or -1 (not traced). */
static __always_inline int dev_index(__u32 dev)
{
	for (int i = 0; i < MAX_DEVS; i++) {
		if (i >= ndevs)
			break;
		if (devs[i] == dev)
			return i;
	}
	return -1;
}

static __always_inline int is_bio_based(int i)
{
	return (bio_based_mask >> (i & 63)) & 1;
}

static __always_inline __u32 op_index(__u8 op)
{
	switch (op) {
	case 'R': return 0;
	case 'W': return 1;
	case 'D': return 2;
	case 'F': return 3;
	default: return 4;
	}
}

/* The task that queued it: with `by_owner`, whether it is the app's;
 * with `records`, who (biosnoop's COMM and PID). */
static __always_inline void owned(struct pending *n, __u8 origin, __u64 now)
{
	n->origin = origin;
	/* Where block_io_start is attached, a request first seen at its
	 * issue was made before the programs were, or is a flush the
	 * kernel built (blk_kick_flush: no block_io_start, no insert); its
	 * issuer is whoever ran the queue (the app's read dispatching the
	 * load's queued write), not its owner, so it is counted as the
	 * rest's, flushes included. Without block_io_start (< 6.5) a
	 * request not inserted is first seen at its issue, in its submitter
	 * as a rule: the issuer's (a request queued in a scheduler before
	 * the programs came and dispatched by the app is then the app's:
	 * not handled there). */
	if (by_owner && !(origin == O_ISSUE && has_io_start)) {
		__u32 tgid = bpf_get_current_pid_tgid() >> 32;
		n->app = bpf_map_lookup_elem(&app, &tgid) != 0;
	}
	if (!records)
		return;
	__u64 id = bpf_get_current_pid_tgid();
	n->tid = (__u32)id;
	n->pid = id >> 32;
	bpf_get_current_comm(n->comm, sizeof(n->comm));
	n->origin = origin;
	/* A bio-based device's bio is queued and issued at once. */
	if (origin == O_BIO_QUEUE)
		n->insert_ns = now;
}

static __always_inline void queued(__u32 dev, __u64 sector, __u32 flush, __u32 nr, int issue,
				   __u8 origin)
{
	struct key k = { .dev = dev, .flush = flush, .sector = flush ? 0 : sector };
	__u64 now = bpf_ktime_get_ns();
	struct pending *p = bpf_map_lookup_elem(&start, &k);
	/* An issue of a request inserted and not yet issued keeps its insert
	 * time; anything else at this key (a request merged away, a
	 * completion never seen) is stale and replaced, so it can neither
	 * lend a later request its time nor fill the map. */
	if (p && issue && p->issue_ns == 0) {
		p->issue_ns = now;
		p->nr_sector = nr;
		p->all_sectors = nr;
		return;
	}
	/* The insert of a request already started (block_io_start, in its
	 * submitter), or of one the driver gave back: its start and owner
	 * stay, as iolab's tracefs tracker keeps them. */
	if (p && !issue && p->issue_ns == 0 && (p->origin == O_IO_START || p->requeues))
		return;
	struct pending n = { .insert_ns = issue ? 0 : now, .issue_ns = issue ? now : 0, .sector = sector,
			     .nr_sector = nr, .all_sectors = nr };
	owned(&n, origin, now);
	if (bpf_map_update_elem(&start, &k, &n, BPF_ANY))
		count(C_START_FULL);
}

/* A bio of a bio-based device, queued and issued at once: into this
 * CPU's slot when there is one (see `slots`). */
static __always_inline void bio_queued(__u32 dev, __u64 sector, __u32 flush, __u32 nr)
{
	struct key k = { .dev = dev, .flush = flush, .sector = flush ? 0 : sector };
	__u64 now = bpf_ktime_get_ns();
	struct pending n = { .issue_ns = now, .sector = sector, .nr_sector = nr, .all_sectors = nr };
	owned(&n, O_BIO_QUEUE, now);
#ifndef IOLAB_NO_SLOTS
	__u32 z = 0;
	struct slot *s = fast_cpus ? bpf_map_lookup_elem(&slots, &z) : 0;
	if (s) {
		/* A fully ordered read: the slot's bio is read after its gen. */
		__u64 g = __sync_fetch_and_add(&s->gen, 0);
		if (g & 1) {
			/* The spilled bio is in `start` before it leaves the
			 * slot, so a completion always finds it in one of the
			 * two; if another CPU took it meanwhile, the copy goes. */
			struct key ok = s->k;
			struct pending op = s->p;
			if (bpf_map_update_elem(&start, &ok, &op, BPF_ANY))
				count(C_START_FULL);
			if (__sync_val_compare_and_swap(&s->gen, g, g + 1) == g)
				count(C_SPILLED);
			else
				bpf_map_delete_elem(&start, &ok);
			g = g + 1;
		}
		s->k = k;
		s->p = n;
		/* Published with a fully ordered compare-and-swap (only this
		 * CPU writes an empty slot): the bio is seen whole. */
		__sync_val_compare_and_swap(&s->gen, g, g + 1);
		return;
	}
#endif
	if (bpf_map_update_elem(&start, &k, &n, BPF_ANY))
		count(C_START_FULL);
}

#ifndef IOLAB_NO_SLOTS
/* Takes slot `s`'s bio into `out` when it is the one at `k`. */
static __always_inline int slot_take(struct slot *s, struct key *k, struct pending *out)
{
	__u64 g = __sync_fetch_and_add(&s->gen, 0);
	if (!(g & 1) || s->k.dev != k->dev || s->k.sector != k->sector || s->k.flush != k->flush)
		return 0;
	*out = s->p;
	return __sync_val_compare_and_swap(&s->gen, g, g + 1) == g;
}
#endif

/* The pending request at `k` in `start`, removed: an issued one, or an
 * empty pre-flush write (no sectors, not itself a flush), which is never
 * issued: it completes when the flush it waited for does, and diskstats
 * counts it as a write (iolab's tracefs tracker takes it the same way). */
static __always_inline int take_from_start(struct key *k, struct pending *out)
{
	struct pending *p = bpf_map_lookup_elem(&start, k);
	if (!p || (!p->issue_ns && (p->all_sectors || k->flush)))
		return 0;
	*out = *p;
	bpf_map_delete_elem(&start, k);
	return 1;
}

/* The pending request at `k`, removed: a bio-based device's from the
 * CPUs' slots or `start`, a request's from `start`. */
static __always_inline int take(struct key *k, int bio_based, struct pending *out)
{
#ifndef IOLAB_NO_SLOTS
	__u32 z = 0;
	struct slot *s = 0;
	if (bio_based && fast_cpus) {
		s = bpf_map_lookup_elem(&slots, &z);
		if (s && slot_take(s, k, out))
			return 1;
	}
#endif
	if (take_from_start(k, out))
		return 1;
#ifndef IOLAB_NO_SLOTS
	if (!bio_based || !fast_cpus)
		return 0;
	for (__u32 cpu = 0; cpu < MAX_CPUS; cpu++) {
		if (cpu >= fast_cpus)
			break;
		s = bpf_map_lookup_percpu_elem(&slots, &z, cpu);
		if (s && slot_take(s, k, out)) {
			count(C_FROM_OTHER);
			return 1;
		}
	}
	/* Spilled from its slot while this CPU looked. */
	return take_from_start(k, out);
#else
	return 0;
#endif
}

/* One completed request into the ring buffer (`records`). No wakeup:
 * user space reads on its own clock, so a completion never pays for
 * waking it. */
static __always_inline void emit(struct pending *p, __u32 dev, __u8 op, __u8 flags, __u8 status,
				 __u64 now)
{
	struct rec *r;
	/* Each call names its map: the verifier needs a constant map pointer. */
	switch (bpf_get_smp_processor_id() & (NR_RINGS - 1)) {
	case 0: r = bpf_ringbuf_reserve(&records_rb0, sizeof(*r), 0); break;
	case 1: r = bpf_ringbuf_reserve(&records_rb1, sizeof(*r), 0); break;
	case 2: r = bpf_ringbuf_reserve(&records_rb2, sizeof(*r), 0); break;
	case 3: r = bpf_ringbuf_reserve(&records_rb3, sizeof(*r), 0); break;
	case 4: r = bpf_ringbuf_reserve(&records_rb4, sizeof(*r), 0); break;
	case 5: r = bpf_ringbuf_reserve(&records_rb5, sizeof(*r), 0); break;
	case 6: r = bpf_ringbuf_reserve(&records_rb6, sizeof(*r), 0); break;
	default: r = bpf_ringbuf_reserve(&records_rb7, sizeof(*r), 0); break;
	}
	if (!r) {
		count(C_LOST);
		return;
	}
	r->queue_ns = p->insert_ns;
	r->issue_ns = p->issue_ns;
	r->complete_ns = now;
	r->sector = p->sector;
	r->dev = dev;
	r->nr_sector = p->all_sectors;
	r->tid = p->tid;
	r->pid = p->pid;
	__builtin_memcpy(r->comm, p->comm, sizeof(r->comm));
	r->requeues = p->requeues;
	r->origin = p->origin;
	r->op = op;
	r->flags = flags;
	r->status = status;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

/* `di`: the device's index in the table, which the caller looked up;
 * `flags` and `status` are only read with `records`. */
static __always_inline void completed(int di, __u32 dev, __u64 sector, __u32 flush, __u8 op, __u32 nr,
				      __u8 flags, __u8 status)
{
	struct key k = { .dev = dev, .flush = flush, .sector = flush ? 0 : sector };
	struct pending rest;
	if (!take(&k, is_bio_based(di), &rest)) {
		count(C_UNMATCHED);
		return;
	}
	__u64 now = bpf_ktime_get_ns();
	/* Device time from the issue, or from the insert of a request never
	 * issued itself (as BioRequest::lat_ns). */
	__u64 lat = now - (rest.issue_ns ? rest.issue_ns : rest.insert_ns);
	__u64 que = rest.insert_ns && rest.issue_ns ? rest.issue_ns - rest.insert_ns : 0;
	if (!flush && nr < rest.nr_sector) {
		/* A partial completion: the rest goes on from the next sector. */
		struct key k2 = { .dev = dev, .flush = 0, .sector = sector + nr };
		rest.nr_sector -= nr;
		bpf_map_update_elem(&start, &k2, &rest, BPF_ANY);
		count(C_PARTIAL);
		return;
	}
	if (records) {
		/* Only a pre-flush write completes unissued (take_from_start):
		 * the flush machinery has cleared its PREFLUSH by now, which
		 * its rwbs at its start showed, as the tracefs tracker keeps. */
		if (!rest.issue_ns)
			flags |= 1;
		emit(&rest, dev, op, flags, status, now);
		return;
	}
	__u32 ci = dev_slot[di & (MAX_DEVS - 1)] * OPS + op_index(op);
	if (by_owner && rest.app)
		ci += nslots * OPS;
	struct cell *c = bpf_map_lookup_elem(&cells, &ci);
	if (!c) {
		count(C_NO_SLOT);
		return;
	}
	__u64 bytes = (__u64)rest.all_sectors * 512;
	if (c->count == 0 || lat < c->lat_min_ns)
		c->lat_min_ns = lat;
	if (lat > c->lat_max_ns)
		c->lat_max_ns = lat;
	c->count += 1;
	c->bytes += bytes;
	c->lat_ns += lat;
	c->que_ns += que;
	__u16 l2 = log2_slot(lat);
	if (l2 < LOG2_NR)
		c->lat_log2[l2] += 1;
	__u16 q2 = log2_slot(que);
	if (q2 < LOG2_NR)
		c->que_log2[q2] += 1;
	__u16 pl = plat_slot(lat);
	if (pl < PLAT_NR)
		c->lat_plat[pl] += 1;
	__u16 pq = plat_slot(que);
	if (pq < PLAT_NR)
		c->que_plat[pq] += 1;
}

SEC("tracepoint/block/block_rq_insert")
int rq_insert(void *ctx)
{
	__u32 dev = field32(ctx, rq_dev), flush;
	if (dev_index(dev) < 0)
		return 0;
	op_of(ctx, rq_rwbs, &flush);
	queued(dev, field64(ctx, rq_sector), flush, field32(ctx, rq_nr_sector), 0, O_INSERT);
	return 0;
}

/* Classic mode follows no merges, so it takes no queue times from
 * block_io_start (a request merged away would leave its start behind);
 * but an empty pre-flush write is neither inserted nor issued (the flush
 * machinery holds it until its flush completes) and diskstats counts it
 * as a write: its start is its only event before its completion. Same
 * event class as block_rq_insert, so the same field offsets. */
SEC("tracepoint/block/block_io_start")
int rq_io_start_empty(void *ctx)
{
	__u32 dev = field32(ctx, rq_dev), flush;
	if (field32(ctx, rq_nr_sector) || dev_index(dev) < 0)
		return 0;
	op_of(ctx, rq_rwbs, &flush);
	if (!flush)
		queued(dev, field64(ctx, rq_sector), 0, 0, 0, O_IO_START);
	return 0;
}

SEC("tracepoint/block/block_rq_issue")
int rq_issue(void *ctx)
{
	__u32 dev = field32(ctx, rq_dev), flush;
	if (dev_index(dev) < 0)
		return 0;
	op_of(ctx, rq_rwbs, &flush);
	queued(dev, field64(ctx, rq_sector), flush, field32(ctx, rq_nr_sector), 1, O_ISSUE);
	return 0;
}

/* block_rq_requeue has its own format (no `bytes`): its own offsets. */
SEC("tracepoint/block/block_rq_requeue")
int rq_requeue(void *ctx)
{
	__u32 dev = field32(ctx, rqq_dev), flush;
	if (dev_index(dev) < 0)
		return 0;
	op_of(ctx, rqq_rwbs, &flush);
	struct key k = { .dev = dev, .flush = flush, .sector = flush ? 0 : field64(ctx, rqq_sector) };
	struct pending *p = bpf_map_lookup_elem(&start, &k);
	if (p) {
		p->issue_ns = 0;
		p->requeues += 1;
	}
	count(C_REQUEUE);
	return 0;
}

SEC("tracepoint/block/block_rq_complete")
int rq_complete(void *ctx)
{
	__u32 dev = field32(ctx, cp_dev), flush;
	int di = dev_index(dev);
	if (di < 0)
		return 0;
	__u8 op = op_of(ctx, cp_rwbs, &flush);
	completed(di, dev, field64(ctx, cp_sector), flush, op, field32(ctx, cp_nr_sector), 0, 0);
	return 0;
}

SEC("tracepoint/block/block_bio_queue")
int bio_queue(void *ctx)
{
	__u32 dev = field32(ctx, bio_dev), flush;
	int di = dev_index(dev);
	if (di < 0 || !is_bio_based(di))
		return 0;
	op_of(ctx, bio_rwbs, &flush);
	bio_queued(dev, field64(ctx, bio_sector), flush, field32(ctx, bio_nr_sector));
	return 0;
}

SEC("tracepoint/block/block_bio_complete")
int bio_complete(void *ctx)
{
	__u32 dev = field32(ctx, bc_dev), flush;
	int di = dev_index(dev);
	if (di < 0 || !is_bio_based(di))
		return 0;
	__u8 op = op_of(ctx, bc_rwbs, &flush);
	completed(di, dev, field64(ctx, bc_sector), flush, op, field32(ctx, bc_nr_sector), 0, 0);
	return 0;
}

/*
 * The same, on raw tracepoints: the kernel hands the program the
 * tracepoint's arguments instead of building its trace record first,
 * which on this machine is most of a classic tracepoint program's cost.
 * The fields are read from the kernel's structures, relocated by CO-RE
 * against the running kernel's BTF at load (only the fields named here,
 * as the kernel names them). A kernel whose structures lack them fails
 * the load, and one without BTF is not offered them (nothing would
 * relocate the reads): the classic programs above are used instead.
 */
struct block_device {
	__u32 bd_dev;
} __attribute__((preserve_access_index));

struct bvec_iter {
	__u64 bi_sector;
	__u32 bi_size;
} __attribute__((preserve_access_index));

struct bio {
	struct block_device *bi_bdev;
	__u32 bi_opf;
	__u8 bi_status;
	struct bvec_iter bi_iter;
} __attribute__((preserve_access_index));

/* The request flags rwbs shows (blk_types.h): their bit numbers are
 * relocated against the running kernel's enum, which has moved them
 * between releases. */
enum req_flag_bits {
	__REQ_SYNC = 11,
	__REQ_META = 12,
	__REQ_FUA = 17,
	__REQ_PREFLUSH = 18,
	__REQ_RAHEAD = 19,
};

struct gendisk {
	int major;
	int first_minor;
} __attribute__((preserve_access_index));

struct request_queue {
	struct gendisk *disk;
} __attribute__((preserve_access_index));

struct request {
	struct request_queue *q;
	__u32 cmd_flags;
	__u32 __data_len;
	__u64 __sector;
} __attribute__((preserve_access_index));

/* The RWBS_* flags (iolab_bio::event) of a request's or bio's opf, as
 * the kernel's blk_fill_rwbs shows them. */
static __always_inline __u8 rwbs_flags(__u32 opf)
{
	__u8 f = 0;
	if (!records)
		return 0;
	if (opf & (1u << (bpf_core_enum_value(enum req_flag_bits, __REQ_PREFLUSH) & 31)))
		f |= 1;
	if (opf & (1u << (bpf_core_enum_value(enum req_flag_bits, __REQ_FUA) & 31)))
		f |= 2;
	if (opf & (1u << (bpf_core_enum_value(enum req_flag_bits, __REQ_RAHEAD) & 31)))
		f |= 4;
	if (opf & (1u << (bpf_core_enum_value(enum req_flag_bits, __REQ_SYNC) & 31)))
		f |= 8;
	if (opf & (1u << (bpf_core_enum_value(enum req_flag_bits, __REQ_META) & 31)))
		f |= 16;
	return f;
}

/* REQ_OP_* (blk_types.h) → the operation letter. */
static __always_inline __u8 op_of_flags(__u32 opf, __u32 *flush)
{
	__u8 op;
	switch (opf & 0xff) {
	case 0: op = 'R'; break;
	case 1: op = 'W'; break;
	case 2: op = 'F'; break;
	case 3: case 5: op = 'D'; break;
	default: op = 'N';
	}
	*flush = op == 'F';
	return op;
}

/* Each request queue's disk, found once: rq->q->disk->{major,first_minor}
 * is three reads (~50 ns each here) in every program of every request; a
 * queue keeps its disk while the disk is attached, so the first request
 * on a queue looks it up and the rest find it in one lookup. A disk not
 * traced is remembered too (0), so its requests cost one lookup. A queue
 * with no disk yet (a SCSI scan's commands) is not remembered. Not
 * covered: a traced disk removed during the trace whose queue's memory
 * a new disk's queue then reuses (counted as the old disk). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u32);
} queues SEC(".maps");

static __always_inline __u32 queue_dev(struct request_queue *q)
{
	__u64 key = (__u64)q;
	__u32 *d = bpf_map_lookup_elem(&queues, &key);
	if (d)
		return *d;
	struct gendisk *disk = BPF_CORE_READ(q, disk);
	if (!disk)
		return 0;
	int major = BPF_CORE_READ(disk, major), minor = BPF_CORE_READ(disk, first_minor);
	__u32 dev = ((__u32)major << 20) | ((__u32)minor & 0xfffff);
	__u32 keep = dev_index(dev) < 0 ? 0 : dev;
	bpf_map_update_elem(&queues, &key, &keep, BPF_ANY);
	return keep;
}

/* A request's fields in one read of its head (q to __sector) at offsets
 * CO-RE relocates, as bio_read does for a bio; a layout that does not fit
 * reads them one by one. `dev` is 0 for a disk not traced. */
#define RQ_HEAD 64
struct rq_fields {
	__u32 dev;
	__u32 opf;
	__u64 sector;
	__u32 len;
};

static __always_inline int rq_read(struct request *rq, struct rq_fields *f)
{
	__u32 o_q = bpf_core_field_offset(rq->q);
	__u32 o_opf = bpf_core_field_offset(rq->cmd_flags);
	__u32 o_len = bpf_core_field_offset(rq->__data_len);
	__u32 o_sector = bpf_core_field_offset(rq->__sector);
	struct request_queue *q;
	if (o_q + 8 <= RQ_HEAD && o_opf + 4 <= RQ_HEAD && o_len + 4 <= RQ_HEAD &&
	    o_sector + 8 <= RQ_HEAD) {
		__u8 head[RQ_HEAD];
		if (bpf_probe_read_kernel(head, sizeof(head), rq))
			return -1;
		q = *(struct request_queue **)(head + (o_q & (RQ_HEAD - 8)));
		f->opf = *(__u32 *)(head + (o_opf & (RQ_HEAD - 4)));
		f->len = *(__u32 *)(head + (o_len & (RQ_HEAD - 4)));
		f->sector = *(__u64 *)(head + (o_sector & (RQ_HEAD - 8)));
	} else {
		q = BPF_CORE_READ(rq, q);
		f->opf = BPF_CORE_READ(rq, cmd_flags);
		f->len = BPF_CORE_READ(rq, __data_len);
		f->sector = BPF_CORE_READ(rq, __sector);
	}
	f->dev = q ? queue_dev(q) : 0;
	return 0;
}

/* A bio's fields in two reads instead of five (each read is a helper
 * call, most of a raw program's cost): the head of the struct, from
 * bi_bdev to the end of bi_iter, at offsets CO-RE relocates; a kernel
 * whose layout does not fit the window reads them one by one. */
#define BIO_HEAD 64
struct bio_fields {
	__u32 dev;
	__u32 opf;
	__u64 sector;
	__u32 size;
	__u8 status;
};

static __always_inline int bio_read(struct bio *bio, struct bio_fields *f)
{
	__u32 o_bdev = bpf_core_field_offset(bio->bi_bdev);
	__u32 o_opf = bpf_core_field_offset(bio->bi_opf);
	__u32 o_sector = bpf_core_field_offset(bio->bi_iter.bi_sector);
	__u32 o_size = bpf_core_field_offset(bio->bi_iter.bi_size);
	__u32 o_status = bpf_core_field_offset(bio->bi_status);
	struct block_device *bdev;
	if (o_bdev + 8 <= BIO_HEAD && o_opf + 4 <= BIO_HEAD && o_sector + 8 <= BIO_HEAD &&
	    o_size + 4 <= BIO_HEAD && o_status < BIO_HEAD) {
		__u8 head[BIO_HEAD];
		if (bpf_probe_read_kernel(head, sizeof(head), bio))
			return -1;
		bdev = *(struct block_device **)(head + (o_bdev & (BIO_HEAD - 8)));
		f->opf = *(__u32 *)(head + (o_opf & (BIO_HEAD - 4)));
		f->sector = *(__u64 *)(head + (o_sector & (BIO_HEAD - 8)));
		f->size = *(__u32 *)(head + (o_size & (BIO_HEAD - 4)));
		f->status = head[o_status & (BIO_HEAD - 1)];
	} else {
		bdev = BPF_CORE_READ(bio, bi_bdev);
		f->opf = BPF_CORE_READ(bio, bi_opf);
		f->sector = BPF_CORE_READ(bio, bi_iter.bi_sector);
		f->size = BPF_CORE_READ(bio, bi_iter.bi_size);
		f->status = BPF_CORE_READ(bio, bi_status);
	}
	f->dev = BPF_CORE_READ(bdev, bd_dev);
	return 0;
}

/* A bio's fields read directly, in a BTF-typed tracepoint program
 * (tp_btf): the verifier knows the argument is a `struct bio *`, so each
 * read is one load (a fault reads 0) instead of a helper call, which on
 * this machine is ~90 ns of a raw program's ~160. Offsets relocated by
 * CO-RE as bio_read's are. */
static __always_inline void bio_read_btf(struct bio *bio, struct bio_fields *f)
{
	f->dev = bio->bi_bdev->bd_dev;
	f->opf = bio->bi_opf;
	f->sector = bio->bi_iter.bi_sector;
	f->size = bio->bi_iter.bi_size;
	f->status = bio->bi_status;
}

/* A request's fields read directly (tp_btf): its disk too, three loads
 * that cost less than the `queues` lookup the raw programs make. A disk
 * not traced is 0, as queue_dev gives it. */
static __always_inline void rq_read_btf(struct request *rq, struct rq_fields *f)
{
	struct gendisk *disk = rq->q->disk;
	f->opf = rq->cmd_flags;
	f->len = rq->__data_len;
	f->sector = rq->__sector;
	f->dev = 0;
	if (disk) {
		__u32 dev = ((__u32)disk->major << 20) | ((__u32)disk->first_minor & 0xfffff);
		f->dev = dev_index(dev) < 0 ? 0 : dev;
	}
}

/* What each program does once its fields are read: shared by the raw
 * programs (helper reads) and the tp_btf ones (direct reads). */
static __always_inline int on_bio_queue(struct bio_fields *f)
{
	__u32 flush;
	int di = dev_index(f->dev);
	if (di < 0 || !is_bio_based(di))
		return 0;
	op_of_flags(f->opf, &flush);
	bio_queued(f->dev, f->sector, flush, f->size >> 9);
	return 0;
}

static __always_inline int on_bio_complete(struct bio_fields *f)
{
	__u32 flush;
	int di = dev_index(f->dev);
	if (di < 0 || !is_bio_based(di))
		return 0;
	__u8 op = op_of_flags(f->opf, &flush);
	completed(di, f->dev, f->sector, flush, op, f->size >> 9, rwbs_flags(f->opf), f->status);
	return 0;
}

SEC("raw_tracepoint/block_bio_queue")
int raw_bio_queue(struct bpf_raw_tracepoint_args *ctx)
{
	struct bio_fields f;
	if (bio_read((struct bio *)ctx->args[0], &f))
		return 0;
	return on_bio_queue(&f);
}

SEC("raw_tracepoint/block_bio_complete")
int raw_bio_complete(struct bpf_raw_tracepoint_args *ctx)
{
	struct bio_fields f;
	if (bio_read((struct bio *)ctx->args[1], &f))
		return 0;
	return on_bio_complete(&f);
}

/* A traced request's key in `start`; non-zero when its disk is not traced. */
static __always_inline int rq_key(struct rq_fields *f, struct key *k)
{
	__u32 flush;
	if (!f->dev)
		return -1;
	op_of_flags(f->opf, &flush);
	k->dev = f->dev;
	k->flush = flush;
	k->sector = flush ? 0 : f->sector;
	return 0;
}

static __always_inline int on_rq(struct rq_fields *f, int issue, __u8 origin)
{
	__u32 flush;
	if (!f->dev)
		return 0;
	op_of_flags(f->opf, &flush);
	queued(f->dev, f->sector, flush, f->len >> 9, issue, origin);
	return 0;
}

static __always_inline int raw_rq(struct request *rq, int issue, __u8 origin)
{
	struct rq_fields f;
	if (rq_read(rq, &f))
		return 0;
	return on_rq(&f, issue, origin);
}

static __always_inline int btf_rq(struct request *rq, int issue, __u8 origin)
{
	struct rq_fields f;
	rq_read_btf(rq, &f);
	return on_rq(&f, issue, origin);
}

/* block_io_start(rq): a request made from a bio, in its submitter's
 * context (kernels ≥ 6.5; what biosnoop takes the owner from): its queue
 * time starts here, as the tracefs tracker's does. Attached on raw
 * tracepoints wherever the kernel has it. */
SEC("raw_tracepoint/block_io_start")
int raw_rq_io_start(struct bpf_raw_tracepoint_args *ctx)
{
	return raw_rq((struct request *)ctx->args[0], 0, O_IO_START);
}

struct task_struct {
	int pid;
	int tgid;
} __attribute__((preserve_access_index));

static __always_inline int on_app_fork(__u32 ptgid, __u32 ctgid)
{
	if (!bpf_map_lookup_elem(&app, &ptgid))
		return 0;
	__u8 one = 1;
	if (bpf_map_update_elem(&app, &ctgid, &one, BPF_ANY))
		count(C_APP_FULL);
	return 0;
}

/* sched_process_fork(parent, child): a process the app forks is the
 * app's (threads share their process's tgid). Attached with `by_owner`. */
SEC("raw_tracepoint/sched_process_fork")
int raw_app_fork(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *parent = (struct task_struct *)ctx->args[0];
	struct task_struct *child = (struct task_struct *)ctx->args[1];
	return on_app_fork(BPF_CORE_READ(parent, tgid), BPF_CORE_READ(child, tgid));
}

/* block_rq_merge(rq): `rq`, not yet issued, was merged into another
 * request and is gone. */
static __always_inline int on_rq_merge(struct rq_fields *f)
{
	struct key k;
	if (rq_key(f, &k))
		return 0;
	struct pending *p = bpf_map_lookup_elem(&start, &k);
	if (p && p->issue_ns == 0) {
		bpf_map_delete_elem(&start, &k);
		count(C_MERGED);
	}
	return 0;
}

SEC("raw_tracepoint/block_rq_merge")
int raw_rq_merge(struct bpf_raw_tracepoint_args *ctx)
{
	struct rq_fields f;
	if (rq_read((struct request *)ctx->args[0], &f))
		return 0;
	return on_rq_merge(&f);
}

/* block_bio_frontmerge(bio): `bio` joined the front of a queued request,
 * which now starts at the bio's sector: its entry moves there. */
static __always_inline int on_bio_fmerge(struct bio_fields *f)
{
	int di = dev_index(f->dev);
	if (di < 0)
		return 0;
	/* Requests are keyed by their disk; the bio names its partition. */
	__u32 disk = slot_dev[dev_slot[di & (MAX_DEVS - 1)] & (MAX_SLOTS - 1)];
	struct key from = { .dev = disk, .flush = 0, .sector = f->sector + (f->size >> 9) };
	struct pending *p = bpf_map_lookup_elem(&start, &from);
	if (!p || p->issue_ns)
		return 0;
	struct pending moved = *p;
	moved.sector = f->sector;
	bpf_map_delete_elem(&start, &from);
	struct key to = { .dev = disk, .flush = 0, .sector = f->sector };
	if (bpf_map_update_elem(&start, &to, &moved, BPF_ANY))
		count(C_START_FULL);
	return 0;
}

SEC("raw_tracepoint/block_bio_frontmerge")
int raw_bio_fmerge(struct bpf_raw_tracepoint_args *ctx)
{
	struct bio_fields f;
	if (bio_read((struct bio *)ctx->args[0], &f))
		return 0;
	return on_bio_fmerge(&f);
}

SEC("raw_tracepoint/block_rq_insert")
int raw_rq_insert(struct bpf_raw_tracepoint_args *ctx)
{
	return raw_rq((struct request *)ctx->args[0], 0, O_INSERT);
}

SEC("raw_tracepoint/block_rq_issue")
int raw_rq_issue(struct bpf_raw_tracepoint_args *ctx)
{
	return raw_rq((struct request *)ctx->args[0], 1, O_ISSUE);
}

static __always_inline int on_rq_requeue(struct rq_fields *f)
{
	struct key k;
	if (rq_key(f, &k))
		return 0;
	struct pending *p = bpf_map_lookup_elem(&start, &k);
	if (p) {
		p->issue_ns = 0;
		p->requeues += 1;
	}
	count(C_REQUEUE);
	return 0;
}

SEC("raw_tracepoint/block_rq_requeue")
int raw_rq_requeue(struct bpf_raw_tracepoint_args *ctx)
{
	struct rq_fields f;
	if (rq_read((struct request *)ctx->args[0], &f))
		return 0;
	return on_rq_requeue(&f);
}

/* block_rq_complete(rq, error, nr_bytes): the bytes completed now. */
static __always_inline int on_rq_complete(struct rq_fields *f, __u8 error, __u64 nr_bytes)
{
	__u32 flush;
	if (!f->dev)
		return 0;
	int di = dev_index(f->dev);
	if (di < 0)
		return 0;
	__u8 op = op_of_flags(f->opf, &flush);
	completed(di, f->dev, f->sector, flush, op, (__u32)(nr_bytes >> 9), rwbs_flags(f->opf), error);
	return 0;
}

SEC("raw_tracepoint/block_rq_complete")
int raw_rq_complete(struct bpf_raw_tracepoint_args *ctx)
{
	struct rq_fields f;
	if (rq_read((struct request *)ctx->args[0], &f))
		return 0;
	return on_rq_complete(&f, (__u8)ctx->args[1], ctx->args[2]);
}

/*
 * The same on BTF-typed tracepoints (tp_btf, kernels ≥ 5.5 with BTF):
 * the arguments are typed, so fields are read with plain loads. The
 * context is the tracepoint's arguments as u64s, as a raw program's is.
 * Where the kernel refuses these (no BTF, a verifier that does not know
 * a field), the raw programs above are used.
 */
SEC("tp_btf/block_bio_queue")
int btf_bio_queue(__u64 *ctx)
{
	struct bio_fields f;
	bio_read_btf((struct bio *)ctx[0], &f);
	return on_bio_queue(&f);
}

SEC("tp_btf/block_bio_complete")
int btf_bio_complete(__u64 *ctx)
{
	struct bio_fields f;
	bio_read_btf((struct bio *)ctx[1], &f);
	return on_bio_complete(&f);
}

SEC("tp_btf/block_io_start")
int btf_rq_io_start(__u64 *ctx)
{
	return btf_rq((struct request *)ctx[0], 0, O_IO_START);
}

SEC("tp_btf/sched_process_fork")
int btf_app_fork(__u64 *ctx)
{
	struct task_struct *parent = (struct task_struct *)ctx[0];
	struct task_struct *child = (struct task_struct *)ctx[1];
	return on_app_fork(parent->tgid, child->tgid);
}

SEC("tp_btf/block_rq_merge")
int btf_rq_merge(__u64 *ctx)
{
	struct rq_fields f;
	rq_read_btf((struct request *)ctx[0], &f);
	return on_rq_merge(&f);
}

SEC("tp_btf/block_bio_frontmerge")
int btf_bio_fmerge(__u64 *ctx)
{
	struct bio_fields f;
	bio_read_btf((struct bio *)ctx[0], &f);
	return on_bio_fmerge(&f);
}

SEC("tp_btf/block_rq_insert")
int btf_rq_insert(__u64 *ctx)
{
	return btf_rq((struct request *)ctx[0], 0, O_INSERT);
}

SEC("tp_btf/block_rq_issue")
int btf_rq_issue(__u64 *ctx)
{
	return btf_rq((struct request *)ctx[0], 1, O_ISSUE);
}

SEC("tp_btf/block_rq_requeue")
int btf_rq_requeue(__u64 *ctx)
{
	struct rq_fields f;
	rq_read_btf((struct request *)ctx[0], &f);
	return on_rq_requeue(&f);
}

SEC("tp_btf/block_rq_complete")
int btf_rq_complete(__u64 *ctx)
{
	struct rq_fields f;
	rq_read_btf((struct request *)ctx[0], &f);
	return on_rq_complete(&f, (__u8)ctx[1], ctx[2]);
}
