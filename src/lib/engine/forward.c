/* forward.c - the forward pass; see forward.h.
 *
 * One layer for positions t0..t0+n-1 (prefill: t0 = 0, n = T):
 *   per block of B tokens:  xn = RMSNorm_1(x);  qkv = xn Wqkv^T (+b)
 *                           q/k norm (Qwen3), RoPE, q -> Q, k,v -> cache
 *   per block of queries:   attention (attention.c) writes o over Q
 *   per block of B tokens:  a = o Wo^T;  x += a;  xm = RMSNorm_2(x)
 *                           gu = xm Wgu^T;  g = silu(g) * u;  m = g Wd^T
 *                           x += m
 * Unfused q/k/v and gate/up weights are converted into fused f32 blocks,
 * so that every architecture runs one projection per step. */
#include "engine/forward.h"
#include "engine/attention.h"
#include "engine/kernels.h"
#include "util/pool.h"
#include "util/progress.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const ss_hook_names[SS_HOOK_N] = {"resid", "attn_out", "mlp_in", "mlp_out"};

#define QBLOCK 32   /* queries per attention block */

struct ss_fwd {
	const ss_model *m;
	const ss_config *c;
	ss_fwd_opts o;
	ss_pool *pool;
	int nth;
	long maxT, B;
	long D, F, H, Hkv, hd, qdim, kvdim, qkvdim, half;
	/* the current layer in f32 (cur = 1..L, 0 = none) */
	int cur;
	float *lw;
	size_t lwn;             /* floats of one layer's f32 weights */
	unsigned char *loaded;  /* resident: [L] layer l-1 converted */
	float *head;            /* resident: lm_head in f32, converted once */
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
};

/* ---- parallel helpers ------------------------------------------------ */

typedef struct gemm_job {
	long M, N, K;
	const float *A; long lda;    /* [M, K] */
	const float *W; long ldw;    /* [N, K] (HF weight layout) */
	float *C; long ldc;          /* [M, N] = A W^T (+ bias) */
	const float *bias;           /* [N] or NULL */
} gemm_job;

static void gemm_task(void *ctx, int tid, int nth)
{
	const gemm_job *j = ctx;
	long m0 = 0, m1 = j->M, n0 = 0, n1 = j->N;
	if (j->N >= 64L * nth)
		pool_share(j->N, 16, tid, nth, &n0, &n1);   /* split the weight rows */
	else
		pool_share(j->M, 4, tid, nth, &m0, &m1);    /* small N: split tokens */
	if (m1 <= m0 || n1 <= n0)
		return;
	if (m1 - m0 == 1) /* one token (decoding, re-runs): sgemm would pack W first */
		cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)(n1 - n0), (int)j->K, 1.0f,
		            j->W + n0 * j->ldw, (int)j->ldw, j->A + m0 * j->lda, 1, 0.0f,
		            j->C + m0 * j->ldc + n0, 1);
	else
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(m1 - m0), (int)(n1 - n0), (int)j->K,
	            1.0f, j->A + m0 * j->lda, (int)j->lda, j->W + n0 * j->ldw, (int)j->ldw, 0.0f,
	            j->C + m0 * j->ldc + n0, (int)j->ldc);
	if (j->bias)
		for (long i = m0; i < m1; i++)
			k_add(j->C + i * j->ldc + n0, j->bias + n0, n1 - n0);
}

/* pool_run(fn, ctx), its time added to *acc */
static void timed_run(ss_fwd *f, double *acc, ss_pool_fn fn, void *ctx)
{
	double t = ss_now();
	pool_run(f->pool, fn, ctx);
	*acc += ss_now() - t;
}

static void gemm(ss_fwd *f, long M, long N, long K, const float *A, long lda, const float *W,
                 long ldw, float *C, long ldc, const float *bias)
{
	gemm_job j = {M, N, K, A, lda, W, ldw, C, ldc, bias};
	timed_run(f, &f->tm.linear, gemm_task, &j);
	f->tm.linear_flop += 2.0 * (double)M * (double)N * (double)K;
}

void fwd_times(const ss_fwd *f, ss_fwd_times *t)
{
	*t = f->tm;
}

double fwd_times_parts(const ss_fwd_times *t)
{
	return t->linear + t->attention + t->convert + t->rows + t->pages;
}

/* ---- layer weights ----------------------------------------------------- */

typedef struct conv_item { float *dst; const st_tensor *t; long off, n; } conv_item;
typedef struct conv_job { conv_item *it; int n; } conv_job;

static void conv_task(void *ctx, int tid, int nth)
{
	const conv_job *j = ctx;
	for (int i = 0; i < j->n; i++) {
		long lo, hi;
		pool_share(j->it[i].n, 64, tid, nth, &lo, &hi);
		if (hi > lo)
			st_to_f32(j->it[i].dst + lo, j->it[i].t, j->it[i].off + lo, hi - lo);
	}
}

/* dst [C, R] = the transpose of src [R, C] (GPT-2's Conv1D weights) */
typedef struct tr_job { float *dst; const float *src; long R, C; } tr_job;

static void tr_task(void *ctx, int tid, int nth)
{
	const tr_job *j = ctx;
	long lo, hi;
	pool_share(j->C, 32, tid, nth, &lo, &hi);
	/* 32 x 32 tiles: both sides touch 32 cache lines per tile, not one per element */
	for (long c0 = lo; c0 < hi; c0 += 32)
		for (long r0 = 0; r0 < j->R; r0 += 32) {
			long c1 = c0 + 32 < hi ? c0 + 32 : hi, r1 = r0 + 32 < j->R ? r0 + 32 : j->R;
			for (long c = c0; c < c1; c++)
				for (long r = r0; r < r1; r++)
					j->dst[c * j->R + r] = j->src[r * j->C + c];
		}
}

/* The layer buffer's layout: with p, point the layer weight pointers into
 * it; returns its floats.  The five architectures of the paper come first,
 * in their order; the other families' tensors follow. */
