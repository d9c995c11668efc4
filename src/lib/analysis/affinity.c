/* affinity.c - t-SNE's input affinities: neighbours, perplexity
 * calibration, symmetrisation; see tsne.h for the formulas. */
#include "analysis/affinity.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/nbcore.h"
#include "analysis/neighbours.h"
#include "util/par.h"
#include "util/progress.h"

void csr_free(ss_csr *m)
{
	if (!m)
		return;
	free(m->rowptr);
	free(m->col);
	free(m->val);
	memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------ calibration */

typedef struct cal_ctx {
	const float *dist2;
	int k;
	double perplexity;
	float *P;
	double *perp;
} cal_ctx;

static void cal_chunk(void *c, long lo, long hi, int tid)
{
	cal_ctx *x = c;
	int k = x->k;
	double target = log(x->perplexity);
	double *p = malloc(k * sizeof *p);
	if (!p)
		return; /* caller checks for NaN-free output below */
	for (long i = lo; i < hi; i++) {
		const float *d2 = x->dist2 + (size_t)i * k;
		double dmin = d2[0];
		for (int m = 1; m < k; m++)
			if (d2[m] < dmin)
				dmin = d2[m];
		/* distances shifted by their minimum: the normalised distribution
		 * and its entropy are unchanged, and exp never underflows to 0 */
		double beta = 1, bmin = -DBL_MAX, bmax = DBL_MAX, H = 0, sum = 1;
		double scale = 0;
		for (int m = 0; m < k; m++)
			scale += d2[m] - dmin;
		scale /= k;
		if (scale > 0)
			beta = 1 / scale;
		for (int it = 0; it < 200; it++) {
			sum = 0;
			double sdp = 0;
			for (int m = 0; m < k; m++) {
				double dd = d2[m] - dmin;
				p[m] = exp(-beta * dd);
				sum += p[m];
				sdp += dd * p[m];
			}
			H = log(sum) + beta * sdp / sum;
			double diff = H - target;
			if (fabs(diff) <= 1e-5)
				break;
			if (diff > 0) {
				bmin = beta;
				beta = bmax == DBL_MAX ? beta * 2 : (beta + bmax) / 2;
			} else {
				bmax = beta;
				beta = bmin == -DBL_MAX ? beta / 2 : (beta + bmin) / 2;
			}
		}
		for (int m = 0; m < k; m++)
			x->P[(size_t)i * k + m] = (float)(p[m] / sum);
		if (x->perp)
			x->perp[i] = exp(H);
	}
	free(p);
}

int tsne_calibrate(const float *dist2, long n, int k, double perplexity, int threads, float *P,
                   double *perp, ss_err *e)
{
	if (!(perplexity > 0) || perplexity >= k + 1)
		return ss_err_set(e, "perplexity %g needs more than %d neighbours", perplexity, k);
	for (size_t i = 0; i < (size_t)n * k; i++)
		P[i] = NAN;
	cal_ctx c = {dist2, k, perplexity, P, perp};
	ss_par_for(threads, n, cal_chunk, &c);
	for (size_t i = 0; i < (size_t)n * k; i++)
		if (!isfinite(P[i]))
			return ss_err_set(e, "perplexity calibration failed at row %zu", i / k + 1);
	return 0;
}

/* -------------------------------------------------------- symmetrisation */

int tsne_symmetrize(long n, int k, const int32_t *idx, const float *Pc, ss_csr *out, ss_err *e)
{
	memset(out, 0, sizeof *out);
	long *cnt = ss_calloc(n + 1, sizeof *cnt, "affinity rows", e);
	if (!cnt)
		return -1;
	for (long i = 0; i < n; i++)
		for (int m = 0; m < k; m++) {
			cnt[i + 1]++;
			cnt[idx[(size_t)i * k + m] + 1]++;
		}
	for (long i = 0; i < n; i++)
		cnt[i + 1] += cnt[i];
	size_t tot = cnt[n];
	if (tot >= 0xffffffffu) {
		free(cnt);
		return ss_err_set(e, "%ld points x %d neighbours: too many affinities", n, k);
	}
	/* pack (col, slot) pairs: col in the high half so sorting a row sorts columns */
	int64_t *ent = ss_malloc(tot, sizeof *ent, "affinity entries", e);
	float *ev = ss_malloc(tot, sizeof *ev, "affinity values", e);
	long *fill = ss_malloc(n, sizeof *fill, "affinity fill", e);
	if (!ent || !ev || !fill) {
		free(cnt);
		free(ent);
		free(ev);
		free(fill);
		return -1;
	}
	memcpy(fill, cnt, n * sizeof *fill);
	for (long i = 0; i < n; i++)
		for (int m = 0; m < k; m++) {
			int32_t j = idx[(size_t)i * k + m];
			float v = Pc[(size_t)i * k + m];
			size_t a = fill[i]++, b = fill[j]++;
			ent[a] = ((int64_t)j << 32) | (uint32_t)a;
			ev[a] = v;
			ent[b] = ((int64_t)i << 32) | (uint32_t)b;
			ev[b] = v;
		}
	free(fill);
	/* sort each row by (column, slot) and merge duplicates */
	long *rp = ss_malloc(n + 1, sizeof *rp, "affinity row pointers", e);
	int32_t *col = ss_malloc(tot, sizeof *col, "affinity columns", e);
	float *val = ss_malloc(tot, sizeof *val, "affinity values", e);
	if (!rp || !col || !val) {
		free(cnt), free(ent), free(ev), free(rp), free(col), free(val);
		return -1;
	}
	size_t w = 0;
	double sum = 0;
	for (long i = 0; i < n; i++) {
		rp[i] = (long)w;
		size_t a = cnt[i], b = cnt[i + 1];
		/* insertion sort is fine for ~2k entries per row, and stable */
		for (size_t s = a + 1; s < b; s++) {
			int64_t key = ent[s];
			size_t t = s;
			while (t > a && ent[t - 1] > key) {
				ent[t] = ent[t - 1];
				t--;
			}
			ent[t] = key;
		}
		for (size_t s = a; s < b;) {
			int32_t j = (int32_t)(ent[s] >> 32);
			double v = 0;
			while (s < b && (int32_t)(ent[s] >> 32) == j) {
				v += ev[(uint32_t)ent[s] & 0xffffffffu];
				s++;
			}
			col[w] = j;
			val[w] = (float)v;
			sum += v;
			w++;
		}
	}
	rp[n] = (long)w;
	free(cnt);
	free(ent);
	free(ev);
	if (sum <= 0)
		sum = 1;
	for (size_t s = 0; s < w; s++)
		val[s] = (float)(val[s] / sum);
	out->n = n;
	out->rowptr = rp;
	out->col = col;
	out->val = val;
	return 0;
}


/* ------------------------------------------------------------ affinities */

typedef struct dense_ctx {
	const float *X;
	long n, d;
	int32_t *idx;
	float *dist2;
} dense_ctx;

static void dense_chunk(void *c, long lo, long hi, int tid)
{
	dense_ctx *x = c;
	long k = x->n - 1;
	for (long i = lo; i < hi; i++) {
		long m = 0;
		for (long j = 0; j < x->n; j++) {
			if (j == i)
				continue;
			x->idx[i * k + m] = (int32_t)j;
			x->dist2[i * k + m] = (float)sqdist(x->X + i * x->d, x->X + j * x->d, x->d);
			m++;
		}
	}
}

int tsne_affinities(const float *X, long n, long d, const ss_tsne_params *p, ss_csr *P,
                    ss_tsne_info *info, ss_err *e)
{
	return tsne_affinities_guided(X, n, d, NULL, 0, p, P, info, e);
}

int tsne_affinities_guided(const float *X, long n, long d, const float *Z, long pz,
                           const ss_tsne_params *p, ss_csr *P, ss_tsne_info *info, ss_err *e)
{
	long k = p->exact ? n - 1 : (long)floor(3 * p->perplexity + 1);
	if (k > n - 1)
		k = n - 1;
	int32_t *idx = ss_malloc((size_t)n * k, sizeof *idx, "neighbour indices", e);
	float *d2 = ss_malloc((size_t)n * k, sizeof *d2, "neighbour distances", e);
	float *Pc = ss_malloc((size_t)n * k, sizeof *Pc, "conditional affinities", e);
	double *perp = ss_malloc(n, sizeof *perp, "perplexities", e);
	int rc = -1;
	if (!idx || !d2 || !Pc || !perp)
		goto done;
	double t0 = ss_now();
	long rescanned = 0, measured = 0;
	if (p->exact) {
		dense_ctx c = {X, n, d, idx, d2};
		ss_par_for(p->threads, n, dense_chunk, &c);
	} else if (Z && pz > 0 && p->knn_method == SS_TSNE_KNN_AUTO) {
		if (knn_guided(X, d, Z, pz, n, (int)k, p->threads, idx, d2, &rescanned, &measured, e) < 0)
			goto done;
	} else if (p->knn_method == SS_TSNE_KNN_BLAS || (p->knn_method == SS_TSNE_KNN_AUTO && d > 10)) {
		if (knn_scan(X, n, d, (int)k, p->threads, idx, d2, e) < 0)
			goto done;
	} else if (knn_vptree(X, n, d, (int)k, p->seed, p->threads, idx, d2, e) < 0) {
		goto done;
	}
	double t1 = ss_now();
	if (tsne_calibrate(d2, n, (int)k, p->perplexity, p->threads, Pc, perp, e) < 0)
		goto done;
	/* a point whose neighbours are all at one distance has perplexity k
	 * whatever the bandwidth: when no point reaches the target, the
	 * affinities are uniform and no embedding means anything */
	long bad = 0;
	double lo = perp[0], hi = perp[0];
	for (long i = 0; i < n; i++) {
		bad += fabs(log(perp[i] / p->perplexity)) > 1e-3;
		lo = perp[i] < lo ? perp[i] : lo;
		hi = perp[i] > hi ? perp[i] : hi;
	}
	if (bad == n) {
		char r[64];
		if (fabs(hi - lo) <= 1e-6 * hi)
			snprintf(r, sizeof r, "%.3g", lo);
		else
			snprintf(r, sizeof r, "%.3g-%.3g", lo, hi);
		ss_err_set(e, "perplexity calibration failed: no point reaches perplexity %g (they reach %s "
		           "with %ld neighbours: identical or equidistant points); no embedding is meaningful",
		           p->perplexity, r, k);
		goto done;
	}
	if (tsne_symmetrize(n, (int)k, idx, Pc, P, e) < 0)
		goto done;
	if (info) {
		info->t_knn = t1 - t0;
		info->knn_rescanned = rescanned;
		info->knn_measured = measured;
		info->t_affinity = ss_now() - t1;
		info->n_uncalibrated = bad;
		info->perp_min = info->perp_max = perp[0];
		for (long i = 1; i < n; i++) {
			info->perp_min = perp[i] < info->perp_min ? perp[i] : info->perp_min;
			info->perp_max = perp[i] > info->perp_max ? perp[i] : info->perp_max;
		}
	}
	rc = 0;
done:
	free(idx);
	free(d2);
	free(Pc);
	free(perp);
	return rc;
}
