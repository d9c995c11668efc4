/* pagecache - how much of some files the page cache holds; evict them.
 *
 *   pagecache count FILE...   prints "CACHED TOTAL" (bytes, all files)
 *   pagecache evict FILE...   posix_fadvise(POSIX_FADV_DONTNEED) each file
 *                             (no root needed: clean pages go, dirty ones
 *                             are written first by fdatasync), then prints
 *                             what stays cached, as count does
 *
 * For benchmarks that report bytes read from disk: evict the model first,
 * so the run reads it all (tests/bench/big/actdump.sh). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>

static int cached(const char *path, long long *in, long long *total)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) < 0) {
		perror(path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*total += sb.st_size;
	if (sb.st_size == 0) {
		close(fd);
		return 0;
	}
	void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		perror(path);
		return -1;
	}
	long pg = sysconf(_SC_PAGESIZE);
	size_t np = ((size_t)sb.st_size + (size_t)pg - 1) / (size_t)pg;
	unsigned char *v = malloc(np);
	int rc = v && mincore(p, (size_t)sb.st_size, v) == 0 ? 0 : -1;
	for (size_t i = 0; rc == 0 && i < np; i++)
		if (v[i] & 1)
			*in += i + 1 < np ? pg : sb.st_size - (long long)i * pg;
	if (rc)
		perror(path);
	free(v);
	munmap(p, (size_t)sb.st_size);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[1], "count") && strcmp(argv[1], "evict"))) {
		fprintf(stderr, "usage: pagecache count|evict FILE...\n");
		return 2;
	}
	int rc = 0;
	if (!strcmp(argv[1], "evict"))
		for (int i = 2; i < argc; i++) {
			int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
			if (fd < 0 || fdatasync(fd) < 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0) {
				perror(argv[i]);
				rc = 1;
			}
			if (fd >= 0)
				close(fd);
		}
	long long in = 0, total = 0;
	for (int i = 2; i < argc; i++)
		if (cached(argv[i], &in, &total) < 0)
			rc = 1;
	printf("%lld %lld\n", in, total);
	return rc;
}