static size_t layout(ss_fwd *f, float *p)
{
	const ss_config *c = f->c;
	size_t o = 0;
	long Fd = c->n_experts ? 0 : f->F;   /* the dense MLP */
#define TAKE(ptr, n) do { if (p) ptr = p + o; o += (size_t)(n); } while (0)
	TAKE(f->wqkv, f->qkvdim * f->D);
	TAKE(f->wo, f->D * f->qdim);
	TAKE(f->wgu, 2 * Fd * f->D);
	TAKE(f->wd, f->D * Fd);
	TAKE(f->in_norm, f->D);
	TAKE(f->post_norm, f->D);
	TAKE(f->qn, f->hd);
	TAKE(f->kn, f->hd);
	TAKE(f->bqkv, f->qkvdim);
	TAKE(f->bgu, 2 * Fd);
	TAKE(f->bo, f->D);
	TAKE(f->bd, f->D);
	TAKE(f->in_norm_b, f->D);
	TAKE(f->post_norm_b, f->D);
	TAKE(f->ao_norm, f->D);
	TAKE(f->mo_norm, f->D);
	TAKE(f->qnf, f->qkvdim);
	f->knf = f->qnf ? f->qnf + f->qdim : NULL;
	if (c->n_experts) {
		TAKE(f->router, f->E * f->D);
		TAKE(f->ew, f->E * 3 * f->Fe * f->D);
		TAKE(f->sgu, 2 * f->Fs * f->D);
		TAKE(f->sd, f->D * f->Fs);
		TAKE(f->sgate, f->D);
	}
#undef TAKE
	if (!p)
		return o;
	if (!c->qkv_bias)
		f->bqkv = NULL;
	if (!c->o_bias)
		f->bo = NULL;
	if (!c->mlp_bias)
		f->bgu = f->bd = NULL;
	if (!c->layer_norm)
		f->in_norm_b = f->post_norm_b = NULL;
	return o;
}

static void bind_weights(ss_fwd *f, float *p)
{
	layout(f, p);
}

/* x[i] += 1 (Gemma's RMSNorm weights are 1 + w) */
static void plus1(float *x, long n)
{
	for (long i = 0; i < n; i++)
		x[i] += 1.0f;
}

static void load_layer(ss_fwd *f, int l)
{
	if (f->cur == l)
		return;
	if (f->o.resident) { /* every layer has its own buffer, converted once */
		bind_weights(f, f->lw + (size_t)(l - 1) * f->lwn);
		if (f->loaded[l - 1]) {
			f->cur = l;
			return;
		}
		f->loaded[l - 1] = 1;
	}
	const ss_layer_w *w = &f->m->layers[l - 1];
	const ss_config *c = f->c;
	enum { CAP = 128 };
	conv_item it[CAP];
	conv_item *tr[8];            /* Conv1D weights, converted into tbuf one by one */
	int ntr = 0;
	conv_job j = {.it = it, .n = 0};
	long D = f->D;
	/* a full list is converted and emptied (never with Conv1D weights: GPT-2's
	 * layer has a dozen tensors) */
#define ADDR(D_, T_, OFF, N) do { it[j.n].dst = (D_); it[j.n].t = (T_); it[j.n].off = (OFF); \
	it[j.n].n = (N); if (++j.n == CAP) { timed_run(f, &f->tm.convert, conv_task, &j); j.n = 0; } \
	} while (0)
#define ADD(D_, T_) do { if (T_) ADDR(D_, T_, 0, (T_)->n); } while (0)
	ADD(f->in_norm, w->in_norm);
	ADD(f->post_norm, w->post_norm);
	if (c->qkv_per_head) {
		/* NeoX: rows [H][q k v][hd] -> [q of every head | k | v] */
		for (long h = 0; h < f->H; h++)
			for (long part = 0; part < 3; part++) {
				float *dw = f->wqkv + (part * f->qdim + h * f->hd) * D;
				ADDR(dw, w->wqkv, (h * 3 + part) * f->hd * D, f->hd * D);
				if (w->bqkv)
					ADDR(f->bqkv + part * f->qdim + h * f->hd, w->bqkv, (h * 3 + part) * f->hd, f->hd);
			}
	} else if (c->fused_qkv) {
		ADD(f->wqkv, w->wqkv);
		ADD(f->bqkv, w->bqkv);
	} else {
		ADD(f->wqkv, w->wq);
		ADD(f->wqkv + f->qdim * f->D, w->wk);
		ADD(f->wqkv + (f->qdim + f->kvdim) * f->D, w->wv);
	}
	if (c->qkv_bias && !c->fused_qkv) {
		ADD(f->bqkv, w->bq);
		ADD(f->bqkv + f->qdim, w->bk);
		ADD(f->bqkv + f->qdim + f->kvdim, w->bv);
	}
	ADD(f->wo, w->wo);
	ADD(f->bo, w->bo);
	if (c->qk_norm_full) {
		ADD(f->qnf, w->q_norm);
		ADD(f->knf, w->k_norm);
	} else {
		ADD(f->qn, w->q_norm);
		ADD(f->kn, w->k_norm);
	}
	if (c->fused_gate_up) {
		ADD(f->wgu, w->w_gate_up);
	} else if (c->ungated) {
		ADD(f->wgu, w->w_up);
	} else {
		ADD(f->wgu, w->w_gate);
		ADD(f->wgu + f->F * f->D, w->w_up);
	}
	if (c->mlp_bias) {
		ADD(f->bgu, w->b_gate);
		ADD(c->ungated ? f->bgu : f->bgu + f->F, w->b_up);
		ADD(f->bd, w->b_down);
	}
	ADD(f->wd, w->w_down);
	ADD(f->in_norm_b, w->in_norm_b);
	ADD(f->post_norm_b, w->post_norm_b);
	ADD(f->ao_norm, w->attn_out_norm);
	ADD(f->mo_norm, w->mlp_out_norm);
	ADD(f->router, w->router);
	for (long x = 0; x < f->E; x++) {
		float *ex = f->ew + x * 3 * f->Fe * D;
		ADD(ex, w->e_gate[x]);
		ADD(ex + f->Fe * D, w->e_up[x]);
		ADD(ex + 2 * f->Fe * D, w->e_down[x]);
	}
	if (f->sgu) {
		ADD(f->sgu, w->s_gate);
		ADD(f->sgu + f->Fs * D, w->s_up);
		ADD(f->sd, w->s_down);
		ADD(f->sgate, w->s_router);
	}
