/* pca.h - principal component analysis in double precision (LAPACKE).
 *
 * pca_fit centres the rows of X (n x d, f32, row-major), and finds the top k
 * eigenvectors of the sample covariance C = Xc^T Xc / (n - 1):
 *   n >= d: C is accumulated in double by strips (cblas_dsyrk) and its top k
 *           eigenpairs come from LAPACKE_dsyevr (memory d*d doubles);
 *   n <  d: the thin SVD of Xc (LAPACKE_dgesdd, n*d doubles) gives them.
 * Components are unit rows of comp; signs are fixed so that the entry of
 * largest magnitude of each component is positive (deterministic output).
 * var[i] is the variance along component i (eigenvalue, denominator n - 1),
 * total_var the trace of C, so var[i] / total_var is the explained ratio.
 * Used by tsne (reduction to 50 dimensions, PCA initialisation) and
 * pcaprobe (subspaces of MLP inputs).
 */
#ifndef SS_PCA_H
#define SS_PCA_H

#include "util/err.h"

typedef struct ss_pca {
	long d;           /* input dimension */
	int k;            /* components kept */
	long n;           /* rows fitted */
	double *mean;     /* [d] */
	double *comp;     /* [k * d] row i = component i, unit norm */
	double *var;      /* [k] variance along each component, descending */
	double total_var; /* sum of the variances of all d coordinates */
} ss_pca;

/* Fit k components (1 <= k <= min(n, d)); n >= 2.  Non-finite values in X
 * are an error ("row R: non-finite value in column C"). */
int pca_fit(const float *X, long n, long d, int k, ss_pca *out, ss_err *e);
/* Y[n * k] = (X - mean) comp^T, accumulated in double, stored in f32. */
int pca_project(const ss_pca *p, const float *X, long n, float *Y, ss_err *e);
/* The same into double output. */
int pca_project_f64(const ss_pca *p, const float *X, long n, double *Y, ss_err *e);
/* Explained variance ratio of component i. */
double pca_ratio(const ss_pca *p, int i);
void pca_free(ss_pca *p);

/* Bytes pca_fit(n x d, k) allocates at its peak: the mean and the
 * components; for n >= d the covariance, a strip of rows, LAPACKE's
 * row-major copies of it and dsyevr's workspace; else the centred data,
 * the SVD's factors, their copies and dgesdd's workspace. */
double pca_memory(long n, long d, int k);

#endif
