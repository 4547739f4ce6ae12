/*
 * resprobe: what Linux says about one file's pages in the page cache, and
 * what the calls that move them do. A peer of mapwise's residency code:
 * run it beside the inspector on the same file and compare the counts.
 *
 *   resprobe stat FILE            mincore count, cachestat, RWF_NOWAIT probes
 *   resprobe evict FILE           fsync + POSIX_FADV_DONTNEED, then stat
 *   resprobe read FILE [FRACTION] read() the first FRACTION (0.5), then stat
 *   resprobe populate FILE        time mmap(MAP_POPULATE), then stat
 *   resprobe populate-read FILE   time madvise(MADV_POPULATE_READ), then stat
 *   resprobe willneed FILE        madvise(MADV_WILLNEED), wait 200 ms, stat
 *   resprobe map FILE             64-column residency bar (mincore only)
 *   resprobe kpageflags FILE      the kernel's flags of the first page (root)
 *
 * mincore(2) is asked about a fresh read-only mapping that is never
 * touched, so counting changes nothing. `stat` also tries three
 * preadv2(RWF_NOWAIT) reads, which fail on a miss but start read-ahead
 * there: it leaves a few pages behind; `map` does not.
 *
 * Build: cc -O2 -Wall -o resprobe resprobe.c (no dependencies).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* Newer than some headers: the numbers and flags of Linux itself. */
#ifndef __NR_cachestat
#define __NR_cachestat 451 /* x86_64 and aarch64 alike */
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif

/* cachestat(2)'s range and result. */
struct cachestat_range {
	uint64_t off, len;
};
struct cachestat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

static long page_size;

struct target {
	const char *path;
	int fd;
	off_t size;
	long pages;
};

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static struct target open_target(const char *path)
{
	struct target t = { .path = path };
	struct stat st;

	t.fd = open(path, O_RDONLY);
	if (t.fd < 0)
		die(path);
	if (fstat(t.fd, &st) != 0)
		die("fstat");
	t.size = st.st_size;
	t.pages = (long)((t.size + page_size - 1) / page_size);
	return t;
}

static void *map_target(const struct target *t, int extra_flags)
{
	void *m = mmap(NULL, (size_t)t->size, PROT_READ, MAP_SHARED | extra_flags, t->fd, 0);

	if (m == MAP_FAILED)
		die("mmap");
	return m;
}

/* Resident pages of the whole file; the per-page vector into *vec if
 * asked (the caller frees it). */
static long count_resident(const struct target *t, unsigned char **vec)
{
	void *m = map_target(t, 0);
	unsigned char *v = malloc((size_t)t->pages);
	long resident = 0;

	if (v == NULL)
		die("malloc");
	if (mincore(m, (size_t)t->size, v) != 0)
		die("mincore");
	for (long i = 0; i < t->pages; i++)
		resident += v[i] & 1;
	munmap(m, (size_t)t->size);
	if (vec)
		*vec = v;
	else
		free(v);
	return resident;
}

static void print_cachestat(const struct target *t)
{
	struct cachestat_range whole = { 0, 0 };
	struct cachestat cs;

	memset(&cs, 0, sizeof cs);
	if (syscall(__NR_cachestat, t->fd, &whole, &cs, 0) != 0) {
		printf("  cachestat: -1 %s\n", strerror(errno));
		return;
	}
	printf("  cachestat: nr_cache=%llu nr_dirty=%llu nr_writeback=%llu nr_evicted=%llu"
	       " nr_recently_evicted=%llu\n",
	       (unsigned long long)cs.nr_cache, (unsigned long long)cs.nr_dirty,
	       (unsigned long long)cs.nr_writeback, (unsigned long long)cs.nr_evicted,
	       (unsigned long long)cs.nr_recently_evicted);
}

/* A 4 KiB read that must not wait for the disk: it fails with EAGAIN
 * when the page is not cached. */
