/* tsne.c - t-SNE's parameters and the whole run (checks, PCA,
 * affinities, initialisation, optimisation, KL); see tsne.h.  The parts:
 * neighbours in vptree.c and nbscan.c, affinities in affinity.c, the
 * quadtree in quadtree.c, the optimiser in tsne_opt.c. */
#include "analysis/tsne.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/pca.h"
#include "util/progress.h"
#include "util/rng.h"

void tsne_params_default(ss_tsne_params *p)
{
	memset(p, 0, sizeof *p);
	p->perplexity = 30;
	p->theta = 0.5;
	p->max_iter = 1000;
	p->exag_iter = 250;
	p->exaggeration = 12;
	p->momentum_early = 0.5;
	p->momentum_late = 0.8;
	p->pca_dims = 50;
	p->init = SS_TSNE_INIT_PCA;
	p->seed = 1;
	p->threads = 1;
	p->kl_exact_max = 10000;
}

/* ------------------------------------------------------------------ run */

int tsne_run(const float *X, long n, long d, const ss_tsne_params *p, float *Y,
             ss_tsne_info *info, ss_err *e)
{
	ss_tsne_info dummy;
	if (!info)
		info = &dummy;
	memset(info, 0, sizeof *info);
	if (!(p->perplexity > 0))
		return ss_err_set(e, "perplexity %g: must be positive", p->perplexity);
	if ((double)n <= 3 * p->perplexity)
		return ss_err_set(e, "%ld points: too few for perplexity %g (need more than %g)", n,
		                  p->perplexity, 3 * p->perplexity);
	for (long i = 0; i < n; i++)
		for (long j = 0; j < d; j++)
			if (!isfinite(X[(size_t)i * d + j]))
				return ss_err_set(e, "row %ld: non-finite value in column %ld", i + 1, j + 1);
	double t0 = ss_now();
	int rc = -1;
	float *R = NULL;
	ss_pca pca = {0};
	ss_csr P = {0};
	int npc = p->pca_dims > 0 && p->pca_dims < d ? p->pca_dims : 0;
	if (npc > n)
		npc = (int)n;
	/* the PCA guides the neighbour search and provides the initial layout */
	int kfit = npc ? npc : (p->init == SS_TSNE_INIT_PCA ? 2 : 0);
	if (kfit > d)
		kfit = (int)d;
	info->pca_ratio = 1;
	if (kfit) {
		if (pca_fit(X, n, d, kfit, &pca, e) < 0)
			goto done;
		R = ss_malloc((size_t)n * kfit, sizeof *R, "PCA projection", e);
		if (!R || pca_project(&pca, X, n, R, e) < 0)
			goto done;
		if (npc) {
			double s = 0;
			for (int i = 0; i < npc; i++)
				s += pca_ratio(&pca, i);
			info->pca_ratio = s;
		}
	}
	info->dims = (int)d;
	info->t_pca = ss_now() - t0;
	/* affinities of the data as given; the PCA scores only guide the search */
	if (tsne_affinities_guided(X, n, d, npc ? R : NULL, npc, p, &P, info, e) < 0)
		goto done;
	if (p->init == SS_TSNE_INIT_PCA && kfit >= 2) {
		/* scikit-learn: the first two components, scaled to std 1e-4 in x */
		double m = 0, v = 0;
		for (long i = 0; i < n; i++)
			m += R[(size_t)i * kfit];
		m /= n;
		for (long i = 0; i < n; i++) {
			double t = R[(size_t)i * kfit] - m;
			v += t * t;
		}
		double sd = sqrt(v / n);
		double sc = sd > 0 ? 1e-4 / sd : 1;
		for (long i = 0; i < n; i++) {
			Y[2 * i] = (float)(R[(size_t)i * kfit] * sc);
			Y[2 * i + 1] = (float)(R[(size_t)i * kfit + 1] * sc);
		}
	} else {
		uint64_t s = p->seed;
		for (long i = 0; i < 2 * n; i++) {
			/* u1 from [0, 1) here, not (0, 1) as in ss_rng_gauss: each seed keeps its layout */
			double u1 = ss_rng_unif(&s), u2 = ss_rng_unif(&s);
			Y[i] = (float)(1e-4 * ss_box_muller(u1, u2));
		}
	}
	double t1 = ss_now();
	if (tsne_optimise(&P, p, Y, info, e) < 0)
		goto done;
	double t2 = ss_now();
	info->t_optimise = t2 - t1;
	if (n <= p->kl_exact_max || p->exact) {
		info->kl = tsne_kl(&P, Y, n, p->threads, 0);
		info->kl_exact = 1;
	} else {
		double Z;
		float *g = ss_malloc(2 * (size_t)n, sizeof *g, "gradient", e);
		if (!g || tsne_gradient(&P, Y, n, p->theta, 1, p->threads, g, &Z, e) < 0) {
			free(g);
			goto done;
		}
		free(g);
		info->kl = tsne_kl(&P, Y, n, p->threads, Z);
	}
	info->t_kl = ss_now() - t2;
	rc = 0;
done:
	free(R);
	pca_free(&pca);
	csr_free(&P);
	return rc;
}
