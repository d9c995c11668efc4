/* tsne_opt.h - t-SNE's optimiser (formulas in tsne.h): the gradient with
 * Barnes-Hut or exact repulsion, the KL divergence, the descent. */
#ifndef SS_TSNE_OPT_H
#define SS_TSNE_OPT_H

#include "analysis/tsne_types.h"
#include "util/err.h"

/* Gradient at Y (n x 2) into grad (n x 2); *Z (may be NULL) gets the
 * (estimated) normaliser.  theta = 0: exact. */
int tsne_gradient(const ss_csr *P, const float *Y, long n, double theta, double exag, int threads,
                  float *grad, double *Z, ss_err *e);
/* KL(P || Q): with exact Z (O(N^2)) when Zest <= 0, else with Zest. */
double tsne_kl(const ss_csr *P, const float *Y, long n, int threads, double Zest);

/* Optimise Y (n x 2, holding the initial layout) against P. */
int tsne_optimise(const ss_csr *P, const ss_tsne_params *p, float *Y, ss_tsne_info *info,
                  ss_err *e);

#endif
