/* knn.c - k-NN accuracy and silhouette; see knn.h. */
#include "analysis/knn.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BLK 256

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
	/* compact the labelled rows into double */
	double *A = ss_malloc((size_t)m * d, sizeof *A, "separability data", e);
	double *sq = ss_malloc(m, sizeof *sq, "separability norms", e);
	int *lab = ss_malloc(m, sizeof *lab, "separability labels", e);
	double *D = ss_malloc((size_t)BLK * m, sizeof *D, "distance block", e);
	double *sum = ss_malloc((size_t)nc, sizeof *sum, "class sums", e);
	long *vote = ss_malloc(nc, sizeof *vote, "votes", e);
	double *kd = ss_malloc(k, sizeof *kd, "neighbour distances", e);
	int *kl = ss_malloc(k, sizeof *kl, "neighbour labels", e);
	long *hit = ss_calloc(nc, sizeof *hit, "class hits", e);
	int rc = -1;
	if (!A || !sq || !lab || !D || !sum || !vote || !kd || !kl || !hit)
		goto done;
	for (long i = 0, r = 0; i < n; i++) {
		if (label[i] < 0)
			continue;
		double s = 0;
		for (long j = 0; j < d; j++) {
			double v = X[(size_t)i * d + j];
			A[(size_t)r * d + j] = v;
			s += v * v;
		}
		sq[r] = s;
		lab[r++] = label[i];
	}
	long correct = 0;
	double sil = 0;
	for (long r0 = 0; r0 < m; r0 += BLK) {
		long b = m - r0 < BLK ? m - r0 : BLK;
		cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)b, (int)m, (int)d, -2.0,
		            A + (size_t)r0 * d, (int)d, A, (int)d, 0.0, D, (int)m);
		for (long r = 0; r < b; r++) {
			long i = r0 + r;
			double *row = D + (size_t)r * m;
			for (int c = 0; c < nc; c++)
				sum[c] = 0;
			int nk = 0;
			for (long j = 0; j < m; j++) {
				if (j == i)
					continue;
				double d2 = row[j] + sq[i] + sq[j];
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
			if (best == lab[i]) {
				correct++;
				hit[lab[i]]++;
			}
			int li = lab[i];
			if (cnt[li] > 1) {
				double a = sum[li] / (cnt[li] - 1), bmin = DBL_MAX;
				for (int c = 0; c < nc; c++)
					if (c != li && cnt[c] > 0 && sum[c] / cnt[c] < bmin)
						bmin = sum[c] / cnt[c];
				double mx = a > bmin ? a : bmin;
				if (mx > 0)
					sil += (bmin - a) / mx;
			}
		}
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
	free(cnt), free(A), free(sq), free(lab), free(D), free(sum), free(vote), free(kd), free(kl),
		free(hit);
	return rc;
}
