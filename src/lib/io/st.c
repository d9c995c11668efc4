/* st.c - the safetensors container; see st.h.
 *
 * Format: an 8-byte little-endian header length N, N bytes of JSON
 * {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]},
 *  "__metadata__": {...}}, then the data; offsets are relative to the end
 * of the header. */
#include "io/st.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/ofile.h"

/* Every live mapping, for st_fault_path() (read from signal handlers). */
#define ST_MAX_REG 256
static struct { const char *base; size_t size; char path[1024]; } reg[ST_MAX_REG];
static volatile int reg_on[ST_MAX_REG];

static void reg_add(const void *base, size_t size, const char *path)
{
	for (int i = 0; i < ST_MAX_REG; i++)
		if (!reg_on[i]) {
			reg[i].base = base;
			reg[i].size = size;
			snprintf(reg[i].path, sizeof reg[i].path, "%s", path);
			reg_on[i] = 1;
			return;
		}
}

static void reg_del(const void *base)
{
	for (int i = 0; i < ST_MAX_REG; i++)
		if (reg_on[i] && reg[i].base == base)
			reg_on[i] = 0;
}

const char *st_fault_path(const void *addr)
{
	const char *a = addr;
	for (int i = 0; i < ST_MAX_REG; i++)
		if (reg_on[i] && a >= reg[i].base && a < reg[i].base + reg[i].size)
			return reg[i].path;
	return NULL;
}

static const char *bus_prog = "sinkscope";

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)uc;
	const char *p = st_fault_path(si->si_addr);
	const char *m2 = p ? p : "model file",
	           *m3 = ": file truncated or unreadable while mapped (SIGBUS); partial output removed\n";
	ssize_t r = write(2, bus_prog, strlen(bus_prog));
	r = write(2, ": ", 2);
	r = write(2, m2, strlen(m2));
	r = write(2, m3, strlen(m3));
	(void)r;
	ss_tmp_remove_all();
	_exit(1);
}

void st_sigbus_install(const char *prog)
{
	bus_prog = prog;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}


void st_to_f32(float *dst, const st_tensor *t, long off, long n)
{
	st_conv_f32(dst, t->data, t->dtype, off, n);
}

static int cmp_tensor(const void *a, const void *b)
{
	return strcmp(((const st_tensor *)a)->name, ((const st_tensor *)b)->name);
}

static int cmp_range(const void *a, const void *b)
{
	const st_tensor *x = *(st_tensor *const *)a, *y = *(st_tensor *const *)b;
	const char *px = x->data, *py = y->data;
	return px < py ? -1 : px > py;
}

static char *path_join(const char *dir, const char *name, ss_err *e)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = ss_malloc(n, 1, "path", e);
	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* Map one file and append its tensors (all of them, or only those whose
 * name the index assigns to this file when `want` is not NULL). */
