/* normlaw.h - the norm law (DESIGN.md section 1): the MLP-output norm at
 * l_start, ||m[l_start][j]|| (mlp_norm_start), sets both the sink-score and
 * the lifetime of a secondary sink; the paper reports a log-linear relation.
 * Fitted by least squares, with Pearson's r:
 *     score_start = slope ln(mlp_norm_start) + intercept
 *     lifetime    = slope ln(mlp_norm_start) + intercept
 * over the secondary episodes with mlp_norm_start > 0: all of them, or
 * those of one level (sinklevels(1) --fit).
 */
#ifndef SS_NORMLAW_H
#define SS_NORMLAW_H

#include <stddef.h>
#include <stdio.h>

#include "util/err.h"
#include "io/episodes.h"

typedef struct ss_fit {
	int ok;                 /* 0: fewer than 3 points, or no spread in x */
	double slope, intercept, r;
	size_t n;               /* points fitted */
} ss_fit;

typedef struct ss_normlaw {
	ss_fit score_start, lifetime;
} ss_normlaw;

/* Least squares y = slope x + intercept, Pearson r.  -1 when n < 3 or x has
 * no spread relative to its size (r = 0 when y has none). */
int ss_linfit(const double *x, const double *y, size_t n, double *slope, double *intercept,
              double *r);

/* Both fits over the secondary episodes of ep (n of them) with level ==
 * level (level 0: every secondary episode, whatever its level). */
int normlaw_fit(const ss_episode *ep, size_t n, long level, ss_normlaw *out, ss_err *e);

/* The fit table: header "scope y slope intercept r n", then scope "all"
 * and "level1" .. "levelN" (nlv levels), y score_start then lifetime; a
 * fit that is not ok is left out. */
int normlaw_write_tsv(FILE *f, const ss_episode *ep, size_t n, size_t nlv, ss_err *e);

#endif
