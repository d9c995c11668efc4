/* fwd_impl.h - the forward pass's state shared by forward.c (create,
 * embeddings, logits, prefill), fwd_weights.c (a layer's weights converted
 * to f32), fwd_layer.c (one layer: norms, projections, attention, the MLP,
 * hooks) and fwd_ops.c (what they share: timed runs, the projections (oneDNN,
 * OpenBLAS for one token and the lm_head),
 * row norms, checks); not an API (see forward.h).  Calls go one way:
 * forward -> fwd_layer -> fwd_weights -> fwd_ops.
 */
#ifndef SS_FWD_IMPL_H
#define SS_FWD_IMPL_H

#include "engine/forward.h"
#include "engine/attention.h"
#include "util/pool.h"

#define QBLOCK 32   /* queries per attention block */

/* a run of n floats of the layer buffer from tensor t's elements off..;
 * tr: a Conv1D weight, stored [in, out] = W^T, transposed into it */
typedef struct fwd_item {
	float *dst;
	const st_tensor *t;
	long off, n;
	int tr, done;       /* done: converted into dst */
} fwd_item;

struct ss_fwd {
	const ss_model *m;
	const ss_config *c;
	ss_fwd_opts o;
	ss_pool *pool;
	int nth;
	ss_compute compute;     /* o.compute: the matrix products' precision (matmul.h) */
	long maxT, B;
	long D, F, H, Hkv, hd, qdim, kvdim, qkvdim, half;
	/* the current layer in f32 (cur = 1..L, 0 = none) */
	int cur;
	float *lw;
	size_t lwn;             /* floats of one layer's f32 weights */
	unsigned char *loaded;  /* resident: [L] layer l-1 converted */
	float *head;            /* resident: lm_head in f32, converted once */
	/* resident in bf16 (fwd_resident_bf16): every layer's matrices (the first
	 * nmat floats of the layout) rounded back to bf16, exactly, and its other
	 * weights in f32; lw is then the addressing base and the f32 scratch of
	 * a pass over many tokens (mats: the layer whose matrices it holds) */
	uint16_t *rb;           /* [L, nmat] */
	float *rsm;             /* [L, lwn - nmat] */
	size_t nmat;
	int mats;
	float *in_norm, *post_norm;  /* [D] */
	float *wqkv, *bqkv;          /* [qkvdim, D], [qkvdim] (bias or NULL) */
	float *wo, *bo;              /* [D, qdim], [D] */
	float *qn, *kn;              /* [hd] */
	float *wgu, *bgu;            /* [2F, D]: gate rows then up rows; [2F] */
	float *wd, *bd;              /* [D, F], [D] */
	float *in_norm_b, *post_norm_b; /* [D] LayerNorm biases */
	float *ao_norm, *mo_norm;    /* [D] norms of the attention and MLP outputs */
	float *qnf, *knf;            /* [qdim], [kvdim] whole-projection q/k norms */
	float *router;               /* [E, D] */
	float *ew;                   /* [E][2Fe + D rows]: gate, up [2Fe, D], then down [D, Fe] */
	float *sgu, *sd, *sgate;     /* shared expert [2Fs, D], [D, Fs]; its gate [D] */
	float *final_norm;           /* [D] */
	float *final_norm_b;         /* [D] or NULL */
	/* activations */
	float *x;                    /* [maxT, D] prefill stream */
	float *k, *v;                /* [maxT, kvdim] prefill keys/values */
	float *q;                    /* [maxT, qdim] queries, then attention output */
	float *qkv;                  /* [B, qkvdim] */
	float *xn, *a, *mo;          /* [B, D] */
	float *gu;                   /* [B, 2F] */
	float *cs, *sn;              /* [maxT, half] RoPE tables */
	float *inv_freq;             /* [half] */
	float *cs_loc, *sn_loc, *inv_loc; /* the same for the local base (Gemma 3) or NULL */
	const float *rcs, *rsn, *rinv;    /* the current layer's */
	float *tbuf;                 /* Conv1D weights before their transposition */
	long tbufn;
	/* the current layer's tensors as runs of the layer buffer (fwd_weights.c).
	 * lazy (the plain prefill: no resident layers, oneDNN there): its
	 * matrices stay pending, unconverted; oneDNN packs each from the mapping
	 * as it is at its first product (fwd_mat_pieces: bf16 widened or kept,
	 * Conv1D read transposed), so no f32 copy is written or first touched,
	 * and a mixture converts and packs only the experts tokens are routed
	 * to; a product that reads lw (one token, sgemm) converts its matrix
	 * first (fwd_mat_ensure) */
	fwd_item *items, *jbuf, **iptr;  /* [cap_items] */
	int nitems, cap_items;
	int lazy;
	/* mixture of experts */
	long E, K, Fe, Fs;
	float *rl;                   /* [B, E] router logits */
	int32_t *sel;                /* [B, K] chosen experts */
	float *selw;                 /* [B, K] their weights */
	long *idx;                   /* [B] tokens routed to one expert */
	float *xe, *ye;              /* [B, D] their inputs, outputs */
	int32_t *rec_e;              /* [T, K] of the current layer (prefill stats) or NULL */
	float *rec_w;
	double *recv;                /* [H, maxT] prefill sums */
	float *rnorm;                /* [maxT] */
	float *bnorm;                /* [B] scratch norms */
	ss_attn *attn;
	const ss_stats *st;          /* prefill's statistics (key selection) */
	ss_fwd_times tm;
	/* the layer's matrices packed for oneDNN (matmul.h), a product over many
	 * tokens (M > 1) at a time: packed at their first product after the layer
	 * buffer changed (wgen), into a packing of the same shape from an
	 * earlier layer when there is one */
	ss_mm *mm;
	unsigned long wgen;     /* bumped whenever lw's matrices change */
	struct fwd_pack {
		const float *W;
		long N, K, ldw;
		unsigned long gen;  /* W's packing is current when gen == wgen */
		ss_mm_w *pw;
	} *pk;                  /* a layer's matrices, its experts' too (grown) */
	int npk, cap_pk;
	/* packings kept from pass to pass (ss_fwd_opts.keep; NULL: none): the
	 * store's packings of layer cur replace pk, and its ss_mm is mm */
	ss_fwd_keep *keep;
	int mm_failed;          /* oneDNN refused a product: sgemm from then on */
	/* --compute bf16 where oneDNN has no bf16 matmul (a CPU without
	 * AVX512_BF16 or AMX): the layer products run as sgemm on inputs and
	 * weights rounded to bf16 (w16: the model's weights are bf16 already),
	 * the input rounded into a16 [a16n floats] */
	int emul16, w16;
	float *a16;
	size_t a16n;
};

