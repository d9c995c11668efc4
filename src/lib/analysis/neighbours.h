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

/* One block of a scan: query rows [r0, r0 + rows) against the n rows. */
typedef struct ss_dscan {
	long n, r0;
	const float *f;   /* f32 scan: [rows x n] -2 x_i.x_j; NULL in an f64 scan */
	const double *g;  /* f64 scan: the same in double */
	const double *sq; /* [n] |x_j|^2 */
} ss_dscan;

/* |x_i - x_j|^2 as the scan sees it: -2 x_i.x_j + |x_i|^2 + |x_j|^2 (may be
 * slightly negative or inexact for near points; callers that need exact
 * values recompute them). */
static inline double ss_dscan_d2(const ss_dscan *s, long i, long j)
{
	size_t o = (size_t)(i - s->r0) * s->n + j;
	return (s->f ? (double)s->f[o] : s->g[o]) + s->sq[i] + s->sq[j];
}

/* fn(ctx, s, lo, hi, tid) handles query rows [lo, hi) of block s (absolute
 * row indices), on thread tid; it writes only what belongs to its rows. */
typedef void (*ss_dscan_fn)(void *ctx, const ss_dscan *s, long lo, long hi, int tid);

/* Scan X (n x d) in blocks of `block` query rows; f64 selects the double
 * gemm.  Rows of a block are shared among `threads` threads. */
int ss_dist_scan(const float *X, long n, long d, int f64, long block, int threads, ss_dscan_fn fn,
                 void *ctx, ss_err *e);

/* Vantage-point tree (vantage points drawn from seed); queries in parallel. */
int knn_vptree(const float *X, long n, long d, int k, uint64_t seed, int threads, int32_t *idx,
               float *dist2, ss_err *e);

/* The f32 scan: the k smallest scanned distances of each row kept, their
 * distances then recomputed exactly (double) and sorted by (distance,
 * index). */
int knn_scan(const float *X, long n, long d, int k, int threads, int32_t *idx, float *dist2,
             ss_err *e);

#endif
