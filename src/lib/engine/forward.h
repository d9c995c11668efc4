/* forward.h - the forward pass of a decoder-only transformer (f32).
 *
 *   a[l] = Attn_l(RMSNorm_1(h[l-1]))   mid = h[l-1] + a[l]
 *   x[l] = RMSNorm_2(mid)              m[l] = MLP_l(x[l])   h[l] = mid + m[l]
 *
 * exactly as Hugging Face's modeling code defines them (RMSNorm in f32,
 * w * (x / sqrt(mean(x^2) + eps)); RoPE with rotate_half, i.e. pairs
 * (j, j + rotary_dim/2); SwiGLU down(silu(gate(x)) * up(x))).
 *
 * Prefill is layer-major: all T tokens pass through layer l before layer
 * l+1, so each layer's weights are converted to f32 once per trace (into one
 * layer-sized buffer; f32 weights are used in place) and only that layer's
 * keys and values are held.  Projections and the MLP run through oneDNN's
 * matmul primitive (engine/matmul.h: each matrix packed at its first product
 * after its layer is converted, primitives cached per shape) over blocks of
 * tokens, in f32 or bf16 (ss_fwd_opts.compute); one token runs as a gemv,
 * the lm_head as OpenBLAS sgemm.  Attention runs per block of queries: the scores of
 * a block against its causal prefix of keys (never T x T), an exact
 * softmax per row, P.V by sgemm, and the column sums of P accumulated into
 * the attention received:  recv[l][k][j] = (1/(T-j)) sum_{i>=j} A_lk[i][j].
 *
 * The families beyond the paper's (model.h) change this by flags: LayerNorm
 * with bias for RMSNorm; no input norm (OLMo 2: x[l] = mid); a norm of the
 * attention output and of the MLP output before each is added (Gemma,
 * OLMo 2: a[l] and m[l] are those normalised outputs); the parallel
 * residual (NeoX: x[l] = Norm_2(h[l-1]), h[l] = h[l-1] + a[l] + m[l]);
 * GELU, ungated MLPs; learned positions (GPT-2) or Gemma's scaled
 * embeddings in h[0]; a mixture of experts as the MLP (m[l] is the routed
 * sum, plus Qwen2-MoE's gated shared expert).
 *
 * Hooks: one callback sees every hook point of every layer with the
 * activations of a block of tokens; it may modify them (interventions).
 * The plain path (hook NULL) pays nothing.  Results are deterministic for a
 * fixed thread count.
 */
#ifndef SS_FORWARD_H
#define SS_FORWARD_H

#include <stddef.h>
#include <stdint.h>
#include "util/err.h"
#include "engine/model.h"
#include "engine/matmul.h"

typedef enum ss_hook_point {
	SS_HOOK_RESID,     /* h[l] [n, dim]; layer 0 = embeddings */
	SS_HOOK_ATTN_OUT,  /* a[l] [n, dim], before it is added to the stream */
	SS_HOOK_MLP_IN,    /* x[l] [n, dim], the normalised MLP input */
	SS_HOOK_MLP_OUT,   /* m[l] [n, dim], before it is added to the stream */
} ss_hook_point;
#define SS_HOOK_N 4
extern const char *const ss_hook_names[SS_HOOK_N]; /* "resid", "attn_out", "mlp_in", "mlp_out" */

/* x is [n, d] for positions t0 .. t0+n-1 of layer `layer` (1..L; 0 only for
 * SS_HOOK_RESID = embeddings).  The hook may modify x in place.  A nonzero
 * return stops the forward pass (the caller keeps its own message). */
typedef int (*ss_hook_fn)(void *ctx, int layer, ss_hook_point what, long t0, long n, float *x,
                          long d);

/* Keys (after q/k norm and RoPE) and values of positions t0 .. t0+n-1 of a
 * layer, [n, kvdim] each with kvdim = n_kv_heads * head_dim; called once the
 * layer computed them (for a KV cache kept across layers). */
typedef int (*ss_kv_fn)(void *ctx, int layer, long t0, long n, const float *k, const float *v,
                        long kvdim);

