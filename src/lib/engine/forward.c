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
	float *final_norm;           /* [D] */
	/* activations */
	float *x;                    /* [maxT, D] prefill stream */
	float *k, *v;                /* [maxT, kvdim] prefill keys/values */
	float *q;                    /* [maxT, qdim] queries, then attention output */
	float *qkv;                  /* [B, qkvdim] */
	float *xn, *a, *mo;          /* [B, D] */
	float *gu;                   /* [B, 2F] */
	float *cs, *sn;              /* [maxT, half] RoPE tables */
	float *inv_freq;             /* [half] */
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

typedef struct conv_item { float *dst; const st_tensor *t; } conv_item;
typedef struct conv_job { conv_item it[16]; int n; } conv_job;

static void conv_task(void *ctx, int tid, int nth)
{
	const conv_job *j = ctx;
	for (int i = 0; i < j->n; i++) {
		long lo, hi;
		pool_share(j->it[i].t->n, 64, tid, nth, &lo, &hi);
		if (hi > lo)
			st_to_f32(j->it[i].dst + lo, j->it[i].t, lo, hi - lo);
	}
}

/* Point the layer weight pointers at one layer buffer p. */
static void bind_weights(ss_fwd *f, float *p)
{
	const ss_config *c = f->c;
#define TAKE(ptr, n) do { ptr = p; p += (n); } while (0)
	TAKE(f->wqkv, f->qkvdim * f->D);
	TAKE(f->wo, f->D * f->qdim);
	TAKE(f->wgu, 2 * f->F * f->D);
	TAKE(f->wd, f->D * f->F);
	TAKE(f->in_norm, f->D);
	TAKE(f->post_norm, f->D);
	TAKE(f->qn, f->hd);
	TAKE(f->kn, f->hd);
	TAKE(f->bqkv, f->qkvdim);
	TAKE(f->bgu, 2 * f->F);
	TAKE(f->bo, f->D);
	TAKE(f->bd, f->D);
#undef TAKE
	if (!c->qkv_bias)
		f->bqkv = NULL;
	if (!c->o_bias)
		f->bo = NULL;
	if (!c->mlp_bias)
		f->bgu = f->bd = NULL;
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
	conv_job j = {.n = 0};
#define ADD(D_, T_) do { if (T_) { j.it[j.n].dst = (D_); j.it[j.n].t = (T_); j.n++; } } while (0)
	ADD(f->in_norm, w->in_norm);
	ADD(f->post_norm, w->post_norm);
	if (c->fused_qkv) {
		ADD(f->wqkv, w->wqkv);
	} else {
		ADD(f->wqkv, w->wq);
		ADD(f->wqkv + f->qdim * f->D, w->wk);
		ADD(f->wqkv + (f->qdim + f->kvdim) * f->D, w->wv);
	}
	if (c->qkv_bias) {
		ADD(f->bqkv, w->bq);
		ADD(f->bqkv + f->qdim, w->bk);
		ADD(f->bqkv + f->qdim + f->kvdim, w->bv);
	}
	ADD(f->wo, w->wo);
	ADD(f->bo, w->bo);
	ADD(f->qn, w->q_norm);
	ADD(f->kn, w->k_norm);
	if (c->fused_gate_up) {
		ADD(f->wgu, w->w_gate_up);
	} else {
		ADD(f->wgu, w->w_gate);
		ADD(f->wgu + f->F * f->D, w->w_up);
	}
	if (c->mlp_bias) {
		ADD(f->bgu, w->b_gate);
		ADD(f->bgu + f->F, w->b_up);
		ADD(f->bd, w->b_down);
	}
	ADD(f->wd, w->w_down);
#undef ADD
	timed_run(f, &f->tm.convert, conv_task, &j);
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
	f->H = c->n_heads;
	f->Hkv = c->n_kv_heads;
	f->hd = c->head_dim;
	dims(c, &f->qdim, &f->kvdim, &f->half);
	f->qkvdim = f->qdim + 2 * f->kvdim;
	/* all parallelism is ours: OpenBLAS runs single-threaded in each worker */
	openblas_set_num_threads(1);
	if (pool_create(&f->pool, f->nth, e) < 0)
		goto fail;
	f->lwn = model_layer_f32_bytes(c) / sizeof(float);
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
	ss_rope_inv_freq(c, f->inv_freq);
	for (long t = 0; t < T; t++)
		for (long i = 0; i < f->half; i++) {
			float ang = (float)t * f->inv_freq[i];   /* f32, as HF */
			f->cs[t * f->half + i] = (float)cos((double)ang);
			f->sn[t * f->half + i] = (float)sin((double)ang);
		}
	st_to_f32(f->final_norm, m->norm, 0, f->D);
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
	float *kc, *vc;      /* qkv scatter destinations (row 0 = position t0) */
	float *qdst;
	float *norm;         /* [n] */
	float *add;          /* [n, D]: add <- add + in */
} rows_job;

