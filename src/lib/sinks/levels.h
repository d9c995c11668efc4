/* levels.h - sink levels: secondary episodes grouped by (l_start, lifetime)
 * (sinklevels(1)); the norm law fits are in normlaw.h.
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
#include <stdio.h>

#include "util/err.h"
#include "io/episodes.h"

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
/* tol > 0, min_count >= 1, min_share in [0, 1]; else a usage error. */
int levels_params_check(const ss_level_params *p, ss_err *e);

/* Group n episodes.  assign[i] receives the level index (0-based, levels
 * ordered by l_start then lifetime) or -1 for noise; *lv is malloc'd.
 * mlp and score (n each) feed the per-level statistics. */
int levels_find(const long *l_start, const long *lifetime, const double *mlp,
                const double *score, size_t n, const ss_level_params *p, long *assign,
                ss_level **lv, size_t *nlv, ss_err *e);

/* Level membership, the one place it is decided: levels_find over the
 * secondary rows of t, then t->ep[i].level = the row's level (1-based, in
 * the order of *lv) or 0 (a primary row, or a secondary one in no level).
 * t needs the columns kind, l_start, lifetime, mlp_norm_start and score. */
int levels_assign(ss_eptab *t, const ss_level_params *p, ss_level **lv, size_t *nlv, ss_err *e);

/* The level table (sinklevels(1)): header, then per level
 *   level l_start lifetime count share mlp_norm_median score_mean
 *   l_start_min l_start_max lifetime_min lifetime_max tokens
 * tokens: the `top` most frequent texts of the level's rows of t (assigned
 * by levels_assign), '"text"xCOUNT' by count then text, space-separated. */
int levels_write_tsv(FILE *f, const ss_level *lv, size_t nlv, const ss_eptab *t, long top,
                     ss_err *e);

/* Median of n doubles (reorders x). */
double ss_median_f64(double *x, size_t n);

#endif
