/* fwd_ops.c - the operations every part of the forward pass shares (see
 * fwd_impl.h): timed pool runs, the projections' GEMM, a row's norm, the
 * finiteness check and the hook call. */
#include "engine/fwd_impl.h"
#include "engine/gemv.h"
#include "engine/kernels.h"
#include "io/stconv.h"
#include "util/progress.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

const char *const ss_hook_names[SS_HOOK_N] = {"resid", "attn_out", "mlp_in", "mlp_out"};

/* ---- parallel helpers ------------------------------------------------ */

typedef struct gemm_job {
	long M, N, K;
	const float *A; long lda;    /* [M, K] */
	const float *W; long ldw;    /* [N, K] (HF weight layout) */
	const uint16_t *Wb;          /* the same in bf16, or NULL (one token: gemv) */
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
	if (m1 - m0 == 1 && j->Wb)   /* one token from bf16 weights: half the bytes */
		gemv_bf16(n1 - n0, j->K, j->Wb + n0 * j->ldw, j->ldw, j->A + m0 * j->lda,
		          j->C + m0 * j->ldc + n0);
	else if (m1 - m0 == 1) /* one token (decoding, re-runs): sgemm would pack W first */
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

void fwd_timed_run(ss_fwd *f, double *acc, ss_pool_fn fn, void *ctx)
{
	double t = ss_now();
	pool_run(f->pool, fn, ctx);
	*acc += ss_now() - t;
}

/* bf16 -> f32 of the resident matrices of layer j->l into lw */
typedef struct widen_job { ss_fwd *f; int l; } widen_job;

static void widen_task(void *ctx, int tid, int nth)
{
	const widen_job *j = ctx;
	long lo, hi;
	pool_share((long)j->f->nmat, 4096, tid, nth, &lo, &hi);
	const uint16_t *s = j->f->rb + (size_t)(j->l - 1) * j->f->nmat;
	if (hi > lo)
		st_conv_f32(j->f->lw + lo, s, ST_BF16, lo, hi - lo);
}

/* the current layer's matrices in f32 for a product over many tokens */
static void widen_mats(ss_fwd *f)
{
	if (f->mats == f->cur)
		return;
	widen_job j = {f, f->cur};
	fwd_timed_run(f, &f->tm.convert, widen_task, &j);
	f->mats = f->cur;
	f->wgen++;
}

void fwd_gemv_bf16(ss_fwd *f, long N, long K, const float *x, const uint16_t *W, float *y)
{
	gemm_job j = {1, N, K, x, K, NULL, K, W, y, N, NULL};
	fwd_timed_run(f, &f->tm.linear, gemm_task, &j);
	f->tm.linear_flop += 2.0 * (double)N * (double)K;
}

/* W's packing for the matmul (NULL: none could be made; sgemm then) */
static const ss_mm_w *packed(ss_fwd *f, const float *W, const uint16_t *Wb, long N, long K,
                             long ldw, long M)
{
	struct fwd_pack *reuse = NULL;
	for (int i = 0; i < f->npk; i++) {
		struct fwd_pack *p = &f->pk[i];
		if (p->N != N || p->K != K)
			continue;
		if (p->W == W && p->ldw == ldw && p->gen == f->wgen)
			return p->pw;
		if (p->gen != f->wgen && !reuse)   /* an earlier layer's: overwrite it */
			reuse = p;
	}
	if (!reuse) {
		if (f->npk == f->cap_pk) {   /* a layer with more matrices (experts) */
			int cap = f->cap_pk ? 2 * f->cap_pk : 16;
			struct fwd_pack *pk = realloc(f->pk, (size_t)cap * sizeof *pk);
			if (!pk) {
				f->mm_failed = 1;
				return NULL;
			}
			f->pk = pk, f->cap_pk = cap;
		}
		reuse = &f->pk[f->npk++];
		reuse->pw = NULL;
	}
	ss_err e = {0};
	double t = ss_now();
	int rc = Wb ? mm_pack_bf16(f->mm, &reuse->pw, Wb, N, K, ldw, M, &e)
	            : mm_pack(f->mm, &reuse->pw, W, N, K, ldw, M, &e);
	f->tm.convert += ss_now() - t;
	if (rc < 0) {
		f->mm_failed = 1;
		return NULL;
	}
	reuse->W = W, reuse->N = N, reuse->K = K, reuse->ldw = ldw, reuse->gen = f->wgen;
	return reuse->pw;
}

/* the lm_head and any other matrix outside the layer buffer keep sgemm */
static int in_layer(const ss_fwd *f, const float *W)
{
	size_t n = f->lwn * (f->o.resident && !f->rb ? (size_t)f->c->n_layers : 1);
	return W >= f->lw && W < f->lw + n;
}

void fwd_gemm(ss_fwd *f, long M, long N, long K, const float *A, long lda, const float *W,
              long ldw, float *C, long ldc, const float *bias)
{
	gemm_job j = {M, N, K, A, lda, W, ldw, NULL, C, ldc, bias};
	const uint16_t *Wb = NULL;
	if (f->rb && W >= f->lw && W < f->lw + f->nmat)   /* a resident bf16 matrix */
		Wb = f->rb + (size_t)(f->cur - 1) * f->nmat + (size_t)(W - f->lw);
	f->tm.linear_flop += 2.0 * (double)M * (double)N * (double)K;
	if (M > 1 && f->mm && !f->mm_failed && in_layer(f, W)) {
		/* oneDNN on this thread with its own (OpenMP) threads, never in a pool
		 * task; resident bf16 matrices packed from their bf16 copy as they are */
		const ss_mm_w *pw = packed(f, W, Wb, N, K, ldw, M);
		if (pw) {
			ss_err e = {0};
			double t = ss_now();
			/* a shape oneDNN would run on its reference code is declined:
			 * sgemm on W in mm_run, or below for a resident bf16 matrix */
			int rc = mm_run(f->mm, pw, M, A, lda, Wb ? NULL : W, ldw, C, ldc, bias, &e);
			f->tm.linear += ss_now() - t;
			if (rc == 0)
				return;
			if (rc < 0)
				f->mm_failed = 1;   /* C is rewritten whole below */
		}
		if (f->mm_failed)
			fprintf(stderr, "warning: oneDNN matmul refused %ld x %ld x %ld: OpenBLAS sgemm (f32) "
			        "from now on\n", M, N, K);
	}
	if (Wb && M == 1)
		j.Wb = Wb;
	else if (Wb)
		widen_mats(f);
	fwd_timed_run(f, &f->tm.linear, gemm_task, &j);
}

/* o = Norm(x): RMSNorm, or LayerNorm with bias b */
void fwd_norm_row(const ss_fwd *f, float *o, const float *x, const float *w, const float *b, long n)
{
	if (f->c->layer_norm)
		ss_layernorm(o, x, w, b, n, f->c->eps);
	else
		ss_rmsnorm(o, x, w, n, f->c->eps);
}

int fwd_check_finite(const float *norm, long n, int l, const char *what, long t0, ss_err *e)
{
	for (long i = 0; i < n; i++)
		if (!isfinite(norm[i]))
			return ss_err_set(e, "layer %d: non-finite value in %s at position %ld", l, what, t0 + i);
	return 0;
}

int fwd_hook(ss_fwd *f, int l, ss_hook_point p, long t0, long n, float *x, ss_err *e)
{
	if (f->o.hook(f->o.hook_ctx, l, p, t0, n, x, f->D))
		return ss_err_set(e, "layer %d: stopped by the %s hook at positions %ld-%ld", l,
		                  ss_hook_names[p], t0, t0 + n - 1);
	return 0;
}