static void norm_task(void *ctx, int tid, int nth)   /* out = RMSNorm(in) * w */
{
	rows_job *j = ctx;
	long lo, hi, D = j->f->D;
	pool_share(j->n, 1, tid, nth, &lo, &hi);
	for (long i = lo; i < hi; i++)
		ss_rmsnorm(j->out + i * D, j->in + i * D, j->w, D, j->f->c->eps);
}

static void rope_row(ss_fwd *f, float *x, long pos)
{
	if (pos < f->maxT) {
		k_rope(x, f->half, f->cs + pos * f->half, f->sn + pos * f->half);
	} else {
		ss_rope(x, f->c->rotary_dim, pos, f->inv_freq);
	}
}

static void qkv_task(void *ctx, int tid, int nth)     /* q/k norm, RoPE, scatter */
{
	rows_job *j = ctx;
	ss_fwd *f = j->f;
	long lo, hi, hd = f->hd;
	pool_share(j->n, 1, tid, nth, &lo, &hi);
	for (long i = lo; i < hi; i++) {
		float *r = f->qkv + i * f->qkvdim, *q = r, *k = r + f->qdim, *v = k + f->kvdim;
		long pos = j->t0 + i;
		for (long h = 0; h < f->H; h++) {
			if (f->c->qk_norm)
				ss_rmsnorm(q + h * hd, q + h * hd, f->qn, hd, f->c->eps);
			rope_row(f, q + h * hd, pos);
		}
		for (long h = 0; h < f->Hkv; h++) {
			if (f->c->qk_norm)
				ss_rmsnorm(k + h * hd, k + h * hd, f->kn, hd, f->c->eps);
			rope_row(f, k + h * hd, pos);
		}
		memcpy(j->qdst + i * f->qdim, q, (size_t)f->qdim * 4);
		memcpy(j->kc + i * f->kvdim, k, (size_t)f->kvdim * 4);
		memcpy(j->vc + i * f->kvdim, v, (size_t)f->kvdim * 4);
	}
}

/* norm[i] = ||in[i]||; then add[i] += in[i]; then (w) out[i] = RMSNorm(add[i]) */
static void resid_task(void *ctx, int tid, int nth)
{
	rows_job *j = ctx;
	long lo, hi, D = j->f->D;
	pool_share(j->n, 1, tid, nth, &lo, &hi);
	for (long i = lo; i < hi; i++) {
		if (j->norm)
			j->norm[i] = (float)sqrt(k_sumsq(j->in + i * D, D));
		if (j->add)
			k_add(j->add + i * D, j->in + i * D, D);
		if (j->w)
			ss_rmsnorm(j->out + i * D, j->add + i * D, j->w, D, j->f->c->eps);
	}
}

