/* stpage.c - paging of the mapped safetensors (see st.h, "Paging"): a
 * model larger than memory streams through it layer by layer, each layer's
 * pages released once converted and the next ones read ahead.  Advice
 * only: madvise and posix_fadvise, errors ignored, results unchanged. */
#include "io/st.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

/* The mapping holding [p, p + len), with the range rounded out to whole
 * pages in *a, *n; NULL when no mapping holds it or len is 0. */
static const st_map *page_range(const st_set *s, const void *pv, size_t len, char **a, size_t *n)
{
	const char *p = pv;
	for (int i = 0; len && i < s->nmaps; i++) {
		const st_map *m = &s->maps[i];
		const char *b = m->base;
		if (!b || p < b || p + len > b + m->size)
			continue;
		size_t pg = (size_t)sysconf(_SC_PAGESIZE);
		size_t lo = (size_t)(p - b) / pg * pg, hi = ((size_t)(p - b) + len + pg - 1) / pg * pg;
		*a = (char *)b + lo;
		*n = hi - lo;
		return m;
	}
	return NULL;
}

/* Unmap the whole pages a..a+n; drop p..p+len from the cache: the kernel
 * keeps the partial pages at its ends, which may hold a neighbour that is
 * still to be read (dropping it would cost a major fault, and the fault's
 * read-around re-reads megabytes before it). */
static void release(const st_map *m, char *a, size_t n, const char *p, size_t len, int drop_cache)
{
	(void)madvise(a, n, MADV_DONTNEED);
	if (drop_cache && m->fd >= 0)
		(void)posix_fadvise(m->fd, (off_t)(p - (char *)m->base), (off_t)len, POSIX_FADV_DONTNEED);
}

void st_release_range(const st_set *s, const void *p, size_t len, int drop_cache)
{
	char *a;
	size_t n;
	const st_map *m = page_range(s, p, len, &a, &n);
	if (m)
		release(m, a, n, p, len, drop_cache);
}

/* MADV_WILLNEED reads at most the device's readahead size per call (the
 * kernel's force_page_cache_ra caps it, 128 KiB by default): one call per
 * 128 KiB.  The reads are queued, not waited for (550 MB: about 0.2 s to
 * queue here, 0.5 s to arrive). */
#define PREFETCH_CHUNK ((size_t)128 << 10)

void st_prefetch_range(const st_set *s, const void *p, size_t len)
{
	char *a;
	size_t n;
	if (!page_range(s, p, len, &a, &n))
		return;
	for (size_t o = 0; o < n; o += PREFETCH_CHUNK)
		(void)madvise(a + o, n - o < PREFETCH_CHUNK ? n - o : PREFETCH_CHUNK, MADV_WILLNEED);
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22   /* Linux 5.14; an older kernel refuses it (EINVAL): no harm */
#endif

void st_populate_range(const st_set *s, const void *p, size_t len)
{
	char *a;
	size_t n;
	if (page_range(s, p, len, &a, &n))
		(void)madvise(a, n, MADV_POPULATE_READ);
}

void st_release(const st_set *s, const st_tensor *t, int drop_cache)
{
	st_release_range(s, t->data, (size_t)t->n * st_dtype_size(t->dtype), drop_cache);
}

void st_release_all(const st_set *s, int drop_cache)
{
	for (int i = 0; i < s->nmaps; i++)
		if (s->maps[i].base)
			release(&s->maps[i], s->maps[i].base, s->maps[i].size, s->maps[i].base,
			        s->maps[i].size, drop_cache);
}