static void try_nowait(const struct target *t, off_t at)
{
	char buf[4096];
	struct iovec iov = { buf, sizeof buf };
	ssize_t got = preadv2(t->fd, &iov, 1, at, RWF_NOWAIT);

	if (got < 0)
		printf("  preadv2(RWF_NOWAIT) @%lld: -1 %s\n", (long long)at, strerror(errno));
	else
		printf("  preadv2(RWF_NOWAIT) @%lld: %zd bytes\n", (long long)at, got);
}

/* Every report ends with this, on a fresh descriptor. */
static void report(const char *path)
{
	struct target t = open_target(path);
	long resident = count_resident(&t, NULL);

	printf("%s: size=%lld pages=%ld\n", t.path, (long long)t.size, t.pages);
	printf("  mincore: %ld/%ld resident (%.1f%%)\n", resident, t.pages,
	       t.pages ? 100.0 * (double)resident / (double)t.pages : 0.0);
	print_cachestat(&t);
	try_nowait(&t, 0);
	try_nowait(&t, t.size / 2 + page_size);
	try_nowait(&t, t.size - page_size);
	close(t.fd);
}

static void cmd_stat(const char *path, const char *arg)
{
	(void)arg;
	report(path);
}

static void cmd_evict(const char *path, const char *arg)
{
	struct target t = open_target(path);

	(void)arg;
	/* Dirty pages cannot be dropped: write them back first. */
	if (fsync(t.fd) != 0)
		printf("  fsync: %s (continuing)\n", strerror(errno));
	int rc = posix_fadvise(t.fd, 0, 0, POSIX_FADV_DONTNEED);
	printf("posix_fadvise(DONTNEED) -> %d (%s)\n", rc, rc ? strerror(rc) : "ok");
	close(t.fd);
	report(path);
}

static void cmd_read(const char *path, const char *arg)
{
	struct target t = open_target(path);
	double fraction = arg ? atof(arg) : 0.5;
	off_t want = (off_t)((double)t.size * fraction), done = 0;
	size_t chunk = 1 << 16;
	char *buf = malloc(chunk);

	if (buf == NULL)
		die("malloc");
	double t0 = now_ms();
	while (done < want) {
		size_t n = want - done < (off_t)chunk ? (size_t)(want - done) : chunk;
		ssize_t got = read(t.fd, buf, n);

		if (got <= 0)
			break;
		done += got;
	}
	printf("read %lld of %lld bytes in %.2f ms\n", (long long)done, (long long)t.size,
	       now_ms() - t0);
	free(buf);
	close(t.fd);
	report(path);
}

static void cmd_populate(const char *path, const char *arg)
{
	struct target t = open_target(path);

	(void)arg;
	double t0 = now_ms();
	void *m = mmap(NULL, (size_t)t.size, PROT_READ, MAP_SHARED | MAP_POPULATE, t.fd, 0);
	double t1 = now_ms();
	if (m == MAP_FAILED)
		die("mmap");
	printf("mmap(MAP_POPULATE) of %lld bytes returned after %.2f ms\n", (long long)t.size,
	       t1 - t0);
	munmap(m, (size_t)t.size);
	close(t.fd);
	report(path);
}

static void cmd_populate_read(const char *path, const char *arg)
{
	struct target t = open_target(path);
	void *m = map_target(&t, 0);

	(void)arg;
	double t0 = now_ms();
	int rc = madvise(m, (size_t)t.size, MADV_POPULATE_READ);
	double t1 = now_ms();
	printf("madvise(MADV_POPULATE_READ) -> %d (%s) after %.2f ms\n", rc,
	       rc ? strerror(errno) : "ok", t1 - t0);
	munmap(m, (size_t)t.size);
	close(t.fd);
	report(path);
}

static void cmd_willneed(const char *path, const char *arg)
{
	struct target t = open_target(path);
	void *m = map_target(&t, 0);

	(void)arg;
	double t0 = now_ms();
	int rc = madvise(m, (size_t)t.size, MADV_WILLNEED);
	printf("madvise(MADV_WILLNEED) -> %d after %.2f ms; sleeping 200 ms\n", rc, now_ms() - t0);
	/* WILLNEED only starts the reads. */
	usleep(200000);
	munmap(m, (size_t)t.size);
	close(t.fd);
	report(path);
}

