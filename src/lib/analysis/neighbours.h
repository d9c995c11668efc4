/* neighbours.h - the library's one neighbour search, and the exhaustive
 * distance scan under it.
 *
 * Distance scan.  Blocks of query rows against all n rows of X: the block
 * of -2 x_i.x_j comes from one gemm (cblas_sgemm on X, or cblas_dgemm on X
 * converted to double), the squared norms |x_j|^2 are summed in double, and
 * the caller's function sees every row of the block through ss_dscan_d2().
 * k nearest neighbours (knn_scan below) and the separability measures
 * (knn.h: the k-NN vote and the silhouette) are both such scans.
 *
 * k nearest neighbours of every row under Euclidean distance, excluding the
 * row itself, ascending; dist2 receives squared distances.  Two methods,
 * the same answer: a vantage-point tree (knn_vptree; exact search, for few
 * dimensions) and the scan (knn_scan; in many dimensions a tree visits most
 * points anyway, and the scan does that work at BLAS speed).
 */
#ifndef SS_NEIGHBOURS_H
#define SS_NEIGHBOURS_H

#include <stddef.h>
#include <stdint.h>
#include "util/err.h"

/* One block of a scan: queries [r0, r0 + rows) against the n rows. */
typedef struct ss_dscan {
	long n, r0;
	const int32_t *rows; /* query q is row rows[q] of X; NULL: query q is row q */
	const float *f;      /* f32 scan: [rows x n] -2 x_i.x_j; NULL in an f64 scan */
	const double *g;     /* f64 scan: the same in double */
	const double *sq;    /* [n] |x_j|^2 */
} ss_dscan;

/* The row of X that query q is. */
static inline long ss_dscan_row(const ss_dscan *s, long q)
{
	return s->rows ? s->rows[q] : q;
}

/* |x_i - x_j|^2 for query q (row i) as the scan sees it: -2 x_i.x_j +
 * |x_i|^2 + |x_j|^2 (may be slightly negative or inexact for near points;
 * callers that need exact values recompute them). */
static inline double ss_dscan_d2(const ss_dscan *s, long q, long j)
{
	size_t o = (size_t)(q - s->r0) * s->n + j;
	return (s->f ? (double)s->f[o] : s->g[o]) + s->sq[ss_dscan_row(s, q)] + s->sq[j];
}

/* fn(ctx, s, lo, hi, tid) handles queries [lo, hi) of block s (positions
 * in the query list), on thread tid; it writes only what belongs to them. */
typedef void (*ss_dscan_fn)(void *ctx, const ss_dscan *s, long lo, long hi, int tid);

/* Scan the queries (rows[0..m) of X, or every row when rows is NULL)
 * against all n rows of X (n x d), in blocks of `block` queries; f64
 * selects the double gemm.  Queries of a block are shared among `threads`
 * threads. */
int ss_dist_scan(const float *X, long n, long d, const int32_t *rows, long m, int f64, long block,
                 int threads, ss_dscan_fn fn, void *ctx, ss_err *e);

/* Vantage-point tree (vantage points drawn from seed); queries in parallel. */
int knn_vptree(const float *X, long n, long d, int k, uint64_t seed, int threads, int32_t *idx,
               float *dist2, ss_err *e);

/* The f32 scan: the k smallest scanned distances of each row kept, their
 * distances then recomputed exactly (double) and sorted by (distance,
 * index). */
int knn_scan(const float *X, long n, long d, int k, int threads, int32_t *idx, float *dist2,
             ss_err *e);

/* The same neighbours found through Z (n x p), a projection that never
 * lengthens a distance (|z_i - z_j| <= |x_i - x_j|: the PCA scores of the
 * rows, an orthogonal projection of the centred data).  The f32 scan of Z
 * proposes each row's k nearest there; their exact distances in X give an
 * upper bound U on the k-th; every other row whose Z distance could be
 * below U (a margin of 1e-4 U + 1e-5 (|z_i|^2 + |z_j|^2) for rounding) is
 * then measured in X, nearest in Z first, U shrinking as it goes.  So the
 * answer is that of an exact search in X, at the cost of a scan in p
 * dimensions plus the exact distances measured.  A row with more than
 * max(4k, n / 8) such rows (Z keeps its neighbourhood poorly) is searched
 * again by knn_scan's f32 scan of X.  *nfull (may be NULL) gets the number
 * of such rows, *nexact the exact distances measured. */
int knn_guided(const float *X, long d, const float *Z, long p, long n, int k, int threads,
               int32_t *idx, float *dist2, long *nfull, long *nexact, ss_err *e);

#endif
