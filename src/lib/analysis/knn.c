/* knn.c - k-NN accuracy and silhouette; see knn.h. */
#include "analysis/knn.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/neighbours.h"

#define BLK 256 /* query rows per scan block */

typedef struct sep_ctx {
	const int *lab;
	const long *cnt;
	int nc, k;
	long m;
	signed char *hit; /* [m] 1: the vote gave the row's label; -1: out of memory */
	double *sil;      /* [m] the row's silhouette */
} sep_ctx;

static void sep_rows(void *c, const ss_dscan *s, long lo, long hi, int tid)
{
	sep_ctx *x = c;
	int nc = x->nc, k = x->k;
	const int *lab = x->lab;
	const long *cnt = x->cnt;
	double *sum = malloc((size_t)nc * sizeof *sum);
	long *vote = malloc((size_t)nc * sizeof *vote);
	double *kd = malloc((size_t)k * sizeof *kd);
	int *kl = malloc((size_t)k * sizeof *kl);
	if (!sum || !vote || !kd || !kl) {
		for (long i = lo; i < hi; i++)
			x->hit[i] = -1;
		free(sum), free(vote), free(kd), free(kl);
		return;
	}
	for (long i = lo; i < hi; i++) {
		for (int c = 0; c < nc; c++)
			sum[c] = 0;
		int nk = 0;
		for (long j = 0; j < x->m; j++) {
			if (j == i)
				continue;
			double d2 = ss_dscan_d2(s, i, j);
			double dist = d2 > 0 ? sqrt(d2) : 0;
			sum[lab[j]] += dist;
			/* keep the k smallest (dist, index) in ascending order */
			if (nk < k || dist < kd[nk - 1]) {
				int t = nk < k ? nk++ : k - 1;
				while (t > 0 && kd[t - 1] > dist) {
					kd[t] = kd[t - 1];
					kl[t] = kl[t - 1];
					t--;
				}
				kd[t] = dist;
				kl[t] = lab[j];
			}
		}
		for (int c = 0; c < nc; c++)
			vote[c] = 0;
		for (int t = 0; t < k; t++)
			vote[kl[t]]++;
		int best = 0;
		for (int c = 1; c < nc; c++)
			if (vote[c] > vote[best])
				best = c;
		x->hit[i] = best == lab[i];
		x->sil[i] = 0;
		int li = lab[i];
		if (cnt[li] > 1) {
			double a = sum[li] / (cnt[li] - 1), bmin = DBL_MAX;
			for (int c = 0; c < nc; c++)
				if (c != li && cnt[c] > 0 && sum[c] / cnt[c] < bmin)
					bmin = sum[c] / cnt[c];
			double mx = a > bmin ? a : bmin;
			if (mx > 0)
				x->sil[i] = (bmin - a) / mx;
		}
	}
	free(sum), free(vote), free(kd), free(kl);
}

int sep_measure(const float *X, long n, long d, const int *label, int k, ss_sep *out, ss_err *e)
{
	memset(out, 0, sizeof *out);
	long m = 0;
	int nc = 0;
	for (long i = 0; i < n; i++)
		if (label[i] >= 0) {
			m++;
			if (label[i] + 1 > nc)
				nc = label[i] + 1;
		}
	long *cnt = ss_calloc(nc > 0 ? nc : 1, sizeof *cnt, "class counts", e);
	if (!cnt)
		return -1;
	for (long i = 0; i < n; i++)
		if (label[i] >= 0)
			cnt[label[i]]++;
	int present = 0;
	for (int c = 0; c < nc; c++)
		present += cnt[c] > 0;
	if (present < 2) {
		free(cnt);
		return ss_err_set(e, "separability needs 2 labelled groups, got %d", present);
	}
	if (k < 1 || k >= m) {
		free(cnt);
		return ss_err_set(e, "k-NN with k = %d among %ld labelled rows", k, m);
	}
	/* compact the labelled rows; the scan runs in double */
	float *A = ss_malloc((size_t)m * d, sizeof *A, "separability data", e);
	int *lab = ss_malloc(m, sizeof *lab, "separability labels", e);
	signed char *hitr = ss_malloc(m, sizeof *hitr, "separability votes", e);
	double *silr = ss_malloc(m, sizeof *silr, "silhouettes", e);
	long *hit = ss_calloc(nc, sizeof *hit, "class hits", e);
	int rc = -1;
	if (!A || !lab || !hitr || !silr || !hit)
		goto done;
	for (long i = 0, r = 0; i < n; i++) {
		if (label[i] < 0)
			continue;
		memcpy(A + (size_t)r * d, X + (size_t)i * d, d * sizeof *A);
		lab[r++] = label[i];
	}
	sep_ctx c = {lab, cnt, nc, k, m, hitr, silr};
	if (ss_dist_scan(A, m, d, NULL, m, 1, BLK, 1, sep_rows, &c, e) < 0)
		goto done;
	long correct = 0;
	double sil = 0;
	for (long i = 0; i < m; i++) {
		if (hitr[i] < 0) {
			ss_err_set(e, "out of memory in the separability scan");
			goto done;
		}
		if (hitr[i]) {
			correct++;
			hit[lab[i]]++;
		}
		sil += silr[i];
	}
	out->n = m;
	out->nclass = present;
	out->knn_acc = (double)correct / m;
	double bal = 0;
	for (int c = 0; c < nc; c++)
		if (cnt[c] > 0)
			bal += (double)hit[c] / cnt[c];
	out->knn_bal = bal / present;
	out->silhouette = sil / m;
	rc = 0;
done:
	free(cnt), free(A), free(lab), free(hitr), free(silr), free(hit);
	return rc;
}
