/* attention.c - blocked causal attention; see attention.h. */
#include "attention.h"
#include "kernels.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct attn_thread {
	float *qg, *og;   /* [g * qblock, hd] */
	float *s;         /* [g * qblock, maxT] */
	float *csum;      /* [g, maxT] */
	float *inv;       /* [g * qblock] 1 / softmax denominators */
	double *acc;      /* [H, maxT] */
} attn_thread;

struct ss_attn {
	long H, Hkv, g, hd, qdim, kvdim, maxT, qb, window;
	int nth;
	float scale;
	attn_thread *th;
	/* the current run */
	float *q;
	const float *kc, *vc;
	long t0, n;
	double *recv_sum;
	long ld;
};

double attn_memory_estimate(const ss_config *c, long maxT, int nth, long qblock)
{
	double g = (double)(c->n_heads / c->n_kv_heads), rows = g * (double)qblock;
	double per = 4.0 * (2 * rows * (double)c->head_dim + rows * (double)maxT + g * (double)maxT + rows) +
	             8.0 * (double)c->n_heads * (double)maxT;
	return per * (nth < 1 ? 1 : nth);
}

void attn_free(ss_attn *a)
{
	if (!a)
		return;
	for (int t = 0; a->th && t < a->nth; t++) {
		free(a->th[t].qg);
		free(a->th[t].og);
		free(a->th[t].s);
		free(a->th[t].csum);
		free(a->th[t].inv);
		free(a->th[t].acc);
	}
	free(a->th);
	free(a);
}

int attn_create(ss_attn **out, const ss_config *c, long maxT, int nth, long qblock, ss_err *e)
{
	ss_attn *a = ss_calloc(1, sizeof *a, "attention", e);
	if (!a)
		return -1;
	a->H = c->n_heads;
	a->Hkv = c->n_kv_heads;
	a->g = a->H / a->Hkv;
	a->hd = c->head_dim;
	a->qdim = a->H * a->hd;
	a->kvdim = a->Hkv * a->hd;
	a->maxT = maxT;
	a->qb = qblock < maxT ? qblock : maxT;
	a->window = c->sliding_window;
	a->nth = nth < 1 ? 1 : nth;
	a->scale = (float)(1.0 / sqrt((double)a->hd));
	a->th = ss_calloc((size_t)a->nth, sizeof *a->th, "attention", e);
	if (!a->th)
		goto fail;
	size_t rows = (size_t)(a->g * a->qb);
	for (int t = 0; t < a->nth; t++) {
		attn_thread *p = &a->th[t];
		if (!(p->qg = ss_malloc(rows * (size_t)a->hd, 4, "attention queries", e)) ||
		    !(p->og = ss_malloc(rows * (size_t)a->hd, 4, "attention output", e)) ||
		    !(p->s = ss_malloc_big(rows * (size_t)maxT, 4, "attention scores", e)) ||
		    !(p->csum = ss_malloc((size_t)(a->g * maxT), 4, "attention sums", e)) ||
		    !(p->inv = ss_malloc(rows, 4, "attention sums", e)) ||
		    !(p->acc = ss_malloc((size_t)(a->H * maxT), 8, "attention received", e)))
			goto fail;
	}
	*out = a;
	return 0;
fail:
	attn_free(a);
	return -1;
}

