/* levels.c - sink levels by density modes; see levels.h. */
#include "sinks/levels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/tsv.h"

void levels_params_default(ss_level_params *p)
{
	p->tol = 1.0;
	p->min_count = 3;
	p->min_share = 0.01;
}

int levels_params_check(const ss_level_params *p, ss_err *e)
{
	if (!(p->tol > 0))
		return ss_err_status(e, SS_EXIT_USAGE, "--tol: %g must be positive", p->tol);
	if (p->min_count < 1)
		return ss_err_status(e, SS_EXIT_USAGE, "--min-count: %ld must be at least 1", p->min_count);
	if (!(p->min_share >= 0 && p->min_share <= 1))
		return ss_err_status(e, SS_EXIT_USAGE, "--min-share: %g outside [0, 1]", p->min_share);
	return 0;
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
	if (levels_params_check(p, e))
		return -1;
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

int levels_assign(ss_eptab *t, const ss_level_params *p, ss_level **lv, size_t *nlv, ss_err *e)
{
	*lv = NULL;
	*nlv = 0;
	size_t m = t->n ? t->n : 1, n = 0;
	size_t *row = ss_malloc(m, sizeof *row, "levels", e);
	long *s = ss_malloc(m, sizeof *s, "levels", e), *life = ss_malloc(m, sizeof *life, "levels", e);
	long *assign = ss_malloc(m, sizeof *assign, "levels", e);
	double *mlp = ss_malloc(m, sizeof *mlp, "levels", e), *sc = ss_malloc(m, sizeof *sc, "levels", e);
	int rc = -1;
	if (!row || !s || !life || !assign || !mlp || !sc)
		goto done;
	for (size_t i = 0; i < t->n; i++) {
		const ss_episode *q = &t->ep[i];
		if (q->primary)
			continue;
		row[n] = i;
		s[n] = q->l_start;
		life[n] = q->lifetime;
		mlp[n] = q->mlp_norm_start;
		sc[n] = q->score;
		n++;
	}
	if (levels_find(s, life, mlp, sc, n, p, assign, lv, nlv, e))
		goto done;
	for (size_t i = 0; i < t->n; i++)
		t->ep[i].level = 0;
	for (size_t k = 0; k < n; k++)
		t->ep[row[k]].level = assign[k] + 1;
	rc = 0;
done:
	free(row);
	free(s);
	free(life);
	free(assign);
	free(mlp);
	free(sc);
	return rc;
}

typedef struct { const char *s; long c; } tc;
static int cmp_tc(const void *a, const void *b)
{
	const tc *x = a, *y = b;
	if (x->c != y->c)
		return x->c > y->c ? -1 : 1;
	return strcmp(x->s, y->s);
}
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* '"tok"xN ...' for the `top` most frequent token texts of level q. */
static int top_tokens(FILE *f, const ss_eptab *t, long q, long top, ss_err *e)
{
	const char **v = ss_malloc(t->n ? t->n : 1, sizeof *v, "tokens", e);
	tc *u = ss_malloc(t->n ? t->n : 1, sizeof *u, "tokens", e);
	if (!v || !u) {
		free(v);
		free(u);
		return -1;
	}
	size_t m = 0, k = 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->ep[i].level == q)
			v[m++] = t->text[i];
	qsort(v, m, sizeof *v, cmp_str);
	for (size_t i = 0; i < m; i++) {
		if (k && !strcmp(u[k - 1].s, v[i]))
			u[k - 1].c++;
		else
			u[k++] = (tc){v[i], 1};
	}
	qsort(u, k, sizeof *u, cmp_tc);
	char *buf = NULL;
	size_t len = 0;
	FILE *s = open_memstream(&buf, &len);
	for (size_t i = 0; s && i < k && i < (size_t)top; i++)
		fprintf(s, "%s\"%s\"x%ld", i ? " " : "", u[i].s, u[i].c);
	if (s)
		fclose(s);
	if (buf)
		tsv_put_escaped(f, buf, len);
	free(buf);
	free(v);
	free(u);
	return 0;
}

int levels_write_tsv(FILE *f, const ss_level *lv, size_t nlv, const ss_eptab *t, long top,
                     ss_err *e)
{
	fputs("level\tl_start\tlifetime\tcount\tshare\tmlp_norm_median\tscore_mean\t"
	      "l_start_min\tl_start_max\tlifetime_min\tlifetime_max\ttokens\n",
	      f);
	for (size_t q = 0; q < nlv; q++) {
		const ss_level *L = &lv[q];
		fprintf(f, "%zu\t%ld\t%ld\t%ld\t", q + 1, L->l_start, L->lifetime, L->count);
		tsv_put_double(f, L->share);
		fputc('\t', f);
		tsv_put_double(f, L->mlp_norm_median);
		fputc('\t', f);
		tsv_put_double(f, L->score_mean);
		fprintf(f, "\t%ld\t%ld\t%ld\t%ld\t", L->s_min, L->s_max, L->t_min, L->t_max);
		if (top_tokens(f, t, (long)q + 1, top, e))
			return -1;
		fputc('\n', f);
	}
	return 0;
}