#undef ADD
#undef ADDR
	if (c->conv1d)   /* stored [in, out]: converted into tbuf, transposed below */
		for (int i = 0; i < j.n; i++)
			if (it[i].t->rank == 2 && ntr < 8) {
				tr[ntr++] = &it[i];
			}
	conv_job rest = {.it = it, .n = 0};
	conv_item keep[CAP];
	if (ntr) {   /* everything else first, then each Conv1D weight */
		for (int i = 0; i < j.n; i++)
			if (!(it[i].t->rank == 2))
				keep[rest.n++] = it[i];
		rest.it = keep;
		timed_run(f, &f->tm.convert, conv_task, &rest);
		for (int i = 0; i < ntr; i++) {
			conv_item ci = *tr[i];
			float *dst = ci.dst;
			ci.dst = f->tbuf;
			conv_job one = {.it = &ci, .n = 1};
			timed_run(f, &f->tm.convert, conv_task, &one);
			tr_job tj = {dst, f->tbuf, (long)ci.t->shape[0], (long)ci.t->shape[1]};
			timed_run(f, &f->tm.convert, tr_task, &tj);
		}
	} else {
		timed_run(f, &f->tm.convert, conv_task, &j);
	}
	if (c->norm_plus1) {
		float *nw[] = {f->in_norm, f->post_norm, f->ao_norm, f->mo_norm};
		for (int i = 0; i < 4; i++)
			plus1(nw[i], D);
		if (c->qk_norm) {
			plus1(f->qn, f->hd);
			plus1(f->kn, f->hd);
		}
	}
	f->cur = l;
}

/* ---- create / free ----------------------------------------------------- */

static void dims(const ss_config *c, long *qdim, long *kvdim, long *half)
{
	*qdim = c->n_heads * c->head_dim;
	*kvdim = c->n_kv_heads * c->head_dim;
	*half = c->rotary_dim / 2;
}

double fwd_memory_estimate(const ss_config *c, long T, int threads, long block)
{
	long qdim, kvdim, half;
	dims(c, &qdim, &kvdim, &half);
	if (block <= 0)
		block = 1024;
	if (threads < 1)
		threads = 1;
	double B = (double)(block < T ? block : T), t = (double)T, D = (double)c->dim;
	double floats = t * D + 2 * t * kvdim + t * qdim + B * (qdim + 2 * kvdim) + 3 * B * D +
	                B * 2 * c->hidden + 2 * t * half + t + B + D;
	double bytes = floats * 4 + 8.0 * c->n_heads * t + (double)model_layer_f32_bytes(c);
	bytes += attn_memory_estimate(c, T, threads, QBLOCK);
	return bytes;
}

/* RoPE tables cos, sin [maxT, half] of inv_freq per c's rope settings */
static void rope_tables(ss_fwd *f, const ss_config *c, float *inv, float *cs, float *sn)
{
	ss_rope_inv_freq(c, inv);
	for (long t = 0; t < f->maxT; t++)
		for (long i = 0; i < f->half; i++) {
			float ang = (float)t * inv[i];   /* f32, as HF */
			cs[t * f->half + i] = (float)cos((double)ang);
			sn[t * f->half + i] = (float)sin((double)ang);
		}
}