/* Key selection (cache policies, kvevict(1)): at each layer, before its
 * attention, the callback chooses for the queries t0.. which keys they see
 * (attention.h), looking at what the engine computed of that layer's input
 * h[l-1] and at the attention received so far under its own choices. */
struct ss_attn_sel;
struct ss_attn_meas;
typedef struct ss_sel_view {
	int layer;           /* 1..L */
	long T, H;           /* positions of the pass; heads */
	const float *norm;   /* [T] ||h[l-1][j]||, or NULL (no stats asked for) */
	const float *cos0;   /* [T] cos(h[l-1][j], h[l-1][0]), or NULL */
	const double *recv;  /* [H, ld]: sum over the queries before t0 of A[i][j] */
	long ld;
} ss_sel_view;
/* For the queries t0 .. t0 + *n - 1: set *sel (NULL: every key) and *meas
 * (NULL: none) and, when the choice holds for fewer queries, lower *n.
 * A nonzero return stops the forward pass. */
typedef int (*ss_select_fn)(void *ctx, const ss_sel_view *v, long t0, long *n,
                            const struct ss_attn_sel **sel, const struct ss_attn_meas **meas);

/* Packed weights kept from one pass to the next (actdump over several
 * sequences): every layer's matrices stay packed for the matmul after the
 * first pass, so later passes, over any number of tokens, neither map nor
 * convert them.  A packing laid out for another number of rows than a
 * later product's first is made again (mm_w_suits), so each pass computes
 * exactly what it would without the store.  Holds fwd_keep_bytes of
 * memory once full.  Bound to one model, compute mode and thread count;
 * used by one ss_fwd at a time, created with ss_fwd_opts.keep pointing to
 * it and neither resident nor resident_f32 (elsewhere it is ignored, as on
 * a CPU without a blocked matmul for the mode). */
typedef struct ss_fwd_keep ss_fwd_keep;
int fwd_keep_create(ss_fwd_keep **out, const ss_model *m, ss_compute mode, int threads, ss_err *e);
void fwd_keep_free(ss_fwd_keep *k);
/* what a full store holds for m in mode (bytes, about: packings pad) */
double fwd_keep_bytes(const ss_model *m, ss_compute mode);
/* packings held (bytes) and made so far (a pass that found them all: none) */
size_t fwd_keep_held(const ss_fwd_keep *k);
long fwd_keep_made(const ss_fwd_keep *k);

typedef struct ss_fwd_opts {
	int threads;              /* worker threads incl. the caller; <= 0: 1 */
	long block;               /* tokens per projection/MLP block; 0: 1024 */
	ss_hook_fn hook;          /* NULL: no hooks */
	void *hook_ctx;
	ss_kv_fn kv;              /* NULL: keys/values dropped after each layer */
	void *kv_ctx;
	int resident;             /* keep every layer's weights once converted, and
	                             lm_head's (decoding): bf16 ones in bf16, others
	                             in f32 (fwd_resident_bf16) */
	int resident_f32;         /* resident weights in f32 whatever their dtype
	                             (the former decoding path: benchmarks) */
	int keep_head;            /* keep lm_head's f32 weights once converted (many
	                             fwd_logits calls: kvevict): vocab x dim floats */
	ss_select_fn select;      /* NULL: every key (the plain path) */
	void *select_ctx;
	ss_compute compute;       /* precision of the matrix products (matmul.h):
	                             SS_COMPUTE_F32 (0, the default) or
	                             SS_COMPUTE_BF16; ss_fwd's `compute` copies it */
	void (*progress)(void *ctx, int layers_done, int n_layers); /* NULL: none */
	void *progress_ctx;
	ss_fwd_keep *keep;        /* NULL: a layer's packings last one layer */
} ss_fwd_opts;

/* Statistics (DESIGN.md section 1), accumulated in double, stored in f32 in
 * the layouts of trace.h.  Any pointer may be NULL (not computed). */
typedef struct ss_stats {
	float *resid_norm;     /* [(L+1) * T]  ||h[l][j]|| */
	float *resid_cos0;     /* [(L+1) * T]  cos(h[l][j], h[l][0]) */
	float *attn_out_norm;  /* [L * T] */
	float *mlp_out_norm;   /* [L * T] */
	float *recv;           /* [L * H * T] */
	/* mixture of experts (both or neither): each token's top_k experts per
	 * layer, in decreasing router probability, and their weights in the sum */
	int32_t *moe_experts;  /* [L * T * top_k] */
	float *moe_weights;    /* [L * T * top_k] */
} ss_stats;

