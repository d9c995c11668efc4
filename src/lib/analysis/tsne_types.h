/* tsne_types.h - the types t-SNE's parts share (no code of its own): the
 * symmetric affinity matrix, the parameters and the run's report.  Include
 * tsne.h, which includes this. */
#ifndef SS_TSNE_TYPES_H
#define SS_TSNE_TYPES_H

#include <stdint.h>

/* Sparse symmetric matrix, rows sorted by column. */
typedef struct ss_csr {
	long n;
	long *rowptr;  /* [n + 1] */
	int32_t *col;  /* [nnz] */
	float *val;    /* [nnz] */
} ss_csr;
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
	int pca_dims;          /* PCA dimensions that guide the neighbour search (50; 0 = off) */
	int init;              /* SS_TSNE_INIT_PCA (scaled to std 1e-4) or RANDOM */
	uint64_t seed;         /* 1 */
	int threads;           /* 1 */
	long kl_exact_max;     /* exact KL up to this N (10000), BH estimate above */
	int knn_method;        /* SS_TSNE_KNN_AUTO (guided by the PCA, else BLAS scan above
	                        * 10 dims), _VPTREE, _BLAS (plain searches of the data) */
	/* optional progress callback: phase name, done / total */
	void (*progress)(void *ctx, const char *phase, double done, double total);
	void *progress_ctx;
} ss_tsne_params;

typedef struct ss_tsne_info {
	double kl;           /* final KL(P || Q) */
	int kl_exact;        /* 1: Z summed exactly; 0: Barnes-Hut estimate of Z */
	long iters;
	double learning_rate;
	int dims;            /* dimension of the affinities: the input's */
	double pca_ratio;    /* variance kept by the guiding PCA (1 when none) */
	long knn_rescanned;  /* rows the guided search scanned again in full */
	long knn_measured;   /* exact distances the guided search measured */
	double perp_min, perp_max; /* calibrated perplexities */
	long n_uncalibrated; /* points whose perplexity missed the target by more
	                        than 0.1% (equidistant neighbours: the uniform
	                        distribution's perplexity is k, never less) */
	double t_pca, t_knn, t_affinity, t_optimise, t_kl; /* seconds */
} ss_tsne_info;

#endif