/* 64 columns, each a 64th of the pages: O all resident, o some, blank
 * none (or no page at all: fewer than 64 pages leave columns empty). */
static void cmd_map(const char *path, const char *arg)
{
	enum { COLUMNS = 64 };
	struct target t = open_target(path);
	unsigned char *vec;
	long resident = count_resident(&t, &vec);

	(void)arg;
	putchar('[');
	for (long c = 0; c < COLUMNS; c++) {
		long from = t.pages * c / COLUMNS, to = t.pages * (c + 1) / COLUMNS, in = 0;

		for (long i = from; i < to; i++)
			in += vec[i] & 1;
		putchar(in == 0 ? ' ' : in == to - from ? 'O' : 'o');
	}
	printf("] %ld/%ld\n", resident, t.pages);
	free(vec);
	close(t.fd);
}

/* /proc/kpageflags bits, in bit order (include/uapi/linux/kernel-page-flags.h). */
static const char *const page_flag_names[] = {
	"LOCKED", "ERROR", "REFERENCED", "UPTODATE", "DIRTY", "LRU", "ACTIVE", "SLAB",
	"WRITEBACK", "RECLAIM", "BUDDY", "MMAP", "ANON", "SWAPCACHE", "SWAPBACKED",
	"COMPOUND_HEAD", "COMPOUND_TAIL", "HUGE", "UNEVICTABLE", "HWPOISON", "NOPAGE", "KSM",
	"THP", "OFFLINE", "ZERO_PAGE", "IDLE", "PGTABLE",
};

static void cmd_kpageflags(const char *path, const char *arg)
{
	struct target t = open_target(path);
	volatile const unsigned char *m = map_target(&t, 0);
	uint64_t entry = 0, flags = 0;

	(void)arg;
	(void)m[0]; /* fault the first page in: only a present page has a PFN */
	int pagemap = open("/proc/self/pagemap", O_RDONLY);
	if (pagemap < 0)
		die("/proc/self/pagemap");
	off_t slot = (off_t)((uintptr_t)m / (uintptr_t)page_size) * 8;
	if (pread(pagemap, &entry, 8, slot) != 8)
		die("pagemap");
	uint64_t pfn = entry & ((1ULL << 55) - 1); /* bits 0-54 */
	printf("pagemap entry=%#llx present=%d pfn=%#llx\n", (unsigned long long)entry,
	       (int)(entry >> 63), (unsigned long long)pfn);
	if (pfn == 0) {
		/* the kernel zeroes the PFN for readers without CAP_SYS_ADMIN */
		printf("pfn hidden (need CAP_SYS_ADMIN)\n");
		return;
	}
	int kpageflags = open("/proc/kpageflags", O_RDONLY);
	if (kpageflags < 0)
		die("/proc/kpageflags");
	if (pread(kpageflags, &flags, 8, (off_t)(pfn * 8)) != 8)
		die("kpageflags");
	printf("kpageflags=%#llx:", (unsigned long long)flags);
	for (size_t bit = 0; bit < sizeof page_flag_names / sizeof *page_flag_names; bit++)
		if (flags & (1ULL << bit))
			printf(" %s", page_flag_names[bit]);
	putchar('\n');
}

static const struct {
	const char *name;
	void (*run)(const char *path, const char *arg);
} commands[] = {
	{ "stat", cmd_stat },
	{ "evict", cmd_evict },
	{ "read", cmd_read },
	{ "populate", cmd_populate },
	{ "populate-read", cmd_populate_read },
	{ "willneed", cmd_willneed },
	{ "map", cmd_map },
	{ "kpageflags", cmd_kpageflags },
};

int main(int argc, char **argv)
{
	page_size = sysconf(_SC_PAGESIZE);
	if (argc < 3) {
		fprintf(stderr, "usage: %s stat|evict|read|populate|populate-read|willneed|map|"
				"kpageflags FILE [FRACTION]\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
		if (strcmp(argv[1], commands[i].name) == 0) {
			commands[i].run(argv[2], argc > 3 ? argv[3] : NULL);
			return 0;
		}
	}
	fprintf(stderr, "unknown command %s\n", argv[1]);
	return 2;
}
