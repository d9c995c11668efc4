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
 * Errors name the file and the tensor:
 *   "DIR/model.safetensors:model.layers.3.mlp.up_proj.weight: shape 172x64, expected 172x60"
 */
#ifndef SS_ST_H
#define SS_ST_H

#include <stddef.h>
#include <stdint.h>
#include "err.h"

#define ST_MAX_RANK 4

typedef enum st_dtype { ST_F32 = 0, ST_F16, ST_BF16 } st_dtype;

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

size_t st_dtype_size(st_dtype d);
const char *st_dtype_name(st_dtype d);   /* "f32", "f16", "bf16" */

/* Convert n elements starting at element `off` of t to f32. */
void st_to_f32(float *dst, const st_tensor *t, long off, long n);

/* Scalar conversions (exact; f16 subnormals, inf and NaN handled). */
float st_bf16_to_f32(uint16_t h);
float st_f16_to_f32(uint16_t h);
uint16_t st_f32_to_bf16(float f);   /* round to nearest even (NaN kept NaN) */

#endif