int fwd_create(ss_fwd **out, const ss_model *m, const ss_fwd_opts *o, long max_T, ss_err *e)
{
	ss_fwd *f = ss_calloc(1, sizeof *f, "forward state", e);
	if (!f)
		return -1;
	const ss_config *c = &m->c;
	f->m = m;
	f->c = c;
	if (o)
		f->o = *o;
	f->nth = f->o.threads > 0 ? f->o.threads : 1;
	f->B = f->o.block > 0 ? f->o.block : 1024;
	if (max_T < 1)
		max_T = 1;
	f->maxT = max_T;
	if (f->B > max_T)
		f->B = max_T;
	f->D = c->dim;
	f->F = c->hidden;
	if (c->n_experts) {   /* F: the widest MLP, for the scratch */
		f->E = c->n_experts;
		f->K = c->top_k;
		f->Fe = c->moe_hidden;
		f->Fs = c->shared_hidden;
		f->F = f->Fe > f->Fs ? f->Fe : f->Fs;
	}
	f->H = c->n_heads;
	f->Hkv = c->n_kv_heads;
	f->hd = c->head_dim;
	dims(c, &f->qdim, &f->kvdim, &f->half);
	f->qkvdim = f->qdim + 2 * f->kvdim;
	/* all parallelism is ours: OpenBLAS runs single-threaded in each worker */
	openblas_set_num_threads(1);
	if (pool_create(&f->pool, f->nth, e) < 0)
		goto fail;
	f->lwn = layout(f, NULL);
	if (!(f->lw = ss_malloc_big(f->lwn * (f->o.resident ? c->n_layers : 1), sizeof(float),
	                            "layer weights (f32)", e)))
		goto fail;
	if (f->o.resident && !(f->loaded = ss_calloc(c->n_layers, 1, "layer flags", e)))
		goto fail;
	bind_weights(f, f->lw);
	long T = max_T, B = f->B;
	if (!(f->x = ss_malloc_big((size_t)(T * f->D), 4, "residual stream", e)) ||
	    !(f->k = ss_malloc_big((size_t)(T * f->kvdim), 4, "keys", e)) ||
	    !(f->v = ss_malloc_big((size_t)(T * f->kvdim), 4, "values", e)) ||
	    !(f->q = ss_malloc_big((size_t)(T * f->qdim), 4, "queries", e)) ||
	    !(f->qkv = ss_malloc_big((size_t)(B * f->qkvdim), 4, "qkv block", e)) ||
	    !(f->xn = ss_malloc_big((size_t)(B * f->D), 4, "block", e)) ||
	    !(f->a = ss_malloc_big((size_t)(B * f->D), 4, "block", e)) ||
	    !(f->mo = ss_malloc_big((size_t)(B * f->D), 4, "block", e)) ||
	    !(f->gu = ss_malloc_big((size_t)(B * 2 * f->F), 4, "mlp block", e)) ||
	    !(f->cs = ss_malloc((size_t)(T * f->half), 4, "rope table", e)) ||
	    !(f->sn = ss_malloc((size_t)(T * f->half), 4, "rope table", e)) ||
	    !(f->inv_freq = ss_malloc((size_t)f->half, 4, "rope table", e)) ||
	    !(f->recv = ss_malloc((size_t)(f->H * T), 8, "attention received", e)) ||
	    !(f->rnorm = ss_malloc((size_t)T, 4, "norms", e)) ||
	    !(f->bnorm = ss_malloc((size_t)B, 4, "norms", e)) ||
	    !(f->final_norm = ss_malloc((size_t)f->D, 4, "final norm", e)))
		goto fail;
	rope_tables(f, c, f->inv_freq, f->cs, f->sn);
	if (c->rope_local_theta > 0) {   /* Gemma 3's sliding layers: default RoPE, their own base */
		ss_config lc = *c;
		lc.rope_theta = c->rope_local_theta;
		lc.rope_type = SS_ROPE_DEFAULT;
		if (!(f->cs_loc = ss_malloc((size_t)(T * f->half), 4, "rope table", e)) ||
		    !(f->sn_loc = ss_malloc((size_t)(T * f->half), 4, "rope table", e)) ||
		    !(f->inv_loc = ss_malloc((size_t)f->half, 4, "rope table", e)))
			goto fail;
		rope_tables(f, &lc, f->inv_loc, f->cs_loc, f->sn_loc);
	}
	f->rcs = f->cs;
	f->rsn = f->sn;
	f->rinv = f->inv_freq;
	st_to_f32(f->final_norm, m->norm, 0, f->D);
	if (c->norm_plus1)
		plus1(f->final_norm, f->D);
	if (m->norm_b && (!(f->final_norm_b = ss_malloc((size_t)f->D, 4, "final norm", e))))
		goto fail;
	if (m->norm_b)
		st_to_f32(f->final_norm_b, m->norm_b, 0, f->D);
	if (c->conv1d) {   /* the largest Conv1D weight of a layer */
		long q3 = f->qkvdim * f->D, o = f->qdim * f->D, up = f->F * f->D;
		f->tbufn = q3 > o ? q3 : o;
		f->tbufn = up > f->tbufn ? up : f->tbufn;
		if (!(f->tbuf = ss_malloc_big((size_t)f->tbufn, 4, "Conv1D weights", e)))
			goto fail;
	}
	if (f->E && (!(f->rl = ss_malloc((size_t)(B * f->E), 4, "router logits", e)) ||
	             !(f->sel = ss_malloc((size_t)(B * f->K), 4, "experts", e)) ||
	             !(f->selw = ss_malloc((size_t)(B * f->K), 4, "expert weights", e)) ||
	             !(f->idx = ss_malloc((size_t)B, sizeof(long), "expert tokens", e)) ||
	             !(f->xe = ss_malloc_big((size_t)(B * f->D), 4, "expert inputs", e)) ||
	             !(f->ye = ss_malloc_big((size_t)(B * f->D), 4, "expert outputs", e))))
		goto fail;
	if (attn_create(&f->attn, c, T, f->nth, QBLOCK, e) < 0)
		goto fail;
	*out = f;
	return 0;
fail:
	fwd_free(f);
	return -1;
}

void fwd_free(ss_fwd *f)
{
	if (!f)
		return;
	pool_free(f->pool);
	attn_free(f->attn);
	free(f->lw);
	free(f->x);
	free(f->k);
	free(f->v);
	free(f->q);
	free(f->qkv);
	free(f->xn);
	free(f->a);
	free(f->mo);
	free(f->gu);
	free(f->cs);
	free(f->sn);
	free(f->inv_freq);
	free(f->recv);
	free(f->rnorm);
	free(f->bnorm);
	free(f->final_norm);
	free(f->final_norm_b);
	free(f->cs_loc);
	free(f->sn_loc);
	free(f->inv_loc);
	free(f->tbuf);
	free(f->rl);
	free(f->sel);
	free(f->selw);
	free(f->idx);
	free(f->xe);
	free(f->ye);
	free(f->loaded);
	free(f->head);
	free(f);
}

/* ---- row tasks ---------------------------------------------------------- */

typedef struct rows_job {
	ss_fwd *f;
	long n, t0;          /* rows, absolute position of row 0 */
	const float *in;     /* [n, D] */
	float *out;          /* [n, D] */
	const float *w;      /* norm weight */
	const float *b;      /* norm bias (LayerNorm) */
	float *kc, *vc;      /* qkv scatter destinations (row 0 = position t0) */
	float *qdst;
	float *norm;         /* [n] */
	float *add;          /* [n, D]: add <- add + in */
	int pre;             /* resid_task: out = Norm(add) before the add (parallel residual) */
	int copy;            /* resid_task without w: out = add after the add (no norm) */
	long F;              /* act_task: the MLP width */
	float *gu;           /* act_task: [n, ld] */
	long ld;
} rows_job;

/* o = Norm(x): RMSNorm, or LayerNorm with bias b */
static void norm_row(const ss_fwd *f, float *o, const float *x, const float *w, const float *b, long n)
{
	if (f->c->layer_norm)
		ss_layernorm(o, x, w, b, n, f->c->eps);
	else
		ss_rmsnorm(o, x, w, n, f->c->eps);
}

static void norm_task(void *ctx, int tid, int nth)   /* out = Norm(in) * w */
{
	rows_job *j = ctx;
	long lo, hi, D = j->f->D;
	pool_share(j->n, 1, tid, nth, &lo, &hi);
	for (long i = lo; i < hi; i++)
		norm_row(j->f, j->out + i * D, j->in + i * D, j->w, j->b, D);
}

static void rope_row(ss_fwd *f, float *x, long pos)
{
	if (pos < f->maxT) {
		k_rope(x, f->half, f->rcs + pos * f->half, f->rsn + pos * f->half);
	} else {
		ss_rope(x, f->c->rotary_dim, pos, f->rinv);
	}
}

