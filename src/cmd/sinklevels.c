/* sinklevels - group secondary sink episodes into levels, fit the norm law;
 * see sinklevels(1). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "io/episodes.h"
#include "sinks/levels.h"
#include "util/ofile.h"
#include "util/opt.h"
#include "io/tsv.h"

static ss_level_params lp;
static int fit;
static long top = 3;

static const ss_opt opts[] = {
	{"fit", 'f', SS_OPT_FLAG, &fit, NULL, "print the norm-law fits instead of the levels", NULL},
	{"tol", 't', SS_OPT_DOUBLE, &lp.tol, "X", "level width in layers (1)", NULL},
	{"min-count", 'm', SS_OPT_INT, &lp.min_count, "N", "smallest level, in episodes (3)", NULL},
	{"min-share", 0, SS_OPT_DOUBLE, &lp.min_share, "X", "smallest level, as a share of episodes (0.01)", NULL},
	{"top", 0, SS_OPT_INT, &top, "N", "most frequent tokens listed per level (3)", NULL},
	{0},
};

static const ss_prog prog = {
	"sinklevels",
	"[-f] [-t X] [-m N] [options] [FILE ...]",
	"group secondary sink episodes (sinkdetect output) into levels and fit the MLP-norm law",
	opts,
};

/* The secondary episodes of the tables, as the arrays levels_find takes;
 * row[i] is the episode's row in the table. */
typedef struct rows {
	size_t n;
	size_t *row;
	long *s, *t;
	double *mlp, *sc0, *sc;
	const char **text;
} rows;

static void rows_free(rows *r)
{
	free(r->row);
	free(r->s);
	free(r->t);
	free(r->mlp);
	free(r->sc0);
	free(r->sc);
	free(r->text);
}

static int gather(const ss_eptab *tab, rows *r, ss_err *e)
{
	size_t m = tab->n ? tab->n : 1;
	r->row = ss_malloc(m, sizeof *r->row, "episodes", e);
	r->s = ss_malloc(m, sizeof *r->s, "episodes", e);
	r->t = ss_malloc(m, sizeof *r->t, "episodes", e);
	r->mlp = ss_malloc(m, sizeof *r->mlp, "episodes", e);
	r->sc0 = ss_malloc(m, sizeof *r->sc0, "episodes", e);
	r->sc = ss_malloc(m, sizeof *r->sc, "episodes", e);
	r->text = ss_malloc(m, sizeof *r->text, "episodes", e);
	if (!r->row || !r->s || !r->t || !r->mlp || !r->sc0 || !r->sc || !r->text)
		return -1;
	for (size_t i = 0; i < tab->n; i++) {
		const ss_episode *p = &tab->ep[i];
		if (p->primary)
			continue;
		r->row[r->n] = i;
		r->s[r->n] = p->l_start;
		r->t[r->n] = p->lifetime;
		r->mlp[r->n] = p->mlp_norm_start;
		r->sc0[r->n] = p->score_start;
		r->sc[r->n] = p->score;
		r->text[r->n] = tab->text[i];
		r->n++;
	}
	return 0;
}

static void put_fit(FILE *f, const char *scope, const char *y, const double *xs, const double *ys,
                    size_t n)
{
	double a, b, r;
	if (ss_linfit(xs, ys, n, &a, &b, &r))
		return; /* fewer than 3 episodes, or no spread in ln(mlp_norm_start) */
	fprintf(f, "%s\t%s\t", scope, y);
	tsv_put_double(f, a);
	fputc('\t', f);
	tsv_put_double(f, b);
	fputc('\t', f);
	tsv_put_double(f, r);
	fprintf(f, "\t%zu\n", n);
}

/* Fits of score_start and lifetime against ln(mlp_norm_start) over the
 * episodes with assign == q (q = -2: all).  Zero norms are left out. */
