/* pca.c - PCA in double precision; see pca.h. */
#include "analysis/pca.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define STRIP 2048 /* rows converted to double at a time */

void pca_free(ss_pca *p)
{
	if (!p)
		return;
	free(p->mean);
	free(p->comp);
	free(p->var);
	memset(p, 0, sizeof *p);
}

double pca_ratio(const ss_pca *p, int i)
{
	return p->total_var > 0 ? p->var[i] / p->total_var : 0;
}

/* Sign convention: the largest-magnitude entry of each component is > 0. */
static void fix_signs(double *comp, int k, long d)
{
	for (int i = 0; i < k; i++) {
		double *c = comp + (size_t)i * d;
		long am = 0;
		for (long j = 1; j < d; j++)
			if (fabs(c[j]) > fabs(c[am]))
				am = j;
		if (c[am] < 0)
			for (long j = 0; j < d; j++)
				c[j] = -c[j];
	}
}

double pca_memory(long n, long d, int k)
{
	double N = (double)n, D = (double)d, K = (double)k;
	double b = 8 * (D + 2 * K * D + K);   /* mean; comp and the result's copy; var */
	if (n >= d)
		b += 8 * (2 * D * D + (N < STRIP ? N : STRIP) * D + D + 2 * D * K + 26 * D) + 4 * (10 * D + 2 * K);
	else
		b += 8 * (4 * N * D + 2 * N * N + N + 4 * N * N + 7 * N) + 4 * 8 * N;
	return b;
}

int pca_fit(const float *X, long n, long d, int k, ss_pca *out, ss_err *e)
{
	memset(out, 0, sizeof *out);
	if (n < 2)
		return ss_err_set(e, "PCA needs at least 2 rows, got %ld", n);
	if (k < 1 || k > d || k > n)
		return ss_err_set(e, "PCA: %d components asked of %ld x %ld data", k, n, d);
	double *mean = ss_calloc(d, sizeof *mean, "PCA mean", e);
	if (!mean)
		return -1;
	for (long i = 0; i < n; i++) {
		const float *x = X + (size_t)i * d;
		for (long j = 0; j < d; j++) {
			if (!isfinite(x[j])) {
				free(mean);
				return ss_err_set(e, "row %ld: non-finite value in column %ld", i + 1, j + 1);
			}
			mean[j] += x[j];
		}
	}
	for (long j = 0; j < d; j++)
		mean[j] /= (double)n;

	double *comp = ss_malloc((size_t)k * d, sizeof *comp, "PCA components", e);
	double *var = ss_malloc(k, sizeof *var, "PCA variances", e);
	double total = 0;
	int rc = -1;
	double *C = NULL, *A = NULL, *w = NULL, *Z = NULL, *S = NULL, *VT = NULL, *U = NULL;
	if (!comp || !var)
		goto done;
	if (n >= d) {
		C = ss_calloc((size_t)d * d, sizeof *C, "PCA covariance", e);
		A = ss_malloc((size_t)STRIP * d, sizeof *A, "PCA strip", e);
		w = ss_malloc(d, sizeof *w, "PCA eigenvalues", e);
		Z = ss_malloc((size_t)d * k, sizeof *Z, "PCA eigenvectors", e);
		if (!C || !A || !w || !Z)
			goto done;
		for (long r0 = 0; r0 < n; r0 += STRIP) {
			long m = n - r0 < STRIP ? n - r0 : STRIP;
			for (long i = 0; i < m; i++)
				for (long j = 0; j < d; j++)
					A[(size_t)i * d + j] = X[(size_t)(r0 + i) * d + j] - mean[j];
			/* upper triangle of C += A^T A */
			cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)d, (int)m, 1.0, A,
			            (int)d, 1.0, C, (int)d);
		}
		for (size_t j = 0; j < (size_t)d * d; j++)
			C[j] /= (double)(n - 1);
		for (long j = 0; j < d; j++)
			total += C[(size_t)j * d + j];
		lapack_int mfound = 0;
		lapack_int *isuppz = ss_malloc(2 * (size_t)k, sizeof *isuppz, "PCA support", e);
		if (!isuppz)
			goto done;
		lapack_int info = LAPACKE_dsyevr(LAPACK_ROW_MAJOR, 'V', 'I', 'U', (lapack_int)d, C,
		                                 (lapack_int)d, 0, 0, (lapack_int)(d - k + 1),
		                                 (lapack_int)d, 0.0, &mfound, w, Z, (lapack_int)k,
		                                 isuppz);
		free(isuppz);
		if (info != 0 || mfound != k) {
			ss_err_set(e, "PCA: LAPACKE_dsyevr failed (info %d)", (int)info);
			goto done;
		}
		/* ascending eigenvalues: column k-1 is the largest */
		for (int i = 0; i < k; i++) {
			int c = k - 1 - i;
			var[i] = w[c] > 0 ? w[c] : 0;
			for (long j = 0; j < d; j++)
				comp[(size_t)i * d + j] = Z[(size_t)j * k + c];
		}
	} else {
		A = ss_malloc((size_t)n * d, sizeof *A, "PCA centred data", e);
		S = ss_malloc(n, sizeof *S, "PCA singular values", e);
		VT = ss_malloc((size_t)n * d, sizeof *VT, "PCA right vectors", e);
		U = ss_malloc((size_t)n * n, sizeof *U, "PCA left vectors", e);
		if (!A || !S || !VT || !U)
			goto done;
		for (long i = 0; i < n; i++)
			for (long j = 0; j < d; j++) {
				double v = X[(size_t)i * d + j] - mean[j];
				A[(size_t)i * d + j] = v;
				total += v * v;
			}
		total /= (double)(n - 1);
		lapack_int info = LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'S', (lapack_int)n, (lapack_int)d, A,
		                                 (lapack_int)d, S, U, (lapack_int)n, VT,
		                                 (lapack_int)d);
		if (info != 0) {
			ss_err_set(e, "PCA: LAPACKE_dgesdd failed (info %d)", (int)info);
			goto done;
		}
		for (int i = 0; i < k; i++) {
			var[i] = S[i] * S[i] / (double)(n - 1);
			memcpy(comp + (size_t)i * d, VT + (size_t)i * d, (size_t)d * sizeof *comp);
		}
	}
	fix_signs(comp, k, d);
	out->d = d;
	out->k = k;
	out->n = n;
	out->mean = mean;
	out->comp = comp;
	out->var = var;
	out->total_var = total;
	mean = comp = var = NULL;
	rc = 0;
