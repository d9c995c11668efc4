/* tsne.h - t-SNE (van der Maaten & Hinton 2008; Barnes-Hut: van der Maaten
 * 2014), with the optimisation schedule of van der Maaten's bhtsne and
 * scikit-learn.
 *
 * Input affinities, always those of the data as given.  For each point i,
 * the k = min(N-1, floor(3u+1)) nearest neighbours (u = perplexity) under
 * squared Euclidean distance, found exactly by neighbours.h (guided by the
 * first pca_dims principal components when fewer than the input's, else a
 * vantage-point tree up to 10 dimensions or the BLAS scan), get conditional
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

#include "analysis/affinity.h"
#include "analysis/tsne_opt.h"
#include "analysis/tsne_types.h"
#include "util/err.h"

void tsne_params_default(ss_tsne_params *p);

/* Everything: checks (finite rows; N > 3 * perplexity), PCA, affinities,
 * initialisation, optimisation, KL.  Y is n x 2. */
int tsne_run(const float *X, long n, long d, const ss_tsne_params *p, float *Y,
             ss_tsne_info *info, ss_err *e);

#endif
