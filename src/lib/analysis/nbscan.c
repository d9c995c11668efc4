/* nbscan.c - the exhaustive distance scan and the k nearest neighbours by
 * it, plain or guided by a projection; see neighbours.h. */
#include "analysis/neighbours.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

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

int ss_dist_scan(const float *X, long n, long d, const int32_t *rows, long m, int f64, long block,
                 int threads, ss_dscan_fn fn, void *ctx, ss_err *e)
{
	if (!rows)
		m = n;
	double *sq = ss_malloc(n, sizeof *sq, "row norms", e);
	double *A = f64 ? ss_malloc((size_t)n * d, sizeof *A, "scan data", e) : NULL;
	float *Q = rows && !f64 ? ss_malloc((size_t)block * d, sizeof *Q, "scan queries", e) : NULL;
	double *Qg = rows && f64 ? ss_malloc((size_t)block * d, sizeof *Qg, "scan queries", e) : NULL;
	float *Df = f64 ? NULL : ss_malloc((size_t)block * n, sizeof *Df, "distance block", e);
	double *Dg = f64 ? ss_malloc((size_t)block * n, sizeof *Dg, "distance block", e) : NULL;
	int rc = -1;
	if (!sq || (f64 && (!A || !Dg)) || (!f64 && !Df) || (rows && !Q && !Qg))
		goto done;
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
	for (long r0 = 0; r0 < m; r0 += block) {
		long b = m - r0 < block ? m - r0 : block;
		const float *qf = X + (size_t)r0 * d;
		const double *qg = A ? A + (size_t)r0 * d : NULL;
		if (rows) { /* gather the block's queries */
			for (long q = 0; q < b; q++) {
				size_t src = (size_t)rows[r0 + q] * d;
				if (f64)
					memcpy(Qg + (size_t)q * d, A + src, d * sizeof *Qg);
				else
					memcpy(Q + (size_t)q * d, X + src, d * sizeof *Q);
			}
			qf = Q;
			qg = Qg;
		}
		if (f64)
			cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)b, (int)n, (int)d, -2.0,
			            qg, (int)d, A, (int)d, 0.0, Dg, (int)n);
		else
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)b, (int)n, (int)d, -2.0f,
			            qf, (int)d, X, (int)d, 0.0f, Df, (int)n);
		dscan_run c = {{n, r0, rows, Df, Dg, sq}, fn, ctx};
		ss_par_for(threads, b, dscan_chunk, &c);
	}
	rc = 0;
done:
	free(sq), free(A), free(Q), free(Qg), free(Df), free(Dg);
	return rc;
}

/* ------------------------------------------------------- kNN by the scan */

#define KB 512 /* query rows per block */

static int cmp_nb(double da, int32_t ia, double db, int32_t ib)
{
	return da < db || (da == db && ia < ib);
}

/* Insert (dv, iv) into the ascending list (od, oi) of *nk <= k entries,
 * keeping the k smallest by (distance, index). */
static void rank_insert(double *od, int32_t *oi, int *nk, int k, double dv, int32_t iv)
{
	if (*nk == k && !cmp_nb(dv, iv, od[k - 1], oi[k - 1]))
		return;
	int t = *nk < k ? (*nk)++ : k - 1;
	while (t > 0 && cmp_nb(dv, iv, od[t - 1], oi[t - 1])) {
		od[t] = od[t - 1];
		oi[t] = oi[t - 1];
		t--;
	}
	od[t] = dv;
	oi[t] = iv;
}

typedef struct scan_ctx {
	const float *X;
	long d;
	int k;
	int32_t *idx;
	float *dist2;
} scan_ctx;

static void scan_rows(void *c, const ss_dscan *s, long lo, long hi, int tid)
{
	scan_ctx *x = c;
	int k = x->k;
	double *hd = malloc(k * sizeof *hd);
	int32_t *hi_ = malloc(k * sizeof *hi_);
	double *exd = malloc(k * sizeof *exd);
	if (!hd || !hi_ || !exd) {
		free(hd), free(hi_), free(exd);
		return; /* rows stay marked -1; the caller reports it */
	}
	for (long q = lo; q < hi; q++) {
		long i = ss_dscan_row(s, q);
		heap h = {k, 0, hd, hi_};
		for (long j = 0; j < s->n; j++) {
			if (j == i)
				continue;
			double d2 = ss_dscan_d2(s, q, j);
			if (h.n < k || d2 < h.d[0])
				heap_push(&h, d2, (int32_t)j);
		}
		/* exact distances of the kept ones, sorted by (distance, index) */
		int32_t *oi = x->idx + (size_t)i * k;
		float *od = x->dist2 + (size_t)i * k;
		int nk = 0;
		for (int m = 0; m < k; m++)
			rank_insert(exd, oi, &nk, k,
			            sqdist(x->X + (size_t)i * x->d, x->X + (size_t)h.i[m] * x->d, x->d),
			            h.i[m]);
		for (int m = 0; m < k; m++)
			od[m] = (float)exd[m];
	}
	free(hd), free(hi_), free(exd);
}

/* the plain scan of X for the queries rows[0..m) (all rows when NULL) */
static int scan_knn(const float *X, long n, long d, const int32_t *rows, long m, int k,
                    int threads, int32_t *idx, float *dist2, ss_err *e)
{
	long nq = rows ? m : n;
	for (long q = 0; q < nq; q++)
		idx[(size_t)(rows ? rows[q] : q) * k] = -1;
	scan_ctx c = {X, d, k, idx, dist2};
	if (ss_dist_scan(X, n, d, rows, m, 0, KB, threads, scan_rows, &c, e) < 0)
		return -1;
	for (long q = 0; q < nq; q++)
		if (idx[(size_t)(rows ? rows[q] : q) * k] < 0)
			return ss_err_set(e, "out of memory in the neighbour search");
	return 0;
}

