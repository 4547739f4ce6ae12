/*
 * mmaptest: the read()-vs-mmap microbenchmark of the 2003 PostgreSQL-list
 * "mmap-test" thread, reconstructed from its description (the original
 * program was not available). One or more files are delivered to stdout
 * ITERATIONS times over, the caller sending stdout to /dev/null; the
 * access mode is chosen when compiling:
 *
 *   -DDEFAULT_READSIZE=N   read mode: pread() N bytes at a time (default
 *                          65536); N = 0: the whole file in one pread()
 *                          into a buffer the size of the largest file
 *   -DDO_MMAP              mmap() the file instead, and write(2) the mapping
 *   -DDO_MMAP_ONCE         with DO_MMAP: map every file once, before the
 *                          timed loop (else map and unmap in every iteration)
 *
 * and, not in the original, for a fair comparison:
 *
 *   -DTOUCH                read every byte delivered (a sum, 8 bytes at a
 *                          time), so the mmap modes really fault the data in;
 *                          without it nothing in user space reads a mapped
 *                          byte, and write(2) to /dev/null reads none either
 *   -DPOPULATE             with DO_MMAP: MAP_POPULATE the mappings
 *
 * Usage:  mmaptest [-n ITERATIONS] FILE... > /dev/null   (100000 iterations)
 *
 * Only the loop is timed (CLOCK_MONOTONIC): files are opened, and for
 * DO_MMAP_ONCE mapped, before it. One line on stderr, which benchmark
 * harnesses parse, so its format is fixed:
 *
 *   MODE readsize=R files=F bytes/iter=B iters=N wall=S s  U us/iter  G GB/s NOTE
 *
 * MODE is read-chunked, read-whole-file, mmap-per-iteration or mmap-once;
 * NOTE says whether the data was touched. An empty file cannot be mapped:
 * the mmap modes stop with "mmap: Invalid argument" (exit 1), as the
 * original would.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef DEFAULT_READSIZE
#define DEFAULT_READSIZE 65536
#endif

#if defined(DO_MMAP) && defined(DO_MMAP_ONCE)
#define MODE_NAME "mmap-once"
#elif defined(DO_MMAP)
#define MODE_NAME "mmap-per-iteration"
#elif DEFAULT_READSIZE == 0
#define MODE_NAME "read-whole-file"
#else
#define MODE_NAME "read-chunked"
#endif

#ifdef TOUCH
#define TOUCH_NOTE " (touching data)"
#else
#define TOUCH_NOTE " (data not touched by user space in mmap modes)"
#endif

struct input {
	const char *path;
	int fd;
	size_t size;
	const unsigned char *map; /* DO_MMAP_ONCE only */
};

/* Where touched data is summed to, so the compiler cannot drop the loads. */
static volatile uint64_t touched_sum;

static double seconds_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fail(const char *what)
{
	perror(what);
	exit(1);
}

/* Read (with TOUCH) and write out n bytes at p. */
static void deliver(const unsigned char *p, size_t n)
{
#ifdef TOUCH
	/* Word loads: the cost is memory bandwidth, not a byte loop. The
	 * buffer and the mappings are aligned; memcpy keeps it well defined. */
	uint64_t sum = 0, word;
	size_t i, words = n / 8;

	for (i = 0; i < words; i++) {
		memcpy(&word, p + 8 * i, 8);
		sum += word;
	}
	for (i = 8 * words; i < n; i++)
		sum += p[i];
	touched_sum += sum;
#endif
	while (n > 0) {
		ssize_t w = write(STDOUT_FILENO, p, n);

		if (w <= 0)
			fail("write");
		p += w;
		n -= (size_t)w;
	}
}

#ifdef DO_MMAP
static int map_flags(void)
{
#ifdef POPULATE
	return MAP_SHARED | MAP_POPULATE;
#else
	return MAP_SHARED;
#endif
}

static const unsigned char *map_input(const struct input *in)
{
	void *m = mmap(NULL, in->size, PROT_READ, map_flags(), in->fd, 0);

	if (m == MAP_FAILED)
		fail("mmap");
	return m;
}
#endif

/* One pass over one file. */
static void pass(struct input *in, unsigned char *buf, size_t bufsize)
{
#if defined(DO_MMAP) && defined(DO_MMAP_ONCE)
	(void)buf, (void)bufsize;
	deliver(in->map, in->size);
#elif defined(DO_MMAP)
	const unsigned char *m = map_input(in);

	(void)buf, (void)bufsize;
	deliver(m, in->size);
	munmap((void *)m, in->size);
#else
	off_t at = 0;

	for (;;) {
		ssize_t got = pread(in->fd, buf, bufsize, at);

		if (got < 0)
			fail("pread");
		if (got == 0)
			break;
		deliver(buf, (size_t)got);
		at += got;
		if ((size_t)at >= in->size)
			break;
	}
#endif
}

int main(int argc, char **argv)
{
	long iterations = 100000;
	int first = 1;

	if (argc > 2 && strcmp(argv[1], "-n") == 0) {
		iterations = atol(argv[2]);
		first = 3;
	}
	if (first >= argc) {
		fprintf(stderr, "usage: %s [-n ITERATIONS] FILE... > /dev/null\n", argv[0]);
		return 2;
	}

	int count = argc - first;
	struct input *inputs = calloc((size_t)count, sizeof *inputs);
	size_t per_iteration = 0, largest = 0;

	if (inputs == NULL)
		fail("calloc");
	for (int i = 0; i < count; i++) {
		struct input *in = &inputs[i];
		struct stat st;

		in->path = argv[first + i];
		in->fd = open(in->path, O_RDONLY);
		if (in->fd < 0 || fstat(in->fd, &st) != 0)
			fail(in->path);
		in->size = (size_t)st.st_size;
		per_iteration += in->size;
		if (in->size > largest)
			largest = in->size;
	}

	unsigned char *buf = NULL;
	size_t bufsize = 0;
#if defined(DO_MMAP)
	(void)largest;
#if defined(DO_MMAP_ONCE)
	for (int i = 0; i < count; i++)
		inputs[i].map = map_input(&inputs[i]);
#endif
#else
	bufsize = DEFAULT_READSIZE == 0 ? largest : (size_t)DEFAULT_READSIZE;
	buf = malloc(bufsize < 8 ? 8 : bufsize);
	if (buf == NULL)
		fail("malloc");
#endif

	double start = seconds_now();
	for (long it = 0; it < iterations; it++)
		for (int i = 0; i < count; i++)
			pass(&inputs[i], buf, bufsize);
	double wall = seconds_now() - start;

	fprintf(stderr,
		"%s readsize=%d files=%d bytes/iter=%zu iters=%ld wall=%.3f s  %.3f us/iter  %.2f GB/s%s\n",
		MODE_NAME, DEFAULT_READSIZE, count, per_iteration, iterations, wall,
		wall * 1e6 / (double)iterations,
		(double)per_iteration * (double)iterations / wall / 1e9, TOUCH_NOTE);
	return 0;
}
