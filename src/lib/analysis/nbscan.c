/* nbscan.c - the exhaustive distance scan and the k nearest neighbours by
 * it; see neighbours.h. */
#include "analysis/neighbours.h"

#include <cblas.h>
#include <stdlib.h>

#include "analysis/nbcore.h"
#include "util/par.h"

typedef struct dscan_run {
	ss_dscan s;
	ss_dscan_fn fn;
	void *ctx;
} dscan_run;

static void dscan_chunk(void *c, long lo, long hi, int tid)
{
	dscan_run *x = c;
	x->fn(x->ctx, &x->s, x->s.r0 + lo, x->s.r0 + hi, tid);
}

int ss_dist_scan(const float *X, long n, long d, int f64, long block, int threads, ss_dscan_fn fn,
                 void *ctx, ss_err *e)
{
	double *sq = ss_malloc(n, sizeof *sq, "row norms", e);
	double *A = f64 ? ss_malloc((size_t)n * d, sizeof *A, "scan data", e) : NULL;
	float *Df = f64 ? NULL : ss_malloc((size_t)block * n, sizeof *Df, "distance block", e);
	double *Dg = f64 ? ss_malloc((size_t)block * n, sizeof *Dg, "distance block", e) : NULL;
	if (!sq || (f64 && (!A || !Dg)) || (!f64 && !Df)) {
		free(sq), free(A), free(Df), free(Dg);
		return -1;
	}
	for (long i = 0; i < n; i++) {
		double s = 0;
		for (long j = 0; j < d; j++) {
			double v = X[(size_t)i * d + j];
			if (A)
				A[(size_t)i * d + j] = v;
			s += v * v;
		}
		sq[i] = s;
	}
	for (long r0 = 0; r0 < n; r0 += block) {
		long b = n - r0 < block ? n - r0 : block;
		if (f64)
			cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)b, (int)n, (int)d, -2.0,
			            A + (size_t)r0 * d, (int)d, A, (int)d, 0.0, Dg, (int)n);
		else
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)b, (int)n, (int)d, -2.0f,
			            X + (size_t)r0 * d, (int)d, X, (int)d, 0.0f, Df, (int)n);
		dscan_run c = {{n, r0, Df, Dg, sq}, fn, ctx};
		ss_par_for(threads, b, dscan_chunk, &c);
	}
	free(sq), free(A), free(Df), free(Dg);
	return 0;
}

/* ------------------------------------------------------- kNN by the scan */

#define KB 512 /* query rows per block */

typedef struct scan_ctx {
	const float *X;
	long d;
	int k;
	int32_t *idx;
	float *dist2;
} scan_ctx;

static int cmp_nb(double da, int32_t ia, double db, int32_t ib)
{
	return da < db || (da == db && ia < ib);
}

static void scan_rows(void *c, const ss_dscan *s, long lo, long hi, int tid)
{
	scan_ctx *x = c;
	int k = x->k;
	double *hd = malloc(k * sizeof *hd);
	int32_t *hi_ = malloc(k * sizeof *hi_);
	if (!hd || !hi_) {
		free(hd);
		free(hi_);
		return; /* rows stay marked -1; the caller reports it */
	}
	for (long i = lo; i < hi; i++) {
		heap h = {k, 0, hd, hi_};
		for (long j = 0; j < s->n; j++) {
			if (j == i)
				continue;
			double d2 = ss_dscan_d2(s, i, j);
			if (h.n < k || d2 < h.d[0])
				heap_push(&h, d2, (int32_t)j);
		}
		/* exact distances of the kept ones, sorted by (distance, index) */
		int32_t *oi = x->idx + (size_t)i * k;
		float *od = x->dist2 + (size_t)i * k;
		double ex[512];
		double *exd = k <= 512 ? ex : malloc(k * sizeof *exd);
		if (!exd) {
			oi[0] = -1;
			continue;
		}
		for (int m = 0; m < k; m++) {
			oi[m] = h.i[m];
			exd[m] = sqdist(x->X + (size_t)i * x->d, x->X + (size_t)h.i[m] * x->d, x->d);
		}
		for (int m = 1; m < k; m++) {
			double dv = exd[m];
			int32_t iv = oi[m];
			int t = m;
			while (t > 0 && cmp_nb(dv, iv, exd[t - 1], oi[t - 1])) {
				exd[t] = exd[t - 1];
				oi[t] = oi[t - 1];
				t--;
			}
			exd[t] = dv;
			oi[t] = iv;
		}
		for (int m = 0; m < k; m++)
			od[m] = (float)exd[m];
		if (exd != ex)
			free(exd);
	}
	free(hd);
	free(hi_);
}

int knn_scan(const float *X, long n, long d, int k, int threads, int32_t *idx, float *dist2,
             ss_err *e)
{
	if (k < 1 || k > n - 1)
		return ss_err_set(e, "%d neighbours asked among %ld points", k, n);
	for (size_t i = 0; i < (size_t)n * k; i++)
		idx[i] = 0;
	scan_ctx c = {X, d, k, idx, dist2};
	if (ss_dist_scan(X, n, d, 0, KB, threads, scan_rows, &c, e) < 0)
		return -1;
	for (long i = 0; i < n; i++)
		if (idx[(size_t)i * k] < 0)
			return ss_err_set(e, "out of memory in the neighbour search");
	return 0;
}