static int fits(FILE *f, const rows *r, const long *assign, long q, const char *scope, ss_err *e)
{
	double *x = ss_malloc(r->n ? r->n : 1, 3 * sizeof(double), "fits", e);
	if (!x)
		return -1;
	double *y0 = x + r->n, *y1 = x + 2 * r->n;
	size_t m = 0;
	for (size_t i = 0; i < r->n; i++) {
		if ((q != -2 && assign[i] != q) || !(r->mlp[i] > 0))
			continue;
		x[m] = log(r->mlp[i]);
		y0[m] = r->sc0[i];
		y1[m] = (double)r->t[i];
		m++;
	}
	put_fit(f, scope, "score_start", x, y0, m);
	put_fit(f, scope, "lifetime", x, y1, m);
	free(x);
	return 0;
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

/* "tok"xN ... for the `top` most frequent token texts of level q. */
static int top_tokens(FILE *f, const rows *r, const long *assign, long q, ss_err *e)
{
	const char **v = ss_malloc(r->n ? r->n : 1, sizeof *v, "tokens", e);
	tc *u = ss_malloc(r->n ? r->n : 1, sizeof *u, "tokens", e);
	if (!v || !u) {
		free(v);
		free(u);
		return -1;
	}
	size_t m = 0, k = 0;
	for (size_t i = 0; i < r->n; i++)
		if (assign[i] == q)
			v[m++] = r->text[i];
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

int main(int argc, char **argv)
{
	ss_err e = {0};
	ss_signals_install(prog.name);
	levels_params_default(&lp);
	int i = ss_opt_parse(&prog, argc, argv, &e);
	if (i == SS_OPT_EXIT)
		return SS_EXIT_OK;
	if (i >= 0 && top < 0) {
		ss_err_status(&e, SS_EXIT_USAGE, "--top %ld: must be >= 0", top);
		i = SS_OPT_ERR;
	}
	if (i < 0) {
		ss_err_print(prog.name, &e);
		return e.status ? e.status : SS_EXIT_USAGE;
	}
	static const unsigned need = EP_BIT(EP_KIND) | EP_BIT(EP_L_START) | EP_BIT(EP_LIFETIME) |
	                             EP_BIT(EP_MLP_NORM_START) | EP_BIT(EP_SCORE_START) |
	                             EP_BIT(EP_SCORE);
	ss_eptab tab = {0};
	rows r = {0};
	int rc = 0;
	if (i == argc)
		rc = eptab_read(&tab, "-", need, &e);
	for (int k = i; k < argc && rc == 0; k++)
		rc = eptab_read(&tab, argv[k], need, &e);
	if (rc == 0)
		rc = gather(&tab, &r, &e);
	long *assign = NULL;
	ss_level *lv = NULL;
	size_t nlv = 0;
	char *text = NULL;
	size_t len = 0;
	FILE *buf = NULL;
	if (rc == 0) {
		assign = ss_malloc(r.n ? r.n : 1, sizeof *assign, "levels", &e);
		rc = assign ? levels_find(r.s, r.t, r.mlp, r.sc, r.n, &lp, assign, &lv, &nlv, &e) : -1;
	}
	if (rc == 0 && !(buf = open_memstream(&text, &len)))
		rc = ss_err_set(&e, "out of memory");
	if (rc == 0 && fit) {
		fputs("scope\ty\tslope\tintercept\tr\tn\n", buf);
		rc = fits(buf, &r, assign, -2, "all", &e);
		for (size_t q = 0; q < nlv && rc == 0; q++) {
			char scope[32];
			snprintf(scope, sizeof scope, "level%zu", q + 1);
			rc = fits(buf, &r, assign, (long)q, scope, &e);
		}
	} else if (rc == 0) {
		fputs("level\tl_start\tlifetime\tcount\tshare\tmlp_norm_median\tscore_mean\t"
		      "l_start_min\tl_start_max\tlifetime_min\tlifetime_max\ttokens\n",
		      buf);
		for (size_t q = 0; q < nlv && rc == 0; q++) {
			const ss_level *L = &lv[q];
			fprintf(buf, "%zu\t%ld\t%ld\t%ld\t", q + 1, L->l_start, L->lifetime, L->count);
			tsv_put_double(buf, L->share);
			fputc('\t', buf);
			tsv_put_double(buf, L->mlp_norm_median);
			fputc('\t', buf);
			tsv_put_double(buf, L->score_mean);
			fprintf(buf, "\t%ld\t%ld\t%ld\t%ld\t", L->s_min, L->s_max, L->t_min, L->t_max);
			rc = top_tokens(buf, &r, assign, (long)q, &e);
			fputc('\n', buf);
		}
	}
	if (buf && fclose(buf) != 0 && rc == 0)
		rc = ss_err_set(&e, "out of memory building the table");
	if (rc == 0 && fwrite(text, 1, len, stdout) != len)
		rc = ss_err_set(&e, "<stdout>: write error");
	free(text);
	free(lv);
	free(assign);
	rows_free(&r);
	eptab_free(&tab);
	if (rc == 0 && ss_close_stdout(&e))
		rc = -1;
	if (rc) {
		ss_err_print(prog.name, &e);
		return e.status == SS_EXIT_USAGE ? SS_EXIT_USAGE : SS_EXIT_FAIL;
	}
	return SS_EXIT_OK;
}
