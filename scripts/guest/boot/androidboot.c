/*
 * The boot guest's stand-in for Android's boot (scripts/guest/boot/init):
 * what reads the disk does so as Android's processes do, by page faults
 * on files mapped into memory, 4 KiB at a time plus the kernel's
 * read-around, with CPU work between them, so that a prefetch, the I/O
 * scheduler and each task's priority meet the pattern they meet on a
 * phone: a task blocked on one page at a time, the CPU idle at each miss.
 *
 *   androidboot services FILE...     native daemons: each FILE mapped by a
 *                                    process of its own, its pages touched
 *                                    in a scattered order (code paths)
 *   androidboot zygote ART CLASSES   zygote's preload: the boot image mapped,
 *                                    one 256 KiB class piece per line of
 *                                    CLASSES touched page by page
 *   androidboot scan APK...          the package manager's scan: each APK
 *                                    mapped, its zip end (central directory)
 *                                    and first page touched
 *   androidboot server JAR           system_server: its jar mapped and
 *                                    touched in order
 *
 * IOLAB_CPU_US (environment; default 40): CPU time per touched page, in
 * microseconds of this machine's own loop (calibrated at start against
 * CLOCK_THREAD_CPUTIME_ID), standing in for class linking, verification,
 * parsing. Each phase prints `androidboot: PHASE START END` (CLOCK_BOOTTIME,
 * s) so the guest's init can say how long each took.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096

static double cpu_us = 40;
static uint64_t loops_per_us = 1;
static volatile uint64_t sink;

static double now(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Busy work, not a sleep: the CPU is what it stands for. */
static void spin(uint64_t n)
{
	uint64_t x = sink | 1;
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

/* How many loop turns one microsecond of this thread's CPU holds. */
static void calibrate(void)
{
	uint64_t n = 1 << 16;
	for (;;) {
		double t0 = now(CLOCK_THREAD_CPUTIME_ID);
		spin(n);
		double dt = now(CLOCK_THREAD_CPUTIME_ID) - t0;
		if (dt > 0.02) {
			loops_per_us = (uint64_t)(n / (dt * 1e6)) + 1;
			return;
		}
		n *= 2;
	}
}

static void work(void) { spin((uint64_t)(cpu_us * loops_per_us)); }

/* Maps FILE read-only; its size in *len; NULL (and a line) on failure. */
static const unsigned char *map(const char *file, size_t *len)
{
	int fd = open(file, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size == 0) {
		fprintf(stderr, "androidboot: cannot map %s\n", file);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	void *p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return NULL;
	*len = st.st_size;
	return p;
}

/* A page fault (the read of one byte of it), then the CPU work. */
static void touch(const unsigned char *p, size_t off)
{
	sink += p[off];
	work();
}

static void phase(const char *name, double start)
{
	printf("androidboot: %s %.3f %.3f\n", name, start, now(CLOCK_BOOTTIME));
	fflush(stdout);
}

/* A daemon: its binary's pages in a fixed scattered order (a stride
 * coprime with the page count), as code paths jump about. */
static void service(const char *file)
{
	size_t len;
	const unsigned char *p = map(file, &len);
	if (!p)
		return;
	size_t pages = len / PAGE, step = 97;
	while (pages > 1 && pages % step == 0)
		step += 2;
	for (size_t i = 0, at = 0; i < pages; i++, at = (at + step) % pages)
		touch(p, at * PAGE);
}

static int services(int n, char **files)
{
	double t0 = now(CLOCK_BOOTTIME);
	for (int i = 0; i < n; i++) {
		pid_t c = fork();
		if (c == 0) {
			service(files[i]);
			_exit(0);
		}
	}
	while (wait(NULL) > 0)
		;
	phase("services", t0);
	return 0;
}

static int zygote(const char *art, const char *classes)
{
	double t0 = now(CLOCK_BOOTTIME);
	size_t len;
	const unsigned char *p = map(art, &len);
	FILE *f = fopen(classes, "r");
	if (!p || !f)
		return 1;
	long piece;
	while (fscanf(f, "%ld", &piece) == 1) {
		size_t base = (size_t)piece * 256 * 1024;
		for (size_t o = 0; o < 256 * 1024 && base + o < len; o += PAGE)
			touch(p, base + o);
	}
	fclose(f);
	phase("zygote", t0);
	return 0;
}

static int scan(int n, char **apks)
{
	double t0 = now(CLOCK_BOOTTIME);
	for (int i = 0; i < n; i++) {
		size_t len;
		const unsigned char *p = map(apks[i], &len);
		if (!p)
			continue;
		/* The zip's end of central directory and the directory before
		 * it, then the manifest near the start. */
		for (size_t o = 0; o < 16 * 1024 && o < len; o += PAGE)
			touch(p, len - 1 - o);
		touch(p, 0);
		munmap((void *)p, len);
	}
	phase("scan", t0);
	return 0;
}

static int server(const char *jar)
{
	double t0 = now(CLOCK_BOOTTIME);
	size_t len;
	const unsigned char *p = map(jar, &len);
	if (!p)
		return 1;
	for (size_t o = 0; o < len; o += PAGE)
		touch(p, o);
	phase("server", t0);
	return 0;
}

int main(int argc, char **argv)
{
	const char *e = getenv("IOLAB_CPU_US");
	if (e)
		cpu_us = atof(e);
	calibrate();
	if (argc >= 3 && !strcmp(argv[1], "services"))
		return services(argc - 2, argv + 2);
	if (argc == 4 && !strcmp(argv[1], "zygote"))
		return zygote(argv[2], argv[3]);
	if (argc >= 3 && !strcmp(argv[1], "scan"))
		return scan(argc - 2, argv + 2);
	if (argc == 3 && !strcmp(argv[1], "server"))
		return server(argv[2]);
	fprintf(stderr, "usage: androidboot services FILE... | zygote ART CLASSES | scan APK... | server JAR\n");
	return 2;
}
