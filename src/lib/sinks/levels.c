/* levels.c - sink levels by density modes, and line fits; see levels.h. */
#include "sinks/levels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void levels_params_default(ss_level_params *p)
{
	p->tol = 1.0;
	p->min_count = 3;
	p->min_share = 0.01;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double ss_median_f64(double *x, size_t n)
{
	if (!n)
		return 0;
	qsort(x, n, sizeof *x, cmp_d);
	return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

int ss_linfit(const double *x, const double *y, size_t n, double *slope, double *intercept,
              double *r)
{
	if (n < 3)
		return -1;
	double mx = 0, my = 0;
	for (size_t i = 0; i < n; i++) {
		mx += x[i];
		my += y[i];
	}
	mx /= (double)n;
	my /= (double)n;
	double sxx = 0, syy = 0, sxy = 0;
	for (size_t i = 0; i < n; i++) {
		double dx = x[i] - mx, dy = y[i] - my;
		sxx += dx * dx;
		syy += dy * dy;
		sxy += dx * dy;
	}
	/* no spread in x, relative to its size (f32 inputs): no line */
	if (!(sxx > 1e-10 * (double)n * (mx * mx + 1e-300)) || !(sxx > 0))
		return -1;
	*slope = sxy / sxx;
	*intercept = my - *slope * mx;
	*r = syy > 1e-20 * (double)n * (my * my + 1e-300) ? sxy / sqrt(sxx * syy) : 0;
	return 0;
}

typedef struct cell {
	long s, t, count;
	double dens;
	long up;    /* index of the cell climbed to; itself at a peak */
	long group;
} cell;

static int cmp_cell(const void *a, const void *b)
{
	const cell *x = a, *y = b;
	if (x->s != y->s)
		return x->s < y->s ? -1 : 1;
	return x->t < y->t ? -1 : x->t > y->t;
}

/* Strict total order for climbing: density, then count, then the smaller
 * (l_start, lifetime). */
static int higher(const cell *a, const cell *b)
{
	if (a->dens != b->dens)
		return a->dens > b->dens;
	if (a->count != b->count)
		return a->count > b->count;
	if (a->s != b->s)
		return a->s < b->s;
	return a->t < b->t;
}

static long find_cell(const cell *c, long k, long s, long t)
{
	long lo = 0, hi = k - 1;
	while (lo <= hi) {
		long m = (lo + hi) / 2;
		if (c[m].s == s && c[m].t == t)
			return m;
		if (c[m].s < s || (c[m].s == s && c[m].t < t))
			lo = m + 1;
		else
			hi = m - 1;
	}
	return -1;
}

typedef struct { long s, t; size_t g; } lvkey;
static int cmp_key(const void *a, const void *b)
{
	const lvkey *x = a, *y = b;
	if (x->s != y->s)
		return x->s < y->s ? -1 : 1;
	return x->t < y->t ? -1 : x->t > y->t;
}

int levels_find(const long *l_start, const long *lifetime, const double *mlp,
                const double *score, size_t n, const ss_level_params *p, long *assign,
                ss_level **lv, size_t *nlv, ss_err *e)
{
	*lv = NULL;
	*nlv = 0;
	if (!(p->tol > 0) || p->min_count < 1 || !(p->min_share >= 0 && p->min_share <= 1))
		return ss_err_status(e, SS_EXIT_USAGE, "tol must be > 0, min-count >= 1, min-share in [0, 1]");
	for (size_t i = 0; i < n; i++)
		assign[i] = -1;
	if (n == 0)
		return 0;
	/* occupied cells, sorted */
	cell *c = ss_malloc(n, sizeof *c, "level grid", e);
	if (!c)
		return -1;
	for (size_t i = 0; i < n; i++)
		c[i] = (cell){l_start[i], lifetime[i], 1, 0, 0, -1};
	qsort(c, n, sizeof *c, cmp_cell);
	long k = 0;
	for (size_t i = 0; i < n; i++) {
		if (k && c[k - 1].s == c[i].s && c[k - 1].t == c[i].t)
			c[k - 1].count++;
		else
			c[k++] = c[i];
	}
	long R = (long)ceil(2 * p->tol);
	double inv = 1 / (2 * p->tol * p->tol);
	/* density at each occupied cell; cells are sorted by s, so the s-window is a range */
	for (long a = 0; a < k; a++) {
		double d = 0;
		for (long b = a; b >= 0 && c[a].s - c[b].s <= R; b--) {
			long dt = c[b].t - c[a].t, ds = c[a].s - c[b].s;
			if (labs(dt) <= R)
				d += (double)c[b].count * exp(-(double)(ds * ds + dt * dt) * inv);
		}
		for (long b = a + 1; b < k && c[b].s - c[a].s <= R; b++) {
			long dt = c[b].t - c[a].t, ds = c[b].s - c[a].s;
			if (labs(dt) <= R)
				d += (double)c[b].count * exp(-(double)(ds * ds + dt * dt) * inv);
		}
		c[a].dens = d;
	}
	/* one climbing step: the highest cell within R */
	for (long a = 0; a < k; a++) {
		long best = a;
		for (long b = a; b >= 0 && c[a].s - c[b].s <= R; b--)
			if (labs(c[b].t - c[a].t) <= R && higher(&c[b], &c[best]))
				best = b;
		for (long b = a + 1; b < k && c[b].s - c[a].s <= R; b++)
			if (labs(c[b].t - c[a].t) <= R && higher(&c[b], &c[best]))
				best = b;
		c[a].up = best;
	}
	/* follow to the peak (strictly increasing order, so it terminates) */
	long ngroups = 0;
	for (long a = 0; a < k; a++) {
		long q = a;
		while (c[q].up != q)
			q = c[q].up;
		if (c[q].group < 0)
			c[q].group = ngroups++;
		c[a].group = c[q].group;
	}
	/* group sizes and modes */
	long *gcount = ss_calloc((size_t)ngroups, sizeof(long), "levels", e);
	long *gmode = ss_malloc((size_t)ngroups, sizeof(long), "levels", e);
	long *gid = ss_malloc((size_t)ngroups, sizeof(long), "levels", e);
	lvkey *keys = ss_malloc((size_t)ngroups, sizeof *keys, "levels", e);
	ss_level *out = NULL;
	double *tmp = NULL;
	int rc = -1;
	if (!gcount || !gmode || !gid || !keys)
		goto done;
	for (long g = 0; g < ngroups; g++)
		gmode[g] = -1;
	for (long a = 0; a < k; a++) {
		long g = c[a].group;
		gcount[g] += c[a].count;
		long m = gmode[g];
		if (m < 0 || c[a].count > c[m].count ||
		    (c[a].count == c[m].count && (c[a].t < c[m].t || (c[a].t == c[m].t && c[a].s < c[m].s))))
			gmode[g] = a;
	}
	double minc = fmax((double)p->min_count, p->min_share * (double)n);
	size_t nl = 0;
	for (long g = 0; g < ngroups; g++) {
		gid[g] = -1;
		if ((double)gcount[g] >= minc)
			keys[nl++] = (lvkey){c[gmode[g]].s, c[gmode[g]].t, (size_t)g};
	}
	qsort(keys, nl, sizeof *keys, cmp_key);
	for (size_t q = 0; q < nl; q++)
		gid[keys[q].g] = (long)q;
	out = ss_calloc(nl ? nl : 1, sizeof *out, "levels", e);
	tmp = ss_malloc(n, sizeof *tmp, "levels", e);
	if (!out || !tmp)
		goto done;
	for (size_t q = 0; q < nl; q++) {
		out[q].l_start = keys[q].s;
		out[q].lifetime = keys[q].t;
		out[q].s_min = out[q].t_min = -1;
	}
	for (size_t i = 0; i < n; i++) {
		long a = find_cell(c, k, l_start[i], lifetime[i]);
		long q = gid[c[a].group];
		assign[i] = q;
		if (q < 0)
			continue;
		ss_level *L = &out[q];
		L->count++;
		L->score_mean += score[i];
		if (L->s_min < 0 || l_start[i] < L->s_min)
			L->s_min = l_start[i];
		if (l_start[i] > L->s_max)
			L->s_max = l_start[i];
		if (L->t_min < 0 || lifetime[i] < L->t_min)
			L->t_min = lifetime[i];
		if (lifetime[i] > L->t_max)
			L->t_max = lifetime[i];
	}
	for (size_t q = 0; q < nl; q++) {
		size_t m = 0;
		for (size_t i = 0; i < n; i++)
			if (assign[i] == (long)q)
				tmp[m++] = mlp[i];
		out[q].mlp_norm_median = ss_median_f64(tmp, m);
		out[q].score_mean /= (double)out[q].count;
		out[q].share = (double)out[q].count / (double)n;
	}
	*lv = out;
	*nlv = nl;
	out = NULL;
	rc = 0;
done:
	free(out);
	free(tmp);
	free(keys);
	free(gid);
	free(gmode);
	free(gcount);
	free(c);
	return rc;
}