static void qkv_task(void *ctx, int tid, int nth)     /* q/k norm, RoPE, scatter */
{
	rows_job *j = ctx;
	ss_fwd *f = j->f;
	const ss_config *c = f->c;
	long lo, hi, hd = f->hd;
	pool_share(j->n, 1, tid, nth, &lo, &hi);
	for (long i = lo; i < hi; i++) {
		float *r = f->qkv + i * f->qkvdim, *q = r, *k = r + f->qdim, *v = k + f->kvdim;
		long pos = j->t0 + i;
		if (c->qk_norm_full) {   /* OLMo 2: over the whole projection, before the heads */
			ss_rmsnorm(q, q, f->qnf, f->qdim, c->eps);
			ss_rmsnorm(k, k, f->knf, f->kvdim, c->eps);
		}
		for (long h = 0; h < f->H; h++) {
			if (c->qk_norm)
				ss_rmsnorm(q + h * hd, q + h * hd, f->qn, hd, c->eps);
			if (f->half)
				rope_row(f, q + h * hd, pos);
		}
		for (long h = 0; h < f->Hkv; h++) {
			if (c->qk_norm)
				ss_rmsnorm(k + h * hd, k + h * hd, f->kn, hd, c->eps);
			if (f->half)
				rope_row(f, k + h * hd, pos);
		}
		if (j->qdst)
			memcpy(j->qdst + i * f->qdim, q, (size_t)f->qdim * 4);
		if (j->kc)
			memcpy(j->kc + i * f->kvdim, k, (size_t)f->kvdim * 4);
		if (j->vc)
			memcpy(j->vc + i * f->kvdim, v, (size_t)f->kvdim * 4);
	}
}

/* norm[i] = ||in[i]||; then add[i] += in[i]; then (w) out[i] = Norm(add[i]).
 * pre: out[i] = Norm(add[i]) before the add; copy (no w): out[i] = add[i]. */
static void resid_task(void *ctx, int tid, int nth)
{
	rows_job *j = ctx;
	long lo, hi, D = j->f->D;
	pool_share(j->n, 1, tid, nth, &lo, &hi);
	for (long i = lo; i < hi; i++) {
		if (j->norm)
			j->norm[i] = (float)sqrt(k_sumsq(j->in + i * D, D));
		if (j->w && j->pre)
			norm_row(j->f, j->out + i * D, j->add + i * D, j->w, j->b, D);
		if (j->add)
			k_add(j->add + i * D, j->in + i * D, D);
		if (j->w && !j->pre)
			norm_row(j->f, j->out + i * D, j->add + i * D, j->w, j->b, D);
		else if (j->copy)
			memcpy(j->out + i * D, j->add + i * D, sizeof(float) * (size_t)D);
	}
}

/* the activation of rows gu [n, ld]: gated act(gate) * up (gate in columns
 * 0..F-1, up in F..2F-1), or ungated act(gu) in columns 0..F-1 */
static void act_task(void *ctx, int tid, int nth)
{
	rows_job *j = ctx;
	const ss_config *c = j->f->c;
	long lo, hi, F = j->F;
	pool_share(j->n, 1, tid, nth, &lo, &hi);
	for (long i = lo; i < hi; i++) {
		float *g = j->gu + i * j->ld;
		const float *u = c->ungated ? NULL : g + F;
		if (c->act == SS_ACT_SILU && !u)
			for (long k = 0; k < F; k++)
				g[k] = g[k] / (1.0f + expf(-g[k]));
		else if (c->act == SS_ACT_SILU)
			k_silu_mul(g, u, F);
		else
			k_gelu_mul(g, u, F, c->act == SS_ACT_GELU_TANH);
	}
}

static int check_finite(const float *norm, long n, int l, const char *what, long t0, ss_err *e)
{
	for (long i = 0; i < n; i++)
		if (!isfinite(norm[i]))
			return ss_err_set(e, "layer %d: non-finite value in %s at position %ld", l, what, t0 + i);
	return 0;
}

static int hook(ss_fwd *f, int l, ss_hook_point p, long t0, long n, float *x, ss_err *e)
{
	if (f->o.hook(f->o.hook_ctx, l, p, t0, n, x, f->D))
		return ss_err_set(e, "layer %d: stopped by the %s hook at positions %ld-%ld", l,
		                  ss_hook_names[p], t0, t0 + n - 1);
	return 0;
}

double fwd_attention_pairs(long w, long t0, long n)
{
	long cut = t0 + n;   /* queries i < cut see i + 1 keys, the rest w */
	if (w > 0 && w - 1 < cut)
		cut = w - 1 > t0 ? w - 1 : t0;
	return (double)(cut - t0) * (double)(t0 + 1 + cut) / 2 + (double)(t0 + n - cut) * (double)w;
}

/* ---- the MLP -------------------------------------------------------------- */

/* out [n, D] = down(act(x W_gu^T + b_gu)) + b_d for a gated (gate rows,
 * then up rows: W_gu [2F, D]) or an ungated (W_gu [F, D]) MLP of width F */
static void mlp_dense(ss_fwd *f, long n, const float *x, const float *wgu, const float *bgu,
                      const float *wd, const float *bd, long F, float *out)
{
	long D = f->D, ld = f->c->ungated ? F : 2 * F;
	gemm(f, n, ld, D, x, D, wgu, D, f->gu, ld, bgu);
	rows_job s = {.f = f, .n = n, .F = F, .gu = f->gu, .ld = ld};
	timed_run(f, &f->tm.rows, act_task, &s);
	gemm(f, n, D, F, f->gu, ld, wd, F, out, D, bd);
}

/* Routing of n tokens (rows of x): router probabilities softmax(x Wr^T) (in
 * double), the top_k experts (ties to the lower index), their weights
 * renormalised to sum 1 where the config says so (HF's Mixtral, and
 * Qwen-MoE's norm_topk_prob) */