int knn_scan(const float *X, long n, long d, int k, int threads, int32_t *idx, float *dist2,
             ss_err *e)
{
	if (k < 1 || k > n - 1)
		return ss_err_set(e, "%d neighbours asked among %ld points", k, n);
	return scan_knn(X, n, d, NULL, 0, k, threads, idx, dist2, e);
}

/* --------------------------------------------- kNN guided by a projection */

typedef struct guide_ctx {
	const float *X;
	long d, cap;
	int k;
	int32_t *idx;
	float *dist2;
	signed char *state; /* [n] 0 done, 1 needs the full scan, -1 out of memory */
	long *nexact;       /* [n] exact distances measured per row */
} guide_ctx;

typedef struct extra {
	double dz;
	int32_t j;
} extra;

static int cmp_extra(const void *a, const void *b)
{
	const extra *x = a, *y = b;
	return x->dz < y->dz ? -1 : x->dz > y->dz ? 1 : (x->j > y->j) - (x->j < y->j);
}

static void guide_rows(void *c, const ss_dscan *s, long lo, long hi, int tid)
{
	guide_ctx *x = c;
	int k = x->k;
	double *hd = malloc(k * sizeof *hd);
	int32_t *hi_ = malloc(k * sizeof *hi_);
	double *exd = malloc(k * sizeof *exd);
	extra *ex = malloc(x->cap * sizeof *ex);
	if (!hd || !hi_ || !exd || !ex) {
		for (long q = lo; q < hi; q++)
			x->state[q] = -1;
		free(hd), free(hi_), free(exd), free(ex);
		return;
	}
	const double *sqz = s->sq;
	for (long i = lo; i < hi; i++) {
		const float *xi = x->X + (size_t)i * x->d;
		heap h = {k, 0, hd, hi_};
		for (long j = 0; j < s->n; j++) {
			if (j == i)
				continue;
			double d2 = ss_dscan_d2(s, i, j);
			if (h.n < k || d2 < h.d[0])
				heap_push(&h, d2, (int32_t)j);
		}
		int32_t *oi = x->idx + (size_t)i * k;
		int nk = 0;
		for (int m = 0; m < k; m++)
			rank_insert(exd, oi, &nk, k, sqdist(xi, x->X + (size_t)h.i[m] * x->d, x->d),
			            h.i[m]);
		long nexact = k;
		/* every other row whose Z distance could be below the k-th exact one */
		double zmax = h.d[0], U = exd[k - 1];
		long ne = 0;
		int full = 0;
		for (long j = 0; j < s->n && !full; j++) {
			if (j == i)
				continue;
			double dz = ss_dscan_d2(s, i, j);
			if (dz < zmax || dz > U * (1 + 1e-4) + 1e-5 * (sqz[i] + sqz[j]))
				continue;
			if (dz == zmax) { /* a tie with the heap's largest: is j in the heap? */
				int in = 0;
				for (int m = 0; m < k && !in; m++)
					in = h.i[m] == j;
				if (in)
					continue;
			}
			if (ne == x->cap)
				full = 1;
			else
				ex[ne++] = (extra){dz, (int32_t)j};
		}
		if (full) {
			x->state[i] = 1;
			x->nexact[i] = nexact;
			continue;
		}
		qsort(ex, ne, sizeof *ex, cmp_extra);
		for (long t = 0; t < ne; t++) {
			int32_t j = ex[t].j;
			if (ex[t].dz > U * (1 + 1e-4) + 1e-5 * (sqz[i] + sqz[j]))
				break;
			rank_insert(exd, oi, &nk, k, sqdist(xi, x->X + (size_t)j * x->d, x->d), j);
			U = exd[k - 1];
			nexact++;
		}
		float *od = x->dist2 + (size_t)i * k;
		for (int m = 0; m < k; m++)
			od[m] = (float)exd[m];
		x->state[i] = 0;
		x->nexact[i] = nexact;
	}
	free(hd), free(hi_), free(exd), free(ex);
}

int knn_guided(const float *X, long d, const float *Z, long p, long n, int k, int threads,
               int32_t *idx, float *dist2, long *nfull, long *nexact, ss_err *e)
{
	if (k < 1 || k > n - 1)
		return ss_err_set(e, "%d neighbours asked among %ld points", k, n);
	long cap = n / 8 > 4L * k ? n / 8 : 4L * k;
	signed char *state = ss_malloc(n, sizeof *state, "neighbour search state", e);
	long *cnt = ss_malloc(n, sizeof *cnt, "neighbour search counts", e);
	int32_t *rows = ss_malloc(n, sizeof *rows, "neighbour search rows", e);
	int rc = -1;
	if (!state || !cnt || !rows)
		goto done;
	memset(state, -1, n);
	guide_ctx c = {X, d, cap, k, idx, dist2, state, cnt};
	if (ss_dist_scan(Z, n, p, NULL, n, 0, KB, threads, guide_rows, &c, e) < 0)
		goto done;
	long m = 0, ex = 0;
	for (long i = 0; i < n; i++) {
		if (state[i] < 0) {
			ss_err_set(e, "out of memory in the neighbour search");
			goto done;
		}
		if (state[i] == 1)
			rows[m++] = (int32_t)i;
		ex += cnt[i];
	}
	if (m > 0 && scan_knn(X, n, d, rows, m, k, threads, idx, dist2, e) < 0)
		goto done;
	if (nfull)
		*nfull = m;
	if (nexact)
		*nexact = ex + m * (n - 1);
	rc = 0;
done:
	free(state), free(cnt), free(rows);
	return rc;
}