static int map_file(st_set *s, const char *path, json_t *want, const char *wantfile, ss_err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ss_err_errno(e, errno, "%s", path);
	struct stat sb;
	if (fstat(fd, &sb) < 0) {
		int er = errno;
		close(fd);
		return ss_err_errno(e, er, "%s", path);
	}
	size_t size = (size_t)sb.st_size;
	if (size < 8) {
		close(fd);
		return ss_err_set(e, "%s: truncated file (%zu bytes, no header)", path, size);
	}
	void *base = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	int er = errno;
	if (base == MAP_FAILED) {
		close(fd);
		return ss_err_errno(e, er, "%s: mmap", path);
	}
	st_map *nm = realloc(s->maps, (size_t)(s->nmaps + 1) * sizeof *nm);
	if (!nm) {
		munmap(base, size);
		close(fd);
		return ss_err_set(e, "out of memory");
	}
	s->maps = nm;
	st_map *m = &s->maps[s->nmaps++];
	m->base = base;
	m->size = size;
	m->fd = fd;
	m->path = ss_strdup(path, e);
	if (!m->path)
		return -1;
	reg_add(base, size, path);

	const unsigned char *b = base;
	uint64_t hl = 0;
	for (int i = 7; i >= 0; i--)
		hl = hl << 8 | b[i];
	if (hl > size - 8)
		return ss_err_set(e, "%s: truncated file (header of %llu bytes, file of %zu)", path,
		                  (unsigned long long)hl, size);
	if (hl > 100u << 20)
		return ss_err_set(e, "%s: header of %llu bytes is implausible", path,
		                  (unsigned long long)hl);
	json_error_t je;
	json_t *root = json_loadb((const char *)b + 8, (size_t)hl, 0, &je);
	if (!root)
		return ss_err_set(e, "%s: header: bad JSON at offset %d: %s", path, je.position, je.text);
	if (!json_is_object(root)) {
		json_decref(root);
		return ss_err_set(e, "%s: header: not a JSON object", path);
	}
	const unsigned char *data = b + 8 + hl;
	size_t dsize = size - 8 - (size_t)hl;
	size_t first = s->n, cnt = json_object_size(root);
	st_tensor *nt = realloc(s->t, (s->n + cnt) * sizeof *nt);
	if (!nt) {
		json_decref(root);
		return ss_err_set(e, "out of memory");
	}
	s->t = nt;
	const char *key;
	json_t *v;
	int rc = 0;
	json_object_foreach(root, key, v) {
		if (!strcmp(key, "__metadata__"))
			continue;
		if (want) {
			const char *f = json_string_value(json_object_get(want, key));
			if (!f || strcmp(f, wantfile)) {
				rc = ss_err_set(e, "%s:%s: tensor not listed for this file in model.safetensors.index.json", path, key);
				break;
			}
		}
		st_tensor *t = &s->t[s->n];
		memset(t, 0, sizeof *t);
		json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"),
		       *off = json_object_get(v, "data_offsets");
		if (!json_is_object(v) || !json_is_string(dt) || !json_is_array(sh) || !json_is_array(off) ||
		    json_array_size(off) != 2) {
			rc = ss_err_set(e, "%s:%s: header entry lacks dtype, shape or data_offsets", path, key);
			break;
		}
		const char *d = json_string_value(dt);
		if (!strcmp(d, "F32"))
			t->dtype = ST_F32;
		else if (!strcmp(d, "F16"))
			t->dtype = ST_F16;
		else if (!strcmp(d, "BF16"))
			t->dtype = ST_BF16;
		else {
			rc = ss_err_set(e, "%s:%s: unsupported dtype %s (supported: F32, F16, BF16)", path, key, d);
			break;
		}
		size_t rank = json_array_size(sh);
		if (rank > ST_MAX_RANK) {
			rc = ss_err_set(e, "%s:%s: rank %zu is more than %d", path, key, rank, ST_MAX_RANK);
			break;
		}
		t->rank = (int)rank;
		long n = 1;
		for (size_t i = 0; i < rank; i++) {
			json_t *x = json_array_get(sh, i);
			json_int_t dim = json_integer_value(x);
			if (!json_is_integer(x) || dim < 0 || dim > (1L << 40) || (dim && n > (1L << 40) / dim)) {
				rc = ss_err_set(e, "%s:%s: bad shape", path, key);
				break;
			}
			t->shape[i] = (long)dim;
			n *= (long)dim;
		}
		if (rc)
			break;
		t->n = n;
		json_t *o0 = json_array_get(off, 0), *o1 = json_array_get(off, 1);
		json_int_t a = json_integer_value(o0), z = json_integer_value(o1);
		if (!json_is_integer(o0) || !json_is_integer(o1) || a < 0 || z < a) {
			rc = ss_err_set(e, "%s:%s: bad data_offsets", path, key);
			break;
		}
		if ((uint64_t)z > dsize) {
			rc = ss_err_set(e, "%s:%s: truncated file (data ends at %lld, file holds %zu bytes of data)",
			                path, key, (long long)z, dsize);
			break;
		}
		if ((uint64_t)(z - a) != (uint64_t)n * st_dtype_size(t->dtype)) {
			rc = ss_err_set(e, "%s:%s: data_offsets span %lld bytes, shape and dtype need %lld",
			                path, key, (long long)(z - a), (long long)n * (long long)st_dtype_size(t->dtype));
			break;
		}
		t->data = data + a;
		t->file = m->path;
		t->name = ss_strdup(key, e);
		if (!t->name) {
			rc = -1;
			break;
		}
		s->n++;
	}
	json_decref(root);
	if (rc)
		return rc;
	/* overlapping ranges would alias two tensors */
	size_t k = s->n - first;
	st_tensor **byoff = malloc((k ? k : 1) * sizeof *byoff);
	if (!byoff)
		return ss_err_set(e, "out of memory");
	for (size_t i = 0; i < k; i++)
		byoff[i] = &s->t[first + i];
	qsort(byoff, k, sizeof *byoff, cmp_range);
	for (size_t i = 1; i < k; i++) {
		const char *endp = (const char *)byoff[i - 1]->data +
		                   (size_t)byoff[i - 1]->n * st_dtype_size(byoff[i - 1]->dtype);
		if ((const char *)byoff[i]->data < endp) {
			rc = ss_err_set(e, "%s:%s: data overlaps tensor %s", path, byoff[i]->name, byoff[i - 1]->name);
			break;
		}
	}
	free(byoff);
	return rc;
}

static int finish(st_set *s, ss_err *e)
{
	if (s->n > 1) /* s->t is NULL when there is no tensor (qsort needs an array) */
		qsort(s->t, s->n, sizeof *s->t, cmp_tensor);
	for (size_t i = 1; i < s->n; i++)
		if (!strcmp(s->t[i].name, s->t[i - 1].name))
			return ss_err_set(e, "%s:%s: tensor appears in two files (%s)", s->t[i].file,
			                  s->t[i].name, s->t[i - 1].file);
	return 0;
}

