/* sinklevels - group secondary sink episodes into levels, fit the norm law;
 * see sinklevels(1). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/err.h"
#include "util/ofile.h"
#include "util/opt.h"
#include "io/episodes.h"
#include "sinks/levels.h"
#include "sinks/normlaw.h"

static ss_level_params lp;
static int fit, assign;
static long top = 3;

static const ss_opt opts[] = {
	{"fit", 0, SS_OPT_FLAG, &fit, NULL, "print the norm-law fits instead of the levels", NULL},
	{"assign", 0, SS_OPT_FLAG, &assign, NULL, "print the episodes with their level instead", NULL},
	{"tol", 0, SS_OPT_DOUBLE, &lp.tol, "X", "level width in layers (1)", NULL},
	{"min-count", 0, SS_OPT_INT, &lp.min_count, "N", "smallest level, in episodes (3)", NULL},
	{"min-share", 0, SS_OPT_DOUBLE, &lp.min_share, "X", "smallest level, as a share of episodes (0.01)", NULL},
	{"top", 0, SS_OPT_INT, &top, "N", "most frequent tokens listed per level (3)", NULL},
	{0},
};

static const ss_prog prog = {
	"sinklevels",
	"[--fit | --assign] [--tol X] [--min-count N] [options] [FILE ...]",
	"group secondary sink episodes (sinkdetect output) into levels and fit the MLP-norm law",
	opts,
};

/* The requested table into buf. */
static int write_table(FILE *buf, ss_eptab *tab, const ss_level *lv, size_t nlv, ss_err *e)
{
	if (fit)
		return normlaw_write_tsv(buf, tab->ep, tab->n, nlv, e);
	if (!assign)
		return levels_write_tsv(buf, lv, nlv, tab, top, e);
	int with = EP_WITH_LEVEL | (tab->cols & EP_BIT(EP_EXPERTS) ? EP_WITH_EXPERTS : 0);
	episodes_put_header(buf, with);
	for (size_t i = 0; i < tab->n; i++)
		episodes_put_row(buf, tab->trace[i], tab->text[i], &tab->ep[i], with);
	return 0;
}

int main(int argc, char **argv)
{
	ss_err e = {0};
	ss_signals_install(prog.name);
	levels_params_default(&lp);
	int i = ss_opt_parse(&prog, argc, argv, &e);
	if (i < 0)
		return ss_opt_exit(&prog, i, &e);
	if (top < 0)
		ss_err_status(&e, SS_EXIT_USAGE, "--top: %ld must be >= 0", top);
	else if (fit && assign)
		ss_err_status(&e, SS_EXIT_USAGE, "--fit and --assign: choose one table");
	else
		levels_params_check(&lp, &e);
	if (e.status)
		return ss_opt_exit(&prog, SS_OPT_ERR, &e);
	/* --assign writes the whole episode table back, so it needs every column */
	unsigned need = assign ? EP_ALL
	                       : EP_BIT(EP_KIND) | EP_BIT(EP_L_START) | EP_BIT(EP_LIFETIME) |
	                         EP_BIT(EP_MLP_NORM_START) | EP_BIT(EP_SCORE_START) | EP_BIT(EP_SCORE);
	ss_eptab tab = {0};
	ss_level *lv = NULL;
	size_t nlv = 0;
	int rc = 0;
	if (i == argc)
		rc = eptab_read(&tab, "-", need, &e);
	for (int k = i; k < argc && rc == 0; k++)
		rc = eptab_read(&tab, argv[k], need, &e);
	if (rc == 0)
		rc = levels_assign(&tab, &lp, &lv, &nlv, &e);
	/* the whole table is built in memory: a bad input leaves no partial output */
	char *text = NULL;
	size_t len = 0;
	FILE *buf = NULL;
	if (rc == 0 && !(buf = open_memstream(&text, &len)))
		rc = ss_err_set(&e, "out of memory");
	if (rc == 0)
		rc = write_table(buf, &tab, lv, nlv, &e);
	if (buf && fclose(buf) != 0 && rc == 0)
		rc = ss_err_set(&e, "out of memory building the table");
	if (rc == 0 && fwrite(text, 1, len, stdout) != len)
		rc = ss_err_errno(&e, errno ? errno : EIO, "<stdout>: write error");
	free(text);
	free(lv);
	eptab_free(&tab);
	ss_opt_free();
	return ss_main_end(prog.name, rc, &e);
}
