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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- the layer's tensors into lw (fwd_weights.c lists them) ---------- */

typedef struct conv_job { fwd_item *it; int n; } conv_job;

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

/* the items of it[0..n) that are pending, converted into lw (Conv1D
 * weights through tbuf, transposed) and marked done */
void fwd_convert_items(ss_fwd *f, fwd_item **it, int n)
{
	conv_job j = {.it = f->jbuf, .n = 0};
	for (int i = 0; i < n; i++)
		if (!it[i]->done && !it[i]->tr)
			j.it[j.n++] = *it[i];
	if (j.n)
		fwd_timed_run(f, &f->tm.convert, conv_task, &j);
	for (int i = 0; i < n; i++) {
		if (it[i]->done)
			continue;
		it[i]->done = 1;
		if (!it[i]->tr)
			continue;
		fwd_item ci = *it[i];   /* stored [in, out]: converted into tbuf, transposed */
		ci.dst = f->tbuf;
		conv_job one = {.it = &ci, .n = 1};
		fwd_timed_run(f, &f->tm.convert, conv_task, &one);
		tr_job tj = {it[i]->dst, f->tbuf, (long)ci.t->shape[0], (long)ci.t->shape[1]};
		fwd_timed_run(f, &f->tm.convert, tr_task, &tj);
	}
}

void fwd_mat_ensure(ss_fwd *f, const float *W, long n)
{
	int k = 0;
	for (int i = 0; i < f->nitems; i++) {
		fwd_item *it = &f->items[i];
		if (!it->done && it->dst < W + n && it->dst + it->n > W)
			f->iptr[k++] = it;
	}
	if (k)
		fwd_convert_items(f, f->iptr, k);
}