static void route(ss_fwd *f, long n, const float *x, long t0)
{
	long E = f->E, K = f->K;
	gemm(f, n, E, f->D, x, f->D, f->router, f->D, f->rl, E, NULL);
	double p[4096];
	for (long i = 0; i < n; i++) {
		const float *r = f->rl + i * E;
		float mx = k_max(r, E);
		double z = 0;
		for (long x2 = 0; x2 < E; x2++)
			z += p[x2] = exp((double)r[x2] - mx);
		int32_t *sel = f->sel + i * K;
		float *sw = f->selw + i * K;
		double sum = 0;
		for (long k = 0; k < K; k++) {
			long best = -1;
			for (long x2 = 0; x2 < E; x2++)
				if (p[x2] >= 0 && (best < 0 || p[x2] > p[best]))
					best = x2;
			sel[k] = (int32_t)best;
			sum += p[best] / z;
			sw[k] = (float)(p[best] / z);
			p[best] = -1;   /* taken */
		}
		if (f->c->norm_topk)
			for (long k = 0; k < K; k++)
				sw[k] = (float)((double)sw[k] / sum);
		if (f->rec_e) {
			memcpy(f->rec_e + (t0 + i) * K, sel, sizeof *sel * (size_t)K);
			memcpy(f->rec_w + (t0 + i) * K, sw, sizeof *sw * (size_t)K);
		}
	}
}

/* out [n, D] = sum over each token's experts of weight * expert(x), plus
 * Qwen2-MoE's sigmoid(x . w_gate) * shared(x): the mixture's whole output */
static void mlp_moe(ss_fwd *f, long n, const float *x, long t0, float *out)
{
	long D = f->D, K = f->K, Fe = f->Fe;
	route(f, n, x, t0);
	memset(out, 0, sizeof(float) * (size_t)(n * D));
	for (long ex = 0; ex < f->E; ex++) {   /* each expert on the tokens routed to it */
		long m = 0;
		for (long i = 0; i < n; i++)
			for (long k = 0; k < K; k++)
				if (f->sel[i * K + k] == ex) {
					f->idx[m] = i * K + k;
					memcpy(f->xe + m * D, x + i * D, sizeof(float) * (size_t)D);
					m++;
				}
		if (!m)
			continue;
		const float *w = f->ew + ex * 3 * Fe * D;
		mlp_dense(f, m, f->xe, w, NULL, w + 2 * Fe * D, NULL, Fe, f->ye);
		for (long r = 0; r < m; r++)
			k_axpy(out + (f->idx[r] / K) * D, f->ye + r * D, D, f->selw[f->idx[r]]);
	}
	if (f->sgu) {
		mlp_dense(f, n, x, f->sgu, NULL, f->sd, NULL, f->Fs, f->ye);
		for (long i = 0; i < n; i++) {
			double g = 1.0 / (1.0 + exp(-k_dot(x + i * D, f->sgate, D)));
			k_axpy(out + i * D, f->ye + i * D, D, (float)g);
		}
	}
}

/* in place: x[i] = RMSNorm(x[i]) * w for n rows (the branch output norms) */
static void postnorm(ss_fwd *f, float *x, long n, const float *w)
{
	rows_job j = {.f = f, .n = n, .in = x, .out = x, .w = w};
	timed_run(f, &f->tm.rows, norm_task, &j);
}

/* ---- the layer ------------------------------------------------------------ */

/* attention of queries t0..t0+n-1 in the pieces and under the key
 * selections the select callback chooses */
static int attend_sel(ss_fwd *f, int l, long t0, long n, const float *kc, const float *vc,
                      double *recv_sum, long ld, ss_err *e)
{
	long T = t0 + n;
	ss_sel_view v = {.layer = l, .T = T, .H = f->H, .recv = recv_sum, .ld = ld};
	if (f->st && f->st->resid_norm)
		v.norm = f->st->resid_norm + (l - 1) * T;
	if (f->st && f->st->resid_cos0)
		v.cos0 = f->st->resid_cos0 + (l - 1) * T;
	for (long t = t0; t < T;) {
		long m = T - t;
		const ss_attn_sel *sel = NULL;
		const ss_attn_meas *meas = NULL;
		if (f->o.select(f->o.select_ctx, &v, t, &m, &sel, &meas) || m < 1 || m > T - t)
			return ss_err_set(e, "layer %d: stopped by the key selection at position %ld", l, t);
		if (attn_run_sel(f->attn, f->pool, f->q + (t - t0) * f->qdim, t, m, kc, vc, sel, meas, recv_sum,
		                 ld, e) < 0)
			return -1;
		t += m;
	}
	return 0;
}

/* the layer's window and RoPE tables (Gemma's alternating layers) */
static void layer_setup(ss_fwd *f, int l)
{
	load_layer(f, l);
	attn_set_layer(f->attn, config_layer_window(f->c, l));
	int loc = config_layer_local_rope(f->c, l);
	f->rcs = loc ? f->cs_loc : f->cs;
	f->rsn = loc ? f->sn_loc : f->sn;
	f->rinv = loc ? f->inv_loc : f->inv_freq;
}

/* queries, keys and values of rows x [n, D] (h[l-1] of positions t0..),
 * into q (when not NULL) and kc, vc (rows from position t0, when not NULL) */
static void project_qkv(ss_fwd *f, const float *x, long t0, long n, float *q, float *kc, float *vc)
{
	long D = f->D, B = f->B;
	for (long b = 0; b < n; b += B) {
		long nb = n - b < B ? n - b : B;
		const float *xin = x + b * D;
		if (f->c->attn_in_norm) {
			rows_job j = {.f = f, .n = nb, .in = xin, .out = f->xn, .w = f->in_norm, .b = f->in_norm_b};
			timed_run(f, &f->tm.rows, norm_task, &j);
			xin = f->xn;
		}
		gemm(f, nb, f->qkvdim, D, xin, D, f->wqkv, D, f->qkv, f->qkvdim, f->bqkv);
		rows_job qj = {.f = f, .n = nb, .t0 = t0 + b, .qdst = q ? q + b * f->qdim : NULL,
		               .kc = kc ? kc + b * f->kvdim : NULL, .vc = vc ? vc + b * f->kvdim : NULL};
		timed_run(f, &f->tm.rows, qkv_task, &qj);
	}
}