/* One query block qb (rows r0..r1-1 of q) against KV head kvh. */
static void block(ss_attn *a, attn_thread *p, long r0, long r1, long kvh)
{
	long g = a->g, hd = a->hd, nb = r1 - r0;
	long qs = a->t0 + r0, qe = a->t0 + r1;          /* absolute positions */
	long klo = a->window && qs - a->window + 1 > 0 ? qs - a->window + 1 : 0, nk = qe - klo;
	for (long r = 0; r < g; r++)
		for (long i = 0; i < nb; i++)
			memcpy(p->qg + (r * nb + i) * hd, a->q + (r0 + i) * a->qdim + (kvh * g + r) * hd,
			       (size_t)hd * 4);
	/* S = scale * Qg K^T over keys klo..qe-1 */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(g * nb), (int)nk, (int)hd, a->scale,
	            p->qg, (int)hd, a->kc + klo * a->kvdim + kvh * hd, (int)a->kvdim, 0.0f, p->s, (int)nk);
	int want = a->recv_sum != NULL;
	if (want)
		memset(p->csum, 0, sizeof(float) * (size_t)(g * nk));
	for (long r = 0; r < g; r++)
		for (long i = 0; i < nb; i++) {
			float *row = p->s + (r * nb + i) * nk;
			long pos = qs + i;
			long jlo = a->window && pos - a->window + 1 > klo ? pos - a->window + 1 : klo;
			long jhi = pos + 1;
			float *v = row + (jlo - klo);
			long len = jhi - jlo;
			/* exact softmax over the visible keys: exp(s - max) / sum; the
			 * division is applied to the column sums and to P V's rows */
			float mx = k_max(v, len);
			double sum = k_exp_shift(v, len, mx);
			float inv = (float)(1.0 / sum);
			p->inv[r * nb + i] = inv;
			if (jlo > klo)
				memset(row, 0, sizeof(float) * (size_t)(jlo - klo));
			if (qe > jhi)
				memset(row + (jhi - klo), 0, sizeof(float) * (size_t)(qe - jhi));
			if (want)
				k_axpy(p->csum + r * nk + (jlo - klo), v, len, inv);
		}
	if (want)
		for (long r = 0; r < g; r++) {
			double *acc = p->acc + (kvh * g + r) * a->maxT + klo;
			const float *cs = p->csum + r * nk;
			for (long j = 0; j < nk; j++)
				acc[j] += cs[j];
		}
	/* O = P V */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(g * nb), (int)hd, (int)nk, 1.0f,
	            p->s, (int)nk, a->vc + klo * a->kvdim + kvh * hd, (int)a->kvdim, 0.0f, p->og, (int)hd);
	for (long r = 0; r < g; r++)
		for (long i = 0; i < nb; i++) {
			float *o = a->q + (r0 + i) * a->qdim + (kvh * g + r) * hd;
			const float *src = p->og + (r * nb + i) * hd, s = p->inv[r * nb + i];
			for (long k = 0; k < hd; k++)
				o[k] = src[k] * s;
		}
}

static void attn_task(void *ctx, int tid, int nth)
{
	ss_attn *a = ctx;
	attn_thread *p = &a->th[tid];
	long keys = a->t0 + a->n;
	if (a->recv_sum)
		for (long h = 0; h < a->H; h++)
			memset(p->acc + h * a->maxT, 0, sizeof(double) * (size_t)keys);
	long nqb = (a->n + a->qb - 1) / a->qb, items = nqb * a->Hkv;
	/* static interleaving: deterministic, and balanced over the causal
	 * triangle because block costs grow with qb for every thread alike */
	for (long it = tid; it < items; it += nth) {
		long qb = it / a->Hkv, kvh = it % a->Hkv;
		long r0 = qb * a->qb, r1 = r0 + a->qb < a->n ? r0 + a->qb : a->n;
		block(a, p, r0, r1, kvh);
	}
}

static void reduce_task(void *ctx, int tid, int nth)
{
	ss_attn *a = ctx;
	long keys = a->t0 + a->n, lo, hi;
	pool_share(a->H * keys, 64, tid, nth, &lo, &hi);
	for (long x = lo; x < hi; x++) {
		long h = x / keys, j = x % keys;
		double s = 0;
		for (int t = 0; t < a->nth; t++)
			s += a->th[t].acc[h * a->maxT + j];
		a->recv_sum[h * a->ld + j] += s;
	}
}

int attn_run(ss_attn *a, ss_pool *pool, float *q, long t0, long n, const float *kc,
             const float *vc, double *recv_sum, long ld, ss_err *e)
{
	if (t0 + n > a->maxT)
		return ss_err_set(e, "attention over %ld positions, prepared for %ld", t0 + n, a->maxT);
	if (pool_size(pool) != a->nth)
		return ss_err_set(e, "attention prepared for %d threads, called with %d", a->nth, pool_size(pool));
	a->q = q;
	a->kc = kc;
	a->vc = vc;
	a->t0 = t0;
	a->n = n;
	a->recv_sum = recv_sum;
	a->ld = ld;
	pool_run(pool, attn_task, a);
	if (recv_sum)
		pool_run(pool, reduce_task, a);
	return 0;
}
