/* decode.h - incremental decoding with a KV cache, interventions, and
 * re-running single positions against the cached keys and values.
 *
 * Everything runs on the forward pass's own building blocks (forward.h:
 * fwd_prefill, fwd_embed, fwd_layer, fwd_logits), so a token decoded here
 * goes through exactly the arithmetic of the blocked prefill.
 *
 * Interventions act at the hook points of a chosen (layer, position):
 *     replace   x <- vec          add   x <- x + vec        scale  x <- alpha x
 * on resid h[l] (layer 0 = embeddings), attn_out a[l], mlp_in x[l] or
 * mlp_out m[l].  They apply to every pass run through the dec: prefill,
 * steps and re-runs.
 *
 * Re-runs (token swapping, DESIGN.md section 1).  Causal attention makes
 * position j's trajectory through layers l..ls depend only on positions
 * <= j, and positions < j are unchanged by anything done at j.  So after a
 * baseline prefill has filled the cache, dec_rerun() takes h[l-1][j] and
 * runs position j alone through layers l..ls against the cached keys and
 * values of positions < j; the result equals a full forward pass with the
 * same intervention at position j (tests/unit/test_decode.c checks 1e-5).
 * The cache is left as the baseline had it.
 */
#ifndef SS_DECODE_H
#define SS_DECODE_H

#include <stdint.h>
#include "util/err.h"
#include "engine/forward.h"
#include "engine/genstats.h"
#include "engine/kvcache.h"
#include "engine/model.h"

typedef enum ss_iv_op { SS_IV_REPLACE = 0, SS_IV_ADD, SS_IV_SCALE } ss_iv_op;

typedef struct ss_interv {
	int layer;           /* 1..L; 0 only for SS_HOOK_RESID (embeddings) */
	ss_hook_point what;
	long pos;            /* sequence position */
	ss_iv_op op;
	const float *vec;    /* [dim] for replace and add (not copied) */
	float alpha;         /* for scale */
} ss_interv;

typedef struct ss_dec_opts {
	int threads;
	long block;           /* fwd block; 0 = default */
	ss_kv_dtype kv_dtype;
	int resident;         /* keep every layer's weights (fast decoding: bf16
	                         for a bf16 model, else f32; see dec_resident_bytes) */
	int resident_f32;     /* ... in f32 whatever the dtype (benchmarks) */
	ss_compute compute;   /* the matrix products' precision (matmul.h; 0: f32) */
	ss_hook_fn hook;      /* optional observer/intervener after the interventions */
	void *hook_ctx;
} ss_dec_opts;

typedef struct ss_dec {
	const ss_model *m;
	ss_fwd *f;
	ss_kvcache kv;
	long len;             /* positions held in the cache */
	long cap;
	const ss_interv *iv;  /* interventions in force */
	size_t n_iv;
	ss_hook_fn hook;
	void *hook_ctx;
	/* scratch */
	float *kbuf, *vbuf;   /* [cap, kvdim]: widened bf16 rows */
	float *krow, *vrow;   /* [kvdim]: baseline row saved during a re-run */
	double *recv;         /* [H, cap] */
	float *x;             /* [dim] */
	int kv_store;         /* the forward's keys/values go into the cache */
	/* dec_mlp(): inputs to put at mlp_in, outputs taken at mlp_out */
	const float *mlp_x;
	float *mlp_y;
	int mlp_layer;
	ss_genstats *gs;      /* dec_record: statistics of prefills and steps */
	int recording;
} ss_dec;

/* Bytes of weights that resident decoding holds (fwd_resident_bytes). */
double dec_resident_bytes(const ss_model *m);

/* Bytes dec_create(cap, o) allocates and a run of it touches: the forward
 * pass's buffers for cap tokens (fwd_memory_estimate), the KV cache in its
 * dtype, the f32 rows a bf16 cache is widened into, the scratch rows; with
 * steps (the dec runs one position at a time too: dec_step, dec_rerun) a
 * second f32 layer, the layer buffer such a pass converts into beside the
 * packings of a pass over many tokens; with o->resident every layer's
 * converted weights (dec_resident_bytes). */
double dec_memory_estimate(const ss_model *m, long cap, const ss_dec_opts *o, int steps);

/* A dec for sequences of up to cap positions. */
int dec_create(ss_dec *d, const ss_model *m, long cap, const ss_dec_opts *o, ss_err *e);
void dec_free(ss_dec *d);

/* Interventions in force from now on (NULL, 0 for none); iv must outlive use. */
void dec_set_interv(ss_dec *d, const ss_interv *iv, size_t n);

/* Record the statistics of what runs from now on (genstats.h; NULL: stop):
 * dec_prefill starts them afresh (its st is then ignored), each dec_step
 * adds its position.  Re-runs, dec_mlp and dec_queries record nothing.
 * g must hold d's cap positions and outlive the recording. */
void dec_record(ss_dec *d, ss_genstats *g);

/* Run ids[0..T) through the model, filling the cache (len = T); st and
 * h_out as for fwd_prefill.  logits (may be NULL): [vocab] of position T-1. */
int dec_prefill(ss_dec *d, const int32_t *ids, long T, ss_stats *st, float *logits, ss_err *e);

/* Append one token at position len (len += 1) and give its logits [vocab]. */
int dec_step(ss_dec *d, int32_t id, float *logits, ss_err *e);

/* One position to re-run through layers l_from..l_to against the cache. */
typedef struct ss_rerun {
	long pos;             /* < len */
	int l_from, l_to;
	float *x;             /* [dim]: h[l_from-1][pos] on entry, h[l_to][pos] on return */
	const ss_interv *iv;  /* interventions in force for this row (pos should match) */
	size_t n_iv;
	float *key_out;       /* [kvdim] or NULL: the row's new key at l_to */
	float *self_attn;     /* [H] or NULL: attention its query pays its own key at l_to */
} ss_rerun;

/* Re-run n rows, layer-major (every row at layer l before layer l+1, so
 * each layer's weights are converted once for the whole batch).  The
 * cache is left as it was. */
int dec_rerun(ss_dec *d, ss_rerun *r, size_t n, ss_err *e);

/* MLP_l on n arbitrary inputs: y [n, dim] = MLP_l(x [n, dim]), x being
 * the normalised MLP input x[l] (mlp_in). */
int dec_mlp(ss_dec *d, int layer, const float *x, long n, float *y, ss_err *e);

/* Queries of layer l for n positions t0.. given their h[l-1] rows
 * (h_prev [n, dim]): q [n, H*hd] = RoPE(q_norm(Wq RMSNorm_1(h) + bq)),
 * what the layer's attention multiplies with the cached keys. */
int dec_queries(ss_dec *d, int layer, const float *h_prev, long t0, long n, float *q, ss_err *e);

/* Apply interventions matching (layer, what) to rows t0..t0+n-1 of x. */
void interv_apply(const ss_interv *iv, size_t n_iv, int layer, ss_hook_point what, long t0,
                  long n, float *x, long dim);

#endif