int st_open_file(st_set *s, const char *path, ss_err *e)
{
	memset(s, 0, sizeof *s);
	if (map_file(s, path, NULL, NULL, e) < 0 || finish(s, e) < 0) {
		st_close(s);
		return -1;
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int st_open_dir(st_set *s, const char *dir, ss_err *e)
{
	memset(s, 0, sizeof *s);
	s->dir = ss_strdup(dir, e);
	if (!s->dir)
		return -1;
	char *ipath = path_join(dir, "model.safetensors.index.json", e), *single = NULL;
	json_t *idx = NULL;
	char **files = NULL;
	size_t nf = 0;
	int rc = -1;
	if (!ipath)
		goto done;
	if (access(ipath, F_OK) == 0) {
		if (!(s->index = ss_strdup(ipath, e)))
			goto done;
		json_error_t je;
		idx = json_load_file(ipath, 0, &je);
		if (!idx) {
			ss_err_set(e, "%s: bad JSON at line %d: %s", ipath, je.line, je.text);
			goto done;
		}
		json_t *wm = json_object_get(idx, "weight_map");
		if (!json_is_object(wm)) {
			ss_err_set(e, "%s:weight_map: missing or not an object", ipath);
			goto done;
		}
		const char *key;
		json_t *v;
		files = malloc((json_object_size(wm) + 1) * sizeof *files);
		if (!files) {
			ss_err_set(e, "out of memory");
			goto done;
		}
		json_object_foreach(wm, key, v) {
			const char *f = json_string_value(v);
			if (!f || !*f || strchr(f, '/')) {
				ss_err_set(e, "%s:weight_map.%s: bad shard file name", ipath, key);
				goto done;
			}
			files[nf++] = (char *)f;
		}
		qsort(files, nf, sizeof *files, cmp_str);
		size_t u = 0;
		for (size_t i = 0; i < nf; i++)
			if (!u || strcmp(files[u - 1], files[i]))
				files[u++] = files[i];
		nf = u;
		for (size_t i = 0; i < nf; i++) {
			char *p = path_join(dir, files[i], e);
			if (!p)
				goto done;
			int r = map_file(s, p, wm, files[i], e);
			free(p);
			if (r < 0)
				goto done;
		}
		if (finish(s, e) < 0)
			goto done;
		/* every tensor the index names must be in its shard */
		json_object_foreach(wm, key, v) {
			if (!st_find(s, key)) {
				ss_err_set(e, "%s/%s:%s: tensor listed in model.safetensors.index.json is missing",
				           dir, json_string_value(v), key);
				goto done;
			}
		}
	} else {
		single = path_join(dir, "model.safetensors", e);
		if (!single)
			goto done;
		if (access(single, F_OK) != 0) {
			struct stat sb;
			if (stat(dir, &sb) < 0)
				ss_err_errno(e, errno, "%s", dir);
			else
				ss_err_set(e, "%s: no model.safetensors or model.safetensors.index.json", dir);
			goto done;
		}
		if (map_file(s, single, NULL, NULL, e) < 0 || finish(s, e) < 0)
			goto done;
	}
	rc = 0;
done:
	free(files);
	json_decref(idx);
	free(ipath);
	free(single);
	if (rc)
		st_close(s);
	return rc;
}

void st_close(st_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->t[i].name);
	free(s->t);
	for (int i = 0; i < s->nmaps; i++) {
		if (s->maps[i].base) {
			reg_del(s->maps[i].base);
			munmap(s->maps[i].base, s->maps[i].size);
		}
		if (s->maps[i].fd >= 0)
			close(s->maps[i].fd);
		free(s->maps[i].path);
	}
	free(s->maps);
	free(s->dir);
	free(s->index);
	memset(s, 0, sizeof *s);
}

const st_tensor *st_find(const st_set *s, const char *name)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(s->t[mid].name, name);
		if (!c)
			return &s->t[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static void fmt_shape(char *buf, size_t n, int rank, const long *shape)
{
	size_t k = 0;
	buf[0] = 0;
	if (rank == 0)
		snprintf(buf, n, "scalar");
	for (int i = 0; i < rank && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, i ? "x%ld" : "%ld", shape[i]);
}

int st_bind(st_set *s, const char *name, int rank, const long *shape, const st_tensor **out,
            ss_err *e)
{
	st_tensor *t = (st_tensor *)st_find(s, name);
	if (!t) {
		const char *where = s->index ? s->index : s->nmaps == 1 ? s->maps[0].path : s->dir ? s->dir : "?";
		return ss_err_set(e, "%s:%s: missing tensor", where, name);
	}
	int ok = t->rank == rank;
	for (int i = 0; ok && i < rank; i++)
		if (shape[i] >= 0 && t->shape[i] != shape[i])
			ok = 0;
	if (!ok) {
		char got[128], want[128];
		fmt_shape(got, sizeof got, t->rank, t->shape);
		fmt_shape(want, sizeof want, rank, shape);
		return ss_err_set(e, "%s:%s: shape %s, expected %s", t->file, name, got, want);
	}
	if (t->dtype != ST_F32 && ((uintptr_t)t->data & 1))
		return ss_err_set(e, "%s:%s: misaligned data", t->file, name);
	t->used = 1;
	*out = t;
	return 0;
}

int st_check_unused(const st_set *s, ss_err *e)
{
	for (size_t i = 0; i < s->n; i++)
		if (!s->t[i].used)
			return ss_err_set(e, "%s:%s: unexpected tensor", s->t[i].file, s->t[i].name);
	return 0;
}
