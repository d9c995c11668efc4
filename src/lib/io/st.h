/* st.h - the safetensors container: no model knowledge.
 *
 * A model folder holds either one `model.safetensors` or shards listed by
 * `model.safetensors.index.json` ("weight_map": tensor name -> shard file).
 * Each file is memory-mapped read-only; its JSON header is parsed with
 * jansson and every entry is checked: known dtype (F32, F16, BF16), shape
 * product times element size equals the byte range, the range lies inside
 * the file, ranges do not overlap.  Tensors are then bound by name with
 * st_bind(), which checks dtype and shape and marks the tensor used, so
 * that st_check_unused() can refuse extra tensors.
 *
 * st.c holds the container (mapping, header, binding), stpage.c the
 * paging advice below; element types and their conversion are stconv.h's.
 *
 * Errors name the file and the tensor:
 *   "DIR/model.safetensors:model.layers.3.mlp.up_proj.weight: shape 172x64, expected 172x60"
 */
#ifndef SS_ST_H
#define SS_ST_H

#include <stddef.h>
#include <stdint.h>
#include "io/stconv.h"
#include "util/err.h"

#define ST_MAX_RANK 4

typedef struct st_tensor {
	char *name;              /* e.g. "model.layers.0.self_attn.q_proj.weight" */
	const char *file;        /* path of the shard that holds it (owned by st_set) */
	st_dtype dtype;
	int rank;
	long shape[ST_MAX_RANK]; /* row-major, as stored */
	long n;                  /* number of elements */
	const void *data;        /* into the mapping, n * st_dtype_size(dtype) bytes */
	int used;                /* bound by st_bind() */
} st_tensor;

typedef struct st_map {
	char *path;
	void *base;
	size_t size;
	int fd;           /* kept open for st_release()'s page-cache advice; -1 when closed */
} st_map;

typedef struct st_set {
	char *dir;
	char *index;     /* path of model.safetensors.index.json, or NULL */
	st_map *maps;     /* [nmaps] */
	int nmaps;
	st_tensor *t;     /* [n], sorted by name */
	size_t n;
} st_set;

/* Open the safetensors of a model folder (single file or sharded index). */
int st_open_dir(st_set *s, const char *dir, ss_err *e);
/* Open one .safetensors file (for tools and tests). */
int st_open_file(st_set *s, const char *path, ss_err *e);
void st_close(st_set *s);

/* Look up by name; NULL when absent. */
const st_tensor *st_find(const st_set *s, const char *name);
/* Bind a tensor: it must exist with the given rank and shape (shape[i] < 0
 * means any).  Marks it used.  *out points into s. */
int st_bind(st_set *s, const char *name, int rank, const long *shape, const st_tensor **out,
            ss_err *e);
/* Error naming the first tensor that no st_bind() claimed. */
int st_check_unused(const st_set *s, ss_err *e);

/* The path of the mapped file holding addr, or NULL: for a SIGBUS handler
 * (a file truncated while mapped).  Async-signal-safe. */
const char *st_fault_path(const void *addr);
/* For main: on SIGBUS (a mapped model file cut short or unreadable), print
 * "PROG: FILE: file truncated or unreadable while mapped (SIGBUS); partial
 * output removed", remove the temporary outputs (ofile.h) and _exit(1). */
void st_sigbus_install(const char *prog);

/* Paging (stpage.c; a model larger than memory streams through it layer by layer).
 * st_release_range: drop the pages of [p, p + len) (inside one mapping of
 * s) from this process (madvise MADV_DONTNEED on the range rounded out to
 * whole pages), so they no longer count in its RSS; with drop_cache also
 * from the page cache (posix_fadvise POSIX_FADV_DONTNEED: clean pages, which
 * mapped weights always are, that no process maps; the kernel keeps a large
 * folio that reaches past the range, so release whole runs of neighbouring
 * tensors in one call, and st_release_all() at the end).  The mappings are
 * read-only and private: a later read faults the same bytes back in from
 * the file, so results never change, and a page shared with a neighbouring
 * tensor is simply read again.
 * st_prefetch_range: start reading [p, p + len) ahead (MADV_WILLNEED, in
 * pieces the kernel reads whole); it queues the reads and returns.
 * st_populate_range: map [p, p + len) into this process's page tables now
 * (MADV_POPULATE_READ, Linux 5.14; reading what is not cached yet): one
 * call instead of a fault per 64 KiB when the range is first read (1 GB of
 * cached weights: 0.03 s, where the faults of a first read cost 0.1 s).
 * All are advice: errors are ignored, and so is a range outside s. */
void st_release_range(const st_set *s, const void *p, size_t len, int drop_cache);
void st_prefetch_range(const st_set *s, const void *p, size_t len);
void st_populate_range(const st_set *s, const void *p, size_t len);
void st_release(const st_set *s, const st_tensor *t, int drop_cache);  /* t's data */
void st_release_all(const st_set *s, int drop_cache);                   /* every mapping */

/* Convert n elements starting at element `off` of t to f32 (st_conv_f32 of
 * stconv.h on t's data). */
void st_to_f32(float *dst, const st_tensor *t, long off, long n);

#endif