static void silu_task(void *ctx, int tid, int nth)
{
	rows_job *j = ctx;
	long lo, hi, F = j->f->F;
	pool_share(j->n, 1, tid, nth, &lo, &hi);
	for (long i = lo; i < hi; i++)
		k_silu_mul(j->f->gu + i * 2 * F, j->f->gu + i * 2 * F + F, F);
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

static int layer(ss_fwd *f, int l, float *x, long t0, long n, float *kc, float *vc,
                 double *recv_sum, long ld, float *attn_norm, float *mlp_norm, float *resid_norm,
                 ss_err *e)
{
	if (l < 1 || l > f->c->n_layers)
		return ss_err_set(e, "layer %d out of range 1-%ld", l, f->c->n_layers);
	if (n < 1 || n > f->maxT || t0 < 0 || t0 + n > f->maxT)
		return ss_err_set(e, "positions %ld-%ld beyond the %ld prepared", t0, t0 + n - 1, f->maxT);
	load_layer(f, l);
	long D = f->D, B = f->B;
	/* queries, keys, values */
	for (long b = 0; b < n; b += B) {
		long nb = n - b < B ? n - b : B;
		rows_job j = {.f = f, .n = nb, .in = x + b * D, .out = f->xn, .w = f->in_norm};
		timed_run(f, &f->tm.rows, norm_task, &j);
		gemm(f, nb, f->qkvdim, D, f->xn, D, f->wqkv, D, f->qkv, f->qkvdim, f->bqkv);
		rows_job q = {.f = f, .n = nb, .t0 = t0 + b, .qdst = f->q + b * f->qdim,
		              .kc = kc + (t0 + b) * f->kvdim, .vc = vc + (t0 + b) * f->kvdim};
		timed_run(f, &f->tm.rows, qkv_task, &q);
	}
	if (f->o.kv && f->o.kv(f->o.kv_ctx, l, t0, n, kc + t0 * f->kvdim, vc + t0 * f->kvdim, f->kvdim))
		return ss_err_set(e, "layer %d: stopped by the key/value callback", l);
	/* attention: f->q becomes the attention output o [n, qdim] */
	double ta = ss_now();
	if (f->o.select ? attend_sel(f, l, t0, n, kc, vc, recv_sum, ld, e) < 0
	                : attn_run(f->attn, f->pool, f->q, t0, n, kc, vc, recv_sum, ld, e) < 0)
		return -1;
	f->tm.attention += ss_now() - ta;
	f->tm.attention_flop += 4.0 * (double)(f->hd * f->H) * fwd_attention_pairs(f->c->sliding_window, t0, n);
	/* output projection, MLP */
	float *an = f->bnorm;
	for (long b = 0; b < n; b += B) {
		long nb = n - b < B ? n - b : B;
		float *xb = x + b * D;
		gemm(f, nb, D, f->qdim, f->q + b * f->qdim, f->qdim, f->wo, f->qdim, f->a, D, f->bo);
		if (f->o.hook && hook(f, l, SS_HOOK_ATTN_OUT, t0 + b, nb, f->a, e) < 0)
			return -1;
		float *na = attn_norm ? attn_norm + b : an;
		rows_job r = {.f = f, .n = nb, .in = f->a, .add = xb, .norm = na, .w = f->post_norm,
		              .out = f->xn};
		timed_run(f, &f->tm.rows, resid_task, &r);
		if (check_finite(na, nb, l, "attn_out", t0 + b, e) < 0)
			return -1;
		if (f->o.hook && hook(f, l, SS_HOOK_MLP_IN, t0 + b, nb, f->xn, e) < 0)
			return -1;
		gemm(f, nb, 2 * f->F, D, f->xn, D, f->wgu, D, f->gu, 2 * f->F, f->bgu);
		rows_job s = {.f = f, .n = nb};
		timed_run(f, &f->tm.rows, silu_task, &s);
		gemm(f, nb, D, f->F, f->gu, 2 * f->F, f->wd, f->F, f->mo, D, f->bd);
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
	return layer(f, l, x, t0, n, kc, vc, recv_sum, ld, attn_norm, mlp_norm, NULL, e);
}

int fwd_embed(ss_fwd *f, const int32_t *ids, long t0, long n, float *x, ss_err *e)
{
	const st_tensor *E = f->m->embed;
	for (long i = 0; i < n; i++) {
		if (ids[i] < 0 || ids[i] >= f->c->vocab)
			return ss_err_set(e, "token id %ld at position %ld outside the vocabulary (0-%ld)",
			                  (long)ids[i], t0 + i, f->c->vocab - 1);
		st_to_f32(x + i * f->D, E, (long)ids[i] * f->D, f->D);
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
		ss_rmsnorm(xn + i * D, x + i * D, f->final_norm, D, f->c->eps);
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
