/* tsne.h - t-SNE (van der Maaten & Hinton 2008; Barnes-Hut: van der Maaten
 * 2014), with the optimisation schedule of van der Maaten's bhtsne and
 * scikit-learn.
 *
 * Input affinities.  For each point i, the k = min(N-1, floor(3u+1))
 * nearest neighbours (u = perplexity) under squared Euclidean distance,
 * found with a vantage-point tree (exact search), get conditional
 * probabilities p(j|i) = exp(-beta_i d2_ij) / sum, with beta_i found by
 * bisection so that exp(H_i) = u (H in nats, |H_i - log u| <= 1e-5).  In the
 * exact mode every other point is a neighbour.  P = (Pc + Pc^T) / sum,
 * stored as a symmetric CSR matrix of f32 values.
 *
 * Gradient.  With w_ij = 1 / (1 + |y_i - y_j|^2) and Z = sum_{i!=j} w_ij:
 *   dC/dy_i = 4 [ a * sum_j p_ij w_ij (y_i - y_j) - sum_j w_ij^2 (y_i - y_j) / Z ]
 * (a = exaggeration).  The repulsive sums come from a quadtree over the
 * embedding (Morton-sorted, buckets of up to 8 points per leaf): a cell of
 * width w whose centre of mass is at squared distance d2 from y_i stands
 * for its points when w^2 < theta^2 d2 (the full-width criterion of
 * scikit-learn); theta = 0 sums over all pairs exactly.
 *
 * Optimisation.  Gradient descent with momentum 0.5 during the first
 * exag_iter iterations (exaggeration 12), then 0.8; per-coordinate gains
 * (+0.2 when the gradient changes sign against the update, *0.8 otherwise,
 * at least 0.01); learning rate max(N / exaggeration / 4, 50) unless given
 * (scikit-learn's 'auto'); the embedding is re-centred every iteration.
 *
 * Determinism: every per-point sum is computed in a fixed order by one
 * thread and reductions run in index order afterwards, so the result
 * depends on the seed but not on the number of threads.
 */
#ifndef SS_TSNE_H
#define SS_TSNE_H

#include <stdint.h>
#include "util/err.h"

/* Sparse symmetric matrix, rows sorted by column. */
typedef struct ss_csr {
	long n;
	long *rowptr;  /* [n + 1] */
	int32_t *col;  /* [nnz] */
	float *val;    /* [nnz] */
} ss_csr;
void csr_free(ss_csr *m);

enum { SS_TSNE_INIT_PCA = 0, SS_TSNE_INIT_RANDOM = 1 };
enum { SS_TSNE_KNN_AUTO = 0, SS_TSNE_KNN_VPTREE = 1, SS_TSNE_KNN_BLAS = 2 };

typedef struct ss_tsne_params {
	double perplexity;     /* 30 */
	double theta;          /* 0.5; 0 = exact repulsion */
	int exact;             /* 1: dense affinities and exact gradient (small N) */
	long max_iter;         /* 1000 */
	long exag_iter;        /* 250 */
	double exaggeration;   /* 12 */
	double learning_rate;  /* 0 = auto: max(N / exaggeration / 4, 50) */
	double momentum_early; /* 0.5 */
	double momentum_late;  /* 0.8 */
	int pca_dims;          /* reduce to this many PCA dimensions first (50; 0 = off) */
	int init;              /* SS_TSNE_INIT_PCA (scaled to std 1e-4) or RANDOM */
	uint64_t seed;         /* 1 */
	int threads;           /* 1 */
	long kl_exact_max;     /* exact KL up to this N (10000), BH estimate above */
	int knn_method;        /* SS_TSNE_KNN_AUTO (BLAS scan above 10 dims), _VPTREE, _BLAS */
	/* optional progress callback: phase name, done / total */
	void (*progress)(void *ctx, const char *phase, double done, double total);
	void *progress_ctx;
} ss_tsne_params;

void tsne_params_default(ss_tsne_params *p);

typedef struct ss_tsne_info {
	double kl;           /* final KL(P || Q) */
	int kl_exact;        /* 1: Z summed exactly; 0: Barnes-Hut estimate of Z */
	long iters;
	double learning_rate;
	int dims;            /* input dimension after PCA */
	double pca_ratio;    /* variance kept by the PCA (1 when none) */
	double perp_min, perp_max; /* calibrated perplexities */
	double t_pca, t_knn, t_affinity, t_optimise, t_kl; /* seconds */
} ss_tsne_info;

/* k nearest neighbours of every row of X (n x d) under Euclidean distance,
 * excluding the row itself, ascending; dist2 receives squared distances.
 * Vantage-point tree (vantage points drawn from seed); queries in parallel. */
int tsne_knn(const float *X, long n, long d, int k, uint64_t seed, int threads, int32_t *idx,
             float *dist2, ss_err *e);
/* The same result by an exhaustive scan: blocks of squared distances
 * |x|^2 + |y|^2 - 2 x.y from cblas_sgemm, the k smallest per row kept, their
 * distances then recomputed exactly (double) and sorted by (distance,
 * index).  In many dimensions a vantage-point tree visits most points
 * anyway; this does the same work at BLAS speed. */
int tsne_knn_blas(const float *X, long n, long d, int k, int threads, int32_t *idx, float *dist2,
                  ss_err *e);
/* Conditional probabilities P[i*k + m] for the k neighbours of row i with
 * squared distances dist2[i*k + m]; perp (may be NULL) gets exp(H_i). */
int tsne_calibrate(const float *dist2, long n, int k, double perplexity, int threads,
                   float *P, double *perp, ss_err *e);
/* P = (Pc + Pc^T) / sum into out. */
int tsne_symmetrize(long n, int k, const int32_t *idx, const float *Pc, ss_csr *out, ss_err *e);
/* The whole affinity computation (kNN or dense, calibration, symmetrisation). */
int tsne_affinities(const float *X, long n, long d, const ss_tsne_params *p, ss_csr *P,
                    ss_tsne_info *info, ss_err *e);

/* Gradient at Y (n x 2) into grad (n x 2); *Z (may be NULL) gets the
 * (estimated) normaliser.  theta = 0: exact. */
int tsne_gradient(const ss_csr *P, const float *Y, long n, double theta, double exag, int threads,
                  float *grad, double *Z, ss_err *e);
/* KL(P || Q): with exact Z (O(N^2)) when Zest <= 0, else with Zest. */
double tsne_kl(const ss_csr *P, const float *Y, long n, int threads, double Zest);

/* Optimise Y (n x 2, holding the initial layout) against P. */
int tsne_optimise(const ss_csr *P, const ss_tsne_params *p, float *Y, ss_tsne_info *info,
                  ss_err *e);

/* Everything: checks (finite rows; N > 3 * perplexity), PCA, affinities,
 * initialisation, optimisation, KL.  Y is n x 2. */
int tsne_run(const float *X, long n, long d, const ss_tsne_params *p, float *Y,
             ss_tsne_info *info, ss_err *e);

#endif