static int layer(ss_fwd *f, int l, float *x, long t0, long n, float *kc, float *vc,
                 double *recv_sum, long ld, float *attn_norm, float *mlp_norm, float *resid_norm,
                 ss_err *e)
{
	if (l < 1 || l > f->c->n_layers)
		return ss_err_set(e, "layer %d out of range 1-%ld", l, f->c->n_layers);
	if (n < 1 || n > f->maxT || t0 < 0 || t0 + n > f->maxT)
		return ss_err_set(e, "positions %ld-%ld beyond the %ld prepared", t0, t0 + n - 1, f->maxT);
	layer_setup(f, l);
	const ss_config *c = f->c;
	long D = f->D, B = f->B;
	/* queries, keys, values */
	project_qkv(f, x, t0, n, f->q, kc + t0 * f->kvdim, vc + t0 * f->kvdim);
	if (f->o.kv && f->o.kv(f->o.kv_ctx, l, t0, n, kc + t0 * f->kvdim, vc + t0 * f->kvdim, f->kvdim))
		return ss_err_set(e, "layer %d: stopped by the key/value callback", l);
	/* attention: f->q becomes the attention output o [n, qdim] */
	double ta = ss_now();
	if (f->o.select ? attend_sel(f, l, t0, n, kc, vc, recv_sum, ld, e) < 0
	                : attn_run(f->attn, f->pool, f->q, t0, n, kc, vc, recv_sum, ld, e) < 0)
		return -1;
	f->tm.attention += ss_now() - ta;
	f->tm.attention_flop += 4.0 * (double)(f->hd * f->H) * fwd_attention_pairs(config_layer_window(c, l), t0, n);
	/* output projection, MLP */
	float *an = f->bnorm;
	for (long b = 0; b < n; b += B) {
		long nb = n - b < B ? n - b : B;
		float *xb = x + b * D;
		gemm(f, nb, D, f->qdim, f->q + b * f->qdim, f->qdim, f->wo, f->qdim, f->a, D, f->bo);
		if (c->attn_out_norm)
			postnorm(f, f->a, nb, f->ao_norm);
		if (f->o.hook && hook(f, l, SS_HOOK_ATTN_OUT, t0 + b, nb, f->a, e) < 0)
			return -1;
		/* mid = h + a; the MLP reads Norm_2(mid), or Norm_2(h) with the
		 * parallel residual, or mid itself (OLMo 2) */
		float *na = attn_norm ? attn_norm + b : an;
		rows_job r = {.f = f, .n = nb, .in = f->a, .add = xb, .norm = na,
		              .w = c->mlp_in_norm ? f->post_norm : NULL, .b = f->post_norm_b,
		              .pre = c->parallel_resid, .copy = !c->mlp_in_norm, .out = f->xn};
		timed_run(f, &f->tm.rows, resid_task, &r);
		if (check_finite(na, nb, l, "attn_out", t0 + b, e) < 0)
			return -1;
		if (f->o.hook && hook(f, l, SS_HOOK_MLP_IN, t0 + b, nb, f->xn, e) < 0)
			return -1;
		if (c->n_experts)
			mlp_moe(f, nb, f->xn, t0 + b, f->mo);
		else
			mlp_dense(f, nb, f->xn, f->wgu, f->bgu, f->wd, f->bd, f->F, f->mo);
		if (c->mlp_out_norm)
			postnorm(f, f->mo, nb, f->mo_norm);
		if (f->o.hook && hook(f, l, SS_HOOK_MLP_OUT, t0 + b, nb, f->mo, e) < 0)
			return -1;
		float *nm = mlp_norm ? mlp_norm + b : an;
		rows_job mj = {.f = f, .n = nb, .in = f->mo, .add = xb, .norm = nm};
		timed_run(f, &f->tm.rows, resid_task, &mj);
		if (check_finite(nm, nb, l, "mlp_out", t0 + b, e) < 0)
			return -1;
		if (f->o.hook && hook(f, l, SS_HOOK_RESID, t0 + b, nb, xb, e) < 0)
			return -1;
		if (resid_norm) {
			rows_job rn = {.f = f, .n = nb, .in = xb, .norm = resid_norm + b};
			timed_run(f, &f->tm.rows, resid_task, &rn);
			if (check_finite(resid_norm + b, nb, l, "resid", t0 + b, e) < 0)
				return -1;
		}
	}
	return 0;
}

int fwd_layer(ss_fwd *f, int l, float *x, long t0, long n, float *kc, float *vc,
              double *recv_sum, long ld, float *attn_norm, float *mlp_norm, ss_err *e)
{
	f->st = NULL;   /* statistics belong to a prefill */
	f->rec_e = NULL;   /* expert choices are recorded by prefills */
	f->rec_w = NULL;
	return layer(f, l, x, t0, n, kc, vc, recv_sum, ld, attn_norm, mlp_norm, NULL, e);
}

int fwd_queries(ss_fwd *f, int l, const float *h_prev, long t0, long n, float *q, ss_err *e)
{
	if (l < 1 || l > f->c->n_layers)
		return ss_err_set(e, "layer %d out of range 1-%ld", l, f->c->n_layers);
	layer_setup(f, l);
	project_qkv(f, h_prev, t0, n, q, NULL, NULL);
	return 0;
}

int fwd_embed(ss_fwd *f, const int32_t *ids, long t0, long n, float *x, ss_err *e)
{
	const st_tensor *E = f->m->embed, *P = f->m->pos_embed;
	const ss_config *c = f->c;
	for (long i = 0; i < n; i++) {
		if (ids[i] < 0 || ids[i] >= c->vocab)
			return ss_err_set(e, "token id %ld at position %ld outside the vocabulary (0-%ld)",
			                  (long)ids[i], t0 + i, c->vocab - 1);
		if (P && t0 + i >= c->max_pos)
			return ss_err_set(e, "position %ld beyond the %ld learned position embeddings", t0 + i,
			                  c->max_pos);
		float *xi = x + i * f->D;
		st_to_f32(xi, E, (long)ids[i] * f->D, f->D);
		if (P) {   /* GPT-2: wte + wpe (f->a: a free row here) */
			st_to_f32(f->a, P, (t0 + i) * f->D, f->D);
			k_add(xi, f->a, f->D);
		}
		if (c->embed_scale != 1)   /* Gemma: times sqrt(hidden_size), in f32 */
			k_scale(xi, f->D, (float)c->embed_scale);
	}
	if (f->o.hook && hook(f, 0, SS_HOOK_RESID, t0, n, x, e) < 0)
		return -1;
	return 0;
}

