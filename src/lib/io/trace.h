/* trace.h - the sinkscope HDF5 contract (DESIGN.md section 2, man 5
 * sinkscope-h5): one file per trace.
 *
 *   /  attrs: sinkscope_format (= 1), model, architecture, n_layers,
 *      d_model, n_heads, n_kv_heads, head_dim, weight_dtype, generator,
 *      command
 *   /tokens/ids        int32   [T]
 *   /tokens/text       UTF-8   [T]  decoded piece of each token
 *   /stats/resid_norm  float32 [L+1, T]  row l = h[l], row 0 = embeddings
 *   /stats/resid_cos0  float32 [L+1, T]  cos(h[l][j], h[l][0])
 *   /stats/attn_out_norm, /stats/mlp_out_norm  float32 [L, T] row l-1 = layer l
 *   /stats/recv        float32 [L, H, T]  mean over queries i >= j of A[i][j]
 *   /stats/moe_experts int32   [L, T, K]  mixtures of experts only: each
 *      token's K routed experts (0-based, by decreasing router probability),
 *      attr "n_experts"; /stats/moe_weights float32 [L, T, K] their weights
 *   /acts/<component>  float32 [n_sel, T, d], attr "layers" (1-based for
 *      attn_out, mlp_in, mlp_out; 0..L for resid, 0 = embeddings)
 */
#ifndef SS_TRACE_H
#define SS_TRACE_H

#include <stdint.h>
#include "util/err.h"
#include "io/h5io.h"

#define SS_FORMAT 1

typedef struct ss_meta {
	long format;           /* sinkscope_format */
	char *model;           /* model folder or name */
	char *architecture;    /* e.g. "Qwen2ForCausalLM" */
	char *weight_dtype;    /* "bf16", "f16", "f32" */
	char *generator;       /* "actdump 1.0.0" */
	char *command;         /* command line that made the file */
	char *compute;         /* "f32" or "bf16": the forward pass's matrix products
	                          (actdump --compute); NULL: not recorded */
	long n_layers, d_model, n_heads, n_kv_heads, head_dim;
} ss_meta;

typedef struct ss_trace {
	char *name;            /* input file name without directory; "-" for stdin */
	ss_meta meta;
	long L, T, H;          /* layers (= meta.n_layers), tokens, heads */
	int32_t *ids;          /* [T] */
	char **text;           /* [T] NUL-terminated UTF-8 pieces */
	float *resid_norm;     /* [(L+1) * T] */
	float *resid_cos0;     /* [(L+1) * T] */
	float *attn_out_norm;  /* [L * T] */
	float *mlp_out_norm;   /* [L * T] */
	float *recv;           /* [L * H * T] */
	long K, n_experts;     /* experts per token and in all (mixtures of experts), else 0 */
	int32_t *moe_experts;  /* [L * T * K] or NULL (allocated by the caller of trace_alloc) */
	float *moe_weights;    /* [L * T * K] or NULL */
	/* Stats read by trace_read may point into the file's bytes (mapped
	 * copy-on-write, so writable) instead of separate buffers: free a
	 * trace only with trace_free, never its arrays one by one. */
	unsigned borrowed;     /* bit k set: the k-th stats array above is borrowed */
	struct ss_h5_buf *bufs;
} ss_trace;

/* Read metadata, tokens and stats (never /acts), checking the format
 * version, every shape against the attributes, and finiteness of stats.
 * `path` may be "-" (an image on stdin).  tr->name is the base name of the
 * path ("-" for stdin).  On failure tr is freed and zeroed. */
int trace_read(const char *path, ss_trace *tr, ss_err *e);
int trace_read_h5(ss_h5 *f, ss_trace *tr, ss_err *e);
void trace_free(ss_trace *tr);

/* Bytes of the /stats arrays of a trace of L layers, T tokens, H heads. */
double trace_stats_bytes(long L, long T, long H);
/* Allocate stats and tokens for L, T, H (zeroed); meta is left to the caller. */
int trace_alloc(ss_trace *tr, long L, long T, long H, ss_err *e);
/* Write root attributes, /tokens and /stats into a created file. */
int trace_write_h5(ss_h5 *f, const ss_trace *tr, ss_err *e);

/* Activations.  Create /acts/<component> [n_sel, T, d] with attr "layers",
 * then write one selected layer (index k in layers[]) at a time. */
int trace_acts_create(ss_h5 *f, const char *component, const long *layers, size_t n_sel,
                      long T, long d, ss_err *e);
int trace_acts_write(ss_h5 *f, const char *component, size_t k, const float *x, ss_err *e);
/* Read the activations of one layer: x is malloc'd [T * d].  Missing
 * component or layer: "FILE:/acts/mlp_in: layer 22 not stored (stored: 1-4)". */
/* Copy every /acts/<component> of src into dst, one layer at a time. */
int trace_acts_copy(ss_h5 *dst, ss_h5 *src, ss_err *e);
int trace_acts_read(ss_h5 *f, const char *component, long layer, float **x, long *T, long *d,
                    ss_err *e);

#endif
