/* levels.h - sink levels: secondary episodes grouped by (l_start, lifetime),
 * and the norm law fits (sinklevels(1)).
 *
 * Levels are the modes of the episode density on the integer grid
 * (l_start, lifetime): the density at an occupied cell is the count of
 * episodes around it weighted by a Gaussian of width tol (truncated at 2 tol
 * in each coordinate); each occupied cell climbs to the densest occupied
 * cell within 2 tol (Chebyshev) until none is denser, and cells that reach
 * the same peak form one group.  Groups smaller than max(min_count,
 * min_share * n) are noise, not levels.  The number of levels is therefore
 * found from the data; levels closer than about 2 tol merge.
 */
#ifndef SS_LEVELS_H
#define SS_LEVELS_H

#include <stddef.h>
#include "util/err.h"

typedef struct ss_level_params {
	double tol;      /* kernel width and climbing radius / 2, in layers (1) */
	long min_count;  /* smallest level (3) */
	double min_share;/* smallest level as a share of all episodes (0.01) */
} ss_level_params;

typedef struct ss_level {
	long l_start, lifetime;   /* typical: the most frequent cell of the level */
	long count;
	double share;             /* count / n */
	double mlp_norm_median;   /* median of mlp_norm_start over the level */
	double score_mean;        /* mean of score over the level */
	long s_min, s_max, t_min, t_max; /* ranges of l_start and lifetime */
} ss_level;

void levels_params_default(ss_level_params *p);

/* Group n episodes.  assign[i] receives the level index (0-based, levels
 * ordered by l_start then lifetime) or -1 for noise; *lv is malloc'd.
 * mlp and score (n each) feed the per-level statistics. */
int levels_find(const long *l_start, const long *lifetime, const double *mlp,
                const double *score, size_t n, const ss_level_params *p, long *assign,
                ss_level **lv, size_t *nlv, ss_err *e);

/* Least squares y = slope x + intercept, Pearson r.  -1 when n < 3 or x has
 * no spread (r = 0 when y has none). */
int ss_linfit(const double *x, const double *y, size_t n, double *slope, double *intercept,
              double *r);

/* Median of n doubles (reorders x). */
double ss_median_f64(double *x, size_t n);

#endif