done:
	free(mean);
	free(comp);
	free(var);
	free(C);
	free(A);
	free(w);
	free(Z);
	free(S);
	free(VT);
	free(U);
	return rc;
}

static int project(const ss_pca *p, const float *X, long n, float *Yf, double *Yd, ss_err *e)
{
	long d = p->d;
	int k = p->k;
	double *A = ss_malloc((size_t)STRIP * d, sizeof *A, "PCA strip", e);
	double *B = ss_malloc((size_t)STRIP * k, sizeof *B, "PCA projection strip", e);
	if (!A || !B) {
		free(A);
		free(B);
		return -1;
	}
	for (long r0 = 0; r0 < n; r0 += STRIP) {
		long m = n - r0 < STRIP ? n - r0 : STRIP;
		for (long i = 0; i < m; i++)
			for (long j = 0; j < d; j++)
				A[(size_t)i * d + j] = X[(size_t)(r0 + i) * d + j] - p->mean[j];
		cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, k, (int)d, 1.0, A,
		            (int)d, p->comp, (int)d, 0.0, B, k);
		for (size_t i = 0; i < (size_t)m * k; i++) {
			if (Yf)
				Yf[(size_t)r0 * k + i] = (float)B[i];
			else
				Yd[(size_t)r0 * k + i] = B[i];
		}
	}
	free(A);
	free(B);
	return 0;
}

int pca_project(const ss_pca *p, const float *X, long n, float *Y, ss_err *e)
{
	return project(p, X, n, Y, NULL, e);
}

int pca_project_f64(const ss_pca *p, const float *X, long n, double *Y, ss_err *e)
{
	return project(p, X, n, NULL, Y, e);
}