int fwd_logits(ss_fwd *f, const float *x, long n, float *logits, ss_err *e)
{
	long D = f->D, V = f->c->vocab, chunk = 4096;
	float *xn = ss_malloc((size_t)(n * D), 4, "logits input", e);
	if (!xn)
		return -1;
	for (long i = 0; i < n; i++)
		norm_row(f, xn + i * D, x + i * D, f->final_norm, f->final_norm_b, D);
	const st_tensor *W = f->m->lm_head;
	float *wb = NULL;
	if (W->dtype != ST_F32 || ((uintptr_t)W->data & 3)) {
		if (!(wb = ss_malloc((size_t)((chunk < V ? chunk : V) * D), 4, "lm_head block", e))) {
			free(xn);
			return -1;
		}
	}
	for (long v0 = 0; v0 < V; v0 += chunk) {
		long nv = V - v0 < chunk ? V - v0 : chunk;
		const float *w;
		if (wb && (f->o.resident || f->o.keep_head) && !f->head &&
		    (f->head = malloc(sizeof(float) * (size_t)(V * D))))
			st_to_f32(f->head, W, 0, V * D);
		if (f->head) {
			w = f->head + v0 * D;
		} else if (wb) {
			st_to_f32(wb, W, v0 * D, nv * D);
			w = wb;
		} else {
			w = (const float *)W->data + v0 * D;
		}
		gemm(f, n, nv, D, xn, D, w, D, logits + v0, V, NULL);
	}
	if (f->c->final_softcap > 0)   /* Gemma 2: cap tanh(logits / cap) */
		for (long i = 0; i < n; i++)
			k_softcap(logits + i * V, V, (float)f->c->final_softcap);
	free(wb);
	free(xn);
	return 0;
}

/* ---- prefill ---------------------------------------------------------------- */

static void stats_resid(ss_fwd *f, const float *x, long T, float *norm, float *cos0)
{
	long D = f->D;
	double n0 = sqrt(k_sumsq(x, D));
	for (long j = 0; j < T; j++) {
		double nj = sqrt(k_sumsq(x + j * D, D));
		if (norm)
			norm[j] = (float)nj;
		if (cos0)
			cos0[j] = (float)(nj > 0 && n0 > 0 ? k_dot(x + j * D, x, D) / (nj * n0) : 0.0);
	}
}

typedef struct pages_job { const ss_model *m; int release, prefetch; } pages_job;

static void pages_task(void *ctx, int tid, int nth)
{
	const pages_job *j = ctx;
	if (tid == 0)
		model_layer_release(j->m, j->release);   /* layers outside 1..L: nothing */
	if (tid == nth - 1)
		model_layer_prefetch(j->m, j->prefetch);
}

int fwd_prefill(ss_fwd *f, const int32_t *ids, long T, ss_stats *st, float *h_out, ss_err *e)
{
	const ss_config *c = f->c;
	const char *dir = f->m->dir ? f->m->dir : "model";
	if (T < 1 || T > f->maxT)
		return ss_err_set(e, "%s: %ld tokens, prepared for 1-%ld", dir, T, f->maxT);
	long L = c->n_layers, H = f->H;
	ss_stats none = {0};
	if (!st)
		st = &none;
	f->st = st;
	float *x = f->x;
	model_embed_prefetch(f->m, ids, T);
	if (fwd_embed(f, ids, 0, T, x, e) < 0)
		return ss_err_prefix(e, "%s", dir);
	/* weights stream through memory: a layer's pages are read ahead while
	 * the previous layer computes and leave once converted (model.h) */
	model_tensor_release(f->m, f->m->embed);
	model_layer_prefetch(f->m, 1);
	stats_resid(f, x, T, f->rnorm, NULL);
	if (check_finite(f->rnorm, T, 0, "resid", 0, e) < 0)
		return ss_err_prefix(e, "%s", dir);
	if (st->resid_norm || st->resid_cos0)
		stats_resid(f, x, T, st->resid_norm, st->resid_cos0);
	for (int l = 1; l <= L; l++) {
		double *rs = st->recv || f->o.select ? f->recv : NULL;   /* a selection may look at it */
		if (rs)
			memset(rs, 0, sizeof(double) * (size_t)(H * T));
		/* release layer l-1, prefetch layer l+1: page-table work of a few
		 * ms per layer, on two threads at once */
		pages_job pj = {f->m, l - 1, l + 1};
		timed_run(f, &f->tm.pages, pages_task, &pj);
		f->rec_e = st->moe_experts ? st->moe_experts + (size_t)(l - 1) * T * f->K : NULL;
		f->rec_w = st->moe_experts ? st->moe_weights + (size_t)(l - 1) * T * f->K : NULL;
		if (layer(f, l, x, 0, T, f->k, f->v, rs, T, st->attn_out_norm ? st->attn_out_norm + (l - 1) * T : NULL,
		          st->mlp_out_norm ? st->mlp_out_norm + (l - 1) * T : NULL, f->rnorm, e) < 0)
			return ss_err_prefix(e, "%s", dir);
		if (st->recv)
			for (long h = 0; h < H; h++)
				for (long j = 0; j < T; j++)
					st->recv[((l - 1) * H + h) * T + j] = (float)(rs[h * T + j] / (double)(T - j));
		if (st->resid_norm || st->resid_cos0)
			stats_resid(f, x, T, st->resid_norm ? st->resid_norm + l * T : NULL,
			            st->resid_cos0 ? st->resid_cos0 + l * T : NULL);
		if (f->o.progress)
			f->o.progress(f->o.progress_ctx, l, (int)L);
	}
	model_release_all(f->m);   /* layer L and anything else still mapped */
	if (h_out)
		memcpy(h_out, x, sizeof(float) * (size_t)(T * f->D));
	return 0;
}
