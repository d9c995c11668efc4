/* affinity.h - t-SNE's input affinities P (formulas in tsne.h): the
 * neighbours of each point (neighbours.h), the perplexity calibration of
 * the conditional probabilities, the symmetrisation into a CSR matrix. */
#ifndef SS_AFFINITY_H
#define SS_AFFINITY_H

#include <stdint.h>
#include "analysis/tsne_types.h"
#include "util/err.h"

void csr_free(ss_csr *m);

/* Conditional probabilities P[i*k + m] for the k neighbours of row i with
 * squared distances dist2[i*k + m]; perp (may be NULL) gets exp(H_i). */
int tsne_calibrate(const float *dist2, long n, int k, double perplexity, int threads,
                   float *P, double *perp, ss_err *e);
/* P = (Pc + Pc^T) / sum into out. */
int tsne_symmetrize(long n, int k, const int32_t *idx, const float *Pc, ss_csr *out, ss_err *e);
/* The whole affinity computation (kNN or dense, calibration, symmetrisation). */
int tsne_affinities(const float *X, long n, long d, const ss_tsne_params *p, ss_csr *P,
                    ss_tsne_info *info, ss_err *e);
/* The same, the neighbours of X found through Z (n x pz, X's PCA scores;
 * knn_guided of neighbours.h) when Z is given and p->knn_method is auto:
 * the same neighbours and distances, those of X. */
int tsne_affinities_guided(const float *X, long n, long d, const float *Z, long pz,
                           const ss_tsne_params *p, ss_csr *P, ss_tsne_info *info, ss_err *e);

#endif