/* The packings kept from pass to pass (forward.h): per layer, each matrix
 * by its place in the layer buffer (off floats from the layer's start),
 * with the rows of the product it was laid out for (M) and the ss_fwd
 * (fwd: the store's count of them when it was attached) and layer
 * generation (wgen) in which it was last found to suit; complete: a whole
 * pass of the layer made its products from them (the next pass need not
 * map the layer's matrices in). */
typedef struct fwd_kept {
	long off, N, K, ldw, M;
	unsigned long fwd, gen;
	ss_mm_w *pw;
} fwd_kept;

struct ss_fwd_keep {
	const ss_model *m;
	ss_compute mode;
	int threads;
	ss_mm *mm;
	struct fwd_keep_layer {
		fwd_kept *v;
		int n, cap, complete;
	} *layer;                /* [L] */
	unsigned long fwd;       /* ss_fwd attached so far */
	size_t bytes;            /* of the packings held */
	long made;               /* packings made (or remade) so far */
};

/* ---- fwd_ops.c ---- */
/* pool_run(fn, ctx), its time added to *acc */
void fwd_timed_run(ss_fwd *f, double *acc, ss_pool_fn fn, void *ctx);
/* C [M, N] = A [M, K] W^T (+ bias [N]); W [N, K] in HF's layout; timed
 * and counted in f->tm */
void fwd_gemm(ss_fwd *f, long M, long N, long K, const float *A, long lda, const float *W,
              long ldw, float *C, long ldc, const float *bias);
/* y [N] = W x for one token with W [N, K] in bf16 (gemv.h), timed and
 * counted as fwd_gemm.  Resident bf16 matrices go this way from fwd_gemm
 * (M = 1), or are widened into lw first (M > 1). */
void fwd_gemv_bf16(ss_fwd *f, long N, long K, const float *x, const uint16_t *W, float *y);

/* o = Norm(x): RMSNorm, or LayerNorm with bias b */
void fwd_norm_row(const ss_fwd *f, float *o, const float *x, const float *w, const float *b, long n);
/* an error naming the first non-finite norm[i] */
int fwd_check_finite(const float *norm, long n, int l, const char *what, long t0, ss_err *e);
/* the hook at point p; its nonzero return is an error */
int fwd_hook(ss_fwd *f, int l, ss_hook_point p, long t0, long n, float *x, ss_err *e);

/* the pending items among it[0..n) converted into lw (Conv1D weights
 * through tbuf, transposed) and marked done */
void fwd_convert_items(ss_fwd *f, fwd_item **it, int n);
/* convert the pending matrices of [W, W + n) into lw */
void fwd_mat_ensure(ss_fwd *f, const float *W, long n);
/* the sources of the pending matrix W [N, K] of lw as up to max pieces for
 * mm_pack_pieces: their count, 0 when W is converted (pack lw), -1 when
 * they cannot be packed as they are (convert, then pack lw) */
int fwd_mat_pieces(const ss_fwd *f, const float *W, long N, long K, ss_mm_piece *pc, int max);

/* ---- fwd_weights.c ---- */
/* The layer buffer's layout: with p, point the layer weight pointers into
 * it; returns its floats. */
size_t fwd_layout(ss_fwd *f, float *p);
/* make layer l (1..L) the current one, its weights converted to f32 */
void fwd_load_layer(ss_fwd *f, int l);
/* x[i] += 1 (Gemma's RMSNorm weights are 1 + w) */
void fwd_plus1(float *x, long n);

/* ---- fwd_layer.c ---- */
/* fwd_layer, with resid_norm [n] (may be NULL): ||h[l]|| per position */
int fwd_layer_run(ss_fwd *f, int l, float *x, long t0, long n, float *kc, float *vc,
                  double *recv_sum, long ld, float *attn_norm, float *mlp_norm, float *resid_norm,
                  ss_err *e);

#endif