int fwd_mat_pieces(const ss_fwd *f, const float *W, long N, long K, ss_mm_piece *pc, int max)
{
	int k = 0, pending = 0, done = 0;
	long rows = 0;
	for (int i = 0; i < f->nitems; i++) {
		const fwd_item *it = &f->items[i];
		if (!(it->dst < W + N * K && it->dst + it->n > W))
			continue;
		if (it->done) {
			done++;
			continue;
		}
		pending++;
		const st_tensor *t = it->t;
		size_t es = st_dtype_size(t->dtype);
		const char *src = (const char *)t->data + (size_t)it->off * es;
		long d = (long)(it->dst - W);
		if (k == max || (t->dtype != ST_BF16 && t->dtype != ST_F32) || ((uintptr_t)src % es) ||
		    d < 0 || d % K || it->n % K || d + it->n > N * K)
			return -1;
		ss_mm_piece p = {.src = src, .bf16 = t->dtype == ST_BF16, .n0 = d / K, .rows = it->n / K,
		                 .ld = K, .tr = it->tr};
		if (it->tr) {   /* Conv1D: the whole matrix, stored [K, N] */
			if (d || it->n != N * K || t->shape[0] != K || t->shape[1] != N)
				return -1;
			p.ld = N;
		}
		rows += p.rows;
		pc[k++] = p;
	}
	if (!pending)
		return 0;
	return done || rows != N ? -1 : k;
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

/* W's packing made into *pw (a packing to overwrite, or NULL): from the
 * mapping's pieces as stored, else from lw converted; 0, or -1 (sgemm
 * then).  The whole of it is conversion: a matrix converted in
 * fwd_mat_ensure below adds its own time to tm.convert, counted once. */
static int make_packing(ss_fwd *f, const float *W, const uint16_t *Wb, long N, long K, long ldw, long M,
                        ss_mm_w **pw)
{
	ss_err e = {0};
	double t = ss_now(), c0 = f->tm.convert;
	ss_mm_piece pc[64];
	int np = Wb || ldw != K ? 0 : fwd_mat_pieces(f, W, N, K, pc, 64), rc = -1;
	if (np > 0)   /* from the mapping as it is */
		rc = mm_pack_pieces(f->mm, pw, N, K, M, pc, np, &e);
	if (rc < 0) {
		if (np)   /* pieces oneDNN would not take: from lw, converted */
			fwd_mat_ensure(f, W, N * K);
		rc = Wb ? mm_pack_bf16(f->mm, pw, Wb, N, K, ldw, M, &e) : mm_pack(f->mm, pw, W, N, K, ldw, M, &e);
	}
	f->tm.convert = c0 + (ss_now() - t);
	f->tm.packed += rc == 0;
	return rc;
}

/* W's packing from the store (ss_fwd_keep): found, and checked once a
 * layer run to suit this product's rows, or made into it */
static const ss_mm_w *kept(ss_fwd *f, const float *W, long N, long K, long ldw, long M)
{
	ss_fwd_keep *k = f->keep;
	struct fwd_keep_layer *kl = &k->layer[f->cur - 1];
	long off = (long)(W - f->lw);
	fwd_kept *p = NULL;
	for (int i = 0; i < kl->n && !p; i++)
		if (kl->v[i].off == off && kl->v[i].N == N && kl->v[i].K == K && kl->v[i].ldw == ldw)
			p = &kl->v[i];
	int now = p && p->fwd == k->fwd && p->gen == f->wgen;   /* checked in this layer run */
	if (p && (now || p->M == M || mm_w_suits(f->mm, p->pw, M))) {
		f->tm.kept += !now;
		p->fwd = k->fwd, p->gen = f->wgen, p->M = M;
		return p->pw;
	}
	if (!p) {
		if (kl->n == kl->cap) {
			int cap = kl->cap ? 2 * kl->cap : 8;
			fwd_kept *v = realloc(kl->v, (size_t)cap * sizeof *v);
			if (!v)
				return NULL;
			kl->v = v, kl->cap = cap;
		}
		p = &kl->v[kl->n++];
		*p = (fwd_kept){.off = off, .N = N, .K = K, .ldw = ldw};
	}
	size_t old = p->pw ? mm_w_bytes(p->pw) : 0;
	if (make_packing(f, W, NULL, N, K, ldw, M, &p->pw) < 0) {
		/* the entry goes, with what a failed repacking left in it */
		mm_w_free(p->pw);
		k->bytes -= old;
		*p = kl->v[--kl->n];
		return NULL;
	}
	k->bytes += mm_w_bytes(p->pw) - old;
	k->made++;
	p->fwd = k->fwd, p->gen = f->wgen, p->M = M;
	return p->pw;
}

/* W's packing for the matmul (NULL: none could be made; sgemm then) */
static const ss_mm_w *packed(ss_fwd *f, const float *W, const uint16_t *Wb, long N, long K,
                             long ldw, long M)
{
	if (f->keep && !Wb) {
		const ss_mm_w *w = kept(f, W, N, K, ldw, M);
		if (!w)
			f->mm_failed = 1;
		return w;
	}
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
	if (make_packing(f, W, Wb, N, K, ldw, M, &reuse->pw) < 0) {
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

/* rows [n, K] of src (stride ld) rounded to bf16 (nearest even) into dst
 * (stride K, or in place when dst == src) */
typedef struct r16_job { const float *src; long ld; float *dst; long n, K; } r16_job;

static void r16_task(void *ctx, int tid, int nth)
{
	const r16_job *j = ctx;
	long lo, hi;
	pool_share(j->n, 1, tid, nth, &lo, &hi);
	for (long i = lo; i < hi; i++) {
		const float *s = j->src + i * j->ld;
		float *d = j->dst + (j->dst == j->src ? i * j->ld : i * j->K);
		for (long k = 0; k < j->K; k++)
			d[k] = st_bf16_to_f32(st_f32_to_bf16(s[k]));
	}
}

/* the bf16 mode without oneDNN's bf16 matmul: j's weights rounded to bf16
 * in place (the layer buffer is ours; rounding is idempotent, and exact for
 * a bf16 model, which skips it), its input rounded into f->a16 */
static void emul16_inputs(ss_fwd *f, gemm_job *j)
{
	if (!f->w16) {
		r16_job w = {j->W, j->ldw, (float *)j->W, j->N, j->K};
		fwd_timed_run(f, &f->tm.convert, r16_task, &w);
	}
	size_t need = (size_t)j->M * (size_t)j->K;
	if (need > f->a16n) {
		float *p = realloc(f->a16, need * sizeof *p);
		if (!p) {   /* the products from now on on unrounded inputs */
			fprintf(stderr, "warning: out of memory for a bf16 block (%zu bytes): the products' inputs "
			        "are no longer rounded to bf16\n", need * sizeof *p);
			f->emul16 = 0;
			return;
		}
		f->a16 = p, f->a16n = need;
	}
	r16_job a = {j->A, j->lda, f->a16, j->M, j->K};
	fwd_timed_run(f, &f->tm.rows, r16_task, &a);
	j->A = f->a16, j->lda = j->K;
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
			int rc = mm_run_w(f->mm, pw, M, A, lda, Wb || fwd_mat_pieces(f, W, N, K, NULL, 0) ? NULL : W,
			                ldw, C, ldc, bias, &e);
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
	if (f->lazy && in_layer(f, W))   /* a pending matrix read as it is in lw */
		fwd_mat_ensure(f, W, (N - 1) * ldw + K);
	if (Wb && M == 1)
		j.Wb = Wb;
	else if (Wb)
		widen_mats(f);
	if (f->emul16 && M > 1 && in_layer(f, W))
		emul16_inputs(f, &j);
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
