/* normlaw.c - line fits and the norm law; see normlaw.h. */
#include "sinks/normlaw.h"

#include <math.h>
#include <stdlib.h>

#include "io/tsv.h"

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

static void fit(ss_fit *f, const double *x, const double *y, size_t n)
{
	f->n = n;
	f->ok = ss_linfit(x, y, n, &f->slope, &f->intercept, &f->r) == 0;
}

int normlaw_fit(const ss_episode *ep, size_t n, long level, ss_normlaw *out, ss_err *e)
{
	double *x = ss_malloc(n ? n : 1, 3 * sizeof(double), "fits", e);
	if (!x)
		return -1;
	double *y0 = x + n, *y1 = x + 2 * n;
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		const ss_episode *p = &ep[i];
		if (p->primary || (level && p->level != level) || !(p->mlp_norm_start > 0))
			continue;
		x[m] = log(p->mlp_norm_start);
		y0[m] = p->score_start;
		y1[m] = (double)p->lifetime;
		m++;
	}
	fit(&out->score_start, x, y0, m);
	fit(&out->lifetime, x, y1, m);
	free(x);
	return 0;
}

static void put_fit(FILE *f, const char *scope, const char *y, const ss_fit *q)
{
	if (!q->ok)
		return;
	fprintf(f, "%s\t%s\t", scope, y);
	tsv_put_double(f, q->slope);
	fputc('\t', f);
	tsv_put_double(f, q->intercept);
	fputc('\t', f);
	tsv_put_double(f, q->r);
	fprintf(f, "\t%zu\n", q->n);
}

int normlaw_write_tsv(FILE *f, const ss_episode *ep, size_t n, size_t nlv, ss_err *e)
{
	fputs("scope\ty\tslope\tintercept\tr\tn\n", f);
	for (size_t q = 0; q <= nlv; q++) {
		ss_normlaw law;
		char scope[32];
		if (normlaw_fit(ep, n, (long)q, &law, e))
			return -1;
		if (q)
			snprintf(scope, sizeof scope, "level%zu", q);
		else
			snprintf(scope, sizeof scope, "all");
		put_fit(f, scope, "score_start", &law.score_start);
		put_fit(f, scope, "lifetime", &law.lifetime);
	}
	return 0;
}