typedef struct ss_fwd ss_fwd; /* thread pool, layer f32 weights, scratch */

/* Prepare for sequences of up to max_T tokens. */
int fwd_create(ss_fwd **out, const ss_model *m, const ss_fwd_opts *o, long max_T, ss_err *e);
void fwd_free(ss_fwd *f);

/* Run ids[0..T) through every layer.  st may be NULL.  h_out, when not
 * NULL, receives h[L] [T, dim] (before the final norm).  A non-finite value
 * is an error at the layer where it starts:
 *   "MODEL: layer 7: non-finite value in mlp_out at position 12". */
int fwd_prefill(ss_fwd *f, const int32_t *ids, long T, ss_stats *st, float *h_out, ss_err *e);

/* Building blocks (incremental decode, interventions).  Layers are 1..L.
 * fwd_embed: x [n, dim] = embeddings of ids (hook SS_HOOK_RESID layer 0 at t0).
 * fwd_layer: x [n, dim] holds h[l-1] of positions t0..t0+n-1 and becomes
 *   h[l].  kc, vc [t0+n, kvdim]: rows < t0 hold earlier positions' keys and
 *   values of this layer; rows t0..t0+n-1 are written.  recv_sum [H, ld]
 *   (may be NULL): += sum over the n queries of A[i][j], j < t0+n.
 *   attn_norm, mlp_norm [n] (may be NULL): ||a[l]||, ||m[l]|| per position.
 * fwd_logits: logits [n, vocab] = lm_head(RMSNorm(x)). */
int fwd_embed(ss_fwd *f, const int32_t *ids, long t0, long n, float *x, ss_err *e);
int fwd_layer(ss_fwd *f, int l, float *x, long t0, long n, float *kc, float *vc,
              double *recv_sum, long ld, float *attn_norm, float *mlp_norm, ss_err *e);
int fwd_logits(ss_fwd *f, const float *x, long n, float *logits, ss_err *e);
/* The queries of layer l that fwd_layer would compute for positions t0..
 * from their h[l-1] rows h_prev [n, dim]: q [n, H*hd] after the input norm,
 * the q projection, q norms and RoPE. */
int fwd_queries(ss_fwd *f, int l, const float *h_prev, long t0, long n, float *q, ss_err *e);

/* Where the time of everything run so far went (wall seconds, summed over
 * calls), and the FLOPs of the projections (2 M N K per product) and of
 * attention (2 x 2 x head_dim per visible query-key pair and head). */
typedef struct ss_fwd_times {
	double linear, attention, convert, rows, pages;   /* seconds */
	double linear_flop, attention_flop;
	long packed, kept;   /* matrices packed in the pass; found packed (ss_fwd_keep) */
} ss_fwd_times;
void fwd_times(const ss_fwd *f, ss_fwd_times *t);
/* the seconds of all the parts above together */
double fwd_times_parts(const ss_fwd_times *t);
/* query-key pairs that causal attention scores for queries t0..t0+n-1
 * (query i sees min(i + 1, window) keys; window 0: no window) */
double fwd_attention_pairs(long window, long t0, long n);

/* Resident weights (ss_fwd_opts.resident): a model whose weights are all
 * bf16 (and not a mixture of experts) keeps every layer's matrices in bf16
 * (exactly its own values) and reads them in place for one token (gemv.h),
 * widening a layer to f32 only for passes over many tokens; lm_head is read
 * from the mapping.  Others keep f32.  fwd_resident_bytes: what either holds. */
int fwd_resident_bf16(const ss_model *m);
double fwd_resident_bytes(const ss_model *m);

/* Bytes of memory the forward pass allocates for T tokens (excluding the
 * mapped weights and any caller buffers): its buffers, one f32 layer (the
 * layer buffer, or the oneDNN packings a pass over many tokens makes in its
 * place), the attention's, and the matmul's copy of one block's A. */
double fwd_memory_estimate(const ss_config *c, long T, int threads, long block);

#endif
