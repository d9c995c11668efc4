/* tsne - t-SNE of activations, labelled by future sinks and controls, and a
 * per-layer separability scan.  See tsne(1). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/ofile.h"
#include "util/opt.h"
#include "util/par.h"
#include "util/progress.h"
#include "io/matrix.h"
#include "sinks/sinks.h"
#include "sinks/tokclass.h"
#include "analysis/decision.h"
#include "analysis/tsne.h"

#define PROG "tsne"

static long o_layer = -1, o_iter = 1000, o_exag_iter = 250, o_pca = 50, o_seed = 1,
            o_threads = SS_THREADS_UNSET, o_knn = 5, o_min_life = 1, o_perm = 100;
static double o_perp = 30, o_theta = 0.5, o_exag = 12, o_lr = 0, o_tau_cos = NAN,
              o_tau_norm = NAN;
static int o_exact, o_quiet;
static const char *o_labels, *o_only, *o_classes = "space,punct,digit", *o_out, *o_scan,
                  *o_init = "pca", *o_lstart, *o_level, *o_search = "auto";
static int seen_tau_cos, seen_tau_norm;
static long *want_level; /* --level */
static size_t n_want;

static const ss_opt opts[] = {
	{"layer", 0, SS_OPT_INT, &o_layer, "L", "layer of /acts/COMPONENT to embed", NULL},
	{"labels", 0, SS_OPT_STRING, &o_labels, "SINKS.tsv", "sinkdetect episodes for the labels", NULL},
	{"only", 0, SS_OPT_STRING, &o_only, "LIST", "keep rows of these labels (future,twin,control,other)", NULL},
	{"classes", 0, SS_OPT_STRING, &o_classes, "LIST", "token classes of controls (space,punct,digit)", NULL},
	{"min-lifetime", 0, SS_OPT_INT, &o_min_life, "N", "future: episodes of at least N layers (1)", NULL},
	{"l-start", 0, SS_OPT_STRING, &o_lstart, "A-B", "future: episodes starting in layers A..B", NULL},
	{"level", 0, SS_OPT_STRING, &o_level, "K[,K...]", "future: only episodes of these levels (sinklevels --assign)", NULL},
	{"tau-cos", 'c', SS_OPT_DOUBLE, &o_tau_cos, "X", "sink rule for controls: cosine threshold", &seen_tau_cos},
	{"tau-norm", 'n', SS_OPT_DOUBLE, &o_tau_norm, "X", "sink rule for controls: norm ratio", &seen_tau_norm},
	{"perplexity", 'p', SS_OPT_DOUBLE, &o_perp, "U", "perplexity (30)", NULL},
	{"theta", 0, SS_OPT_DOUBLE, &o_theta, "X", "Barnes-Hut accuracy, 0 = exact (0.5)", NULL},
	{"exact", 0, SS_OPT_FLAG, &o_exact, NULL, "exact O(N^2) t-SNE (small N)", NULL},
	{"iter", 0, SS_OPT_INT, &o_iter, "N", "iterations (1000)", NULL},
	{"exaggeration", 0, SS_OPT_DOUBLE, &o_exag, "X", "early exaggeration (12)", NULL},
	{"exag-iter", 0, SS_OPT_INT, &o_exag_iter, "N", "iterations of early exaggeration (250)", NULL},
	{"learning-rate", 0, SS_OPT_DOUBLE, &o_lr, "X", "step size (0 = max(N/12/4, 50))", NULL},
	{"pca", 0, SS_OPT_INT, &o_pca, "K", "PCA dimensions that guide the neighbour search (50; 0 = off)", NULL},
	{"init", 0, SS_OPT_STRING, &o_init, "pca|random", "initial layout (pca)", NULL},
	{"search", 0, SS_OPT_STRING, &o_search, "auto|vptree|blas", "neighbour search (auto: BLAS scan above 10 dims)", NULL},
	{"seed", 's', SS_OPT_INT, &o_seed, "N", "random seed (1)", NULL},
	SS_OPT_THREADS(o_threads),
	{"output", 'o', SS_OPT_STRING, &o_out, "FILE.h5", "write the embedding to HDF5", NULL},
	{"scan", 0, SS_OPT_STRING, &o_scan, "LAYERS", "separability per layer instead of one embedding", NULL},
	{"knn", 'k', SS_OPT_INT, &o_knn, "K", "neighbours of the k-NN vote (5)", NULL},
	{"permutations", 0, SS_OPT_INT, &o_perm, "N", "--scan: label permutations of the chance level (100)", NULL},
	{"quiet", 'q', SS_OPT_FLAG, &o_quiet, NULL, "no summary line on stderr", NULL},
	{0},
};

static const ss_prog prog = {
	PROG,
	"[options] [--layer L] FILE.h5:/DATASET ...\n"
	"[options] < MATRIX.tsv\n"
	"--scan LAYERS --labels SINKS.tsv [options] FILE.h5:/acts/COMPONENT ...",
	"t-SNE of activations, labelled by future sinks and controls",
	opts,
};

/* ------------------------------------------------------------ progress */

static void on_progress(void *ctx, const char *phase, double done, double total)
{
	ss_progress_update(ctx, done, total, "it");
}

static void params(ss_tsne_params *p, ss_progress *pg)
{
	tsne_params_default(p);
	p->perplexity = o_perp;
	p->theta = o_theta;
	p->exact = o_exact;
	p->max_iter = o_iter;
	p->exag_iter = o_exag_iter;
	p->exaggeration = o_exag;
	p->learning_rate = o_lr;
	p->pca_dims = (int)o_pca;
	p->init = strcmp(o_init, "random") ? SS_TSNE_INIT_PCA : SS_TSNE_INIT_RANDOM;
	p->seed = (uint64_t)o_seed;
	p->knn_method = !strcmp(o_search, "vptree") ? SS_TSNE_KNN_VPTREE
	                : !strcmp(o_search, "blas") ? SS_TSNE_KNN_BLAS : SS_TSNE_KNN_AUTO;
	p->threads = (int)o_threads;
	p->progress = on_progress;
	p->progress_ctx = pg;
}

/* ------------------------------------------------------------------- main */

/* usage checks of the options alone */
static int check_options(unsigned *only, unsigned *classes, decision_rule *rule, ss_err *e)
{
	if (strcmp(o_init, "pca") && strcmp(o_init, "random"))
		return ss_err_status(e, SS_EXIT_USAGE, "--init: expected pca or random, got '%s'", o_init);
	if (strcmp(o_search, "auto") && strcmp(o_search, "vptree") && strcmp(o_search, "blas"))
		return ss_err_status(e, SS_EXIT_USAGE, "--search: expected auto, vptree or blas, got '%s'", o_search);
	const char *bad = !(o_perp > 0) ? "--perplexity: must be positive"
	                  : !(o_exag > 0) ? "--exaggeration: must be positive"
	                  : o_iter < 1    ? "--iter: must be at least 1"
	                  : o_knn < 1     ? "--knn: must be at least 1"
	                  : o_theta < 0   ? "--theta: must not be negative"
	                  : o_pca < 0     ? "--pca: must not be negative"
	                  : o_exag_iter < 0 ? "--exag-iter: must not be negative"
	                  : o_lr < 0      ? "--learning-rate: must not be negative"
	                  : o_perm < 1 || o_perm > 100000 ? "--permutations: must be 1 to 100000" : NULL;
	if (bad)
		return ss_err_status(e, SS_EXIT_USAGE, "%s", bad);
	if (o_only && decision_parse_labels(o_only, "--only", only, e) < 0)
		return -1;
	if (tokclass_parse(o_classes, classes, e) < 0) {
		e->status = SS_EXIT_USAGE;
		return ss_err_prefix(e, "--classes");
	}
	*rule = (decision_rule){.min_life = o_min_life, .lo = 0, .hi = 1L << 30};
	if (o_lstart && ss_parse_range(o_lstart, &rule->lo, &rule->hi, "--l-start", e) < 0)
		return -1;
	if (o_level && decision_parse_levels(o_level, "--level", &want_level, &n_want, e) < 0)
		return -1;
	rule->levels = want_level;
	rule->n_levels = n_want;
	if (o_level && !o_labels)
		return ss_err_status(e, SS_EXIT_USAGE, "--level needs --labels (the table of sinklevels --assign)");
	if (o_scan && o_only)
		return ss_err_status(e, SS_EXIT_USAGE, "--only: not with --scan (the scan compares future sinks "
		                     "with their twins and with the controls)");
	if (o_scan && o_out)
		return ss_err_status(e, SS_EXIT_USAGE, "--output: not with --scan (the scan is a table on stdout: "
		                     "redirect it, > FILE)");
	const char *outs[1] = {o_out}, *names[1] = {"-o"};
	if (ss_out_check(outs, names, 1, e) < 0)
		return -1;
	return 0;
}

/* --scan: the table on stdout, the decision layer on stderr */
static int run_scan(const decision_set *d, ss_err *e)
{
	unsigned char *mask = calloc(d->L + 1, 1);
	if (!mask)
		return ss_err_set(e, "out of memory");
	decision_scan_params p = {.k = (int)o_knn, .permutations = (int)o_perm, .seed = (uint64_t)o_seed};
	decision_row *r = NULL;
	long n = 0, dl = 0;
	int rc = -1;
	if (ss_parse_layers(o_scan, (int)d->L, mask, "--scan", e) == 0 &&
	    decision_scan(d, mask, &p, &r, &n, &dl, e) == 0) {
		decision_scan_write(stdout, r, n, dl);
		rc = 0;
		if (!o_quiet && dl)
			ss_warn(PROG, "decision layer %ld: from it on, future sinks separate from the same "
			        "tokens that do not become sinks (Wilson 95%% lower bound of k-NN accuracy "
			        "above the 95th percentile of %ld permutations)", dl, o_perm);
		else if (!o_quiet)
			ss_warn(PROG, "no decision layer: at the last layer scanned, future sinks do not "
			        "separate from the same tokens that do not become sinks beyond chance");
	}
	free(r);
	free(mask);
	return rc;
}

/* one embedding of the rows R: TSV on stdout or -o HDF5 */
static int run_embedding(ss_matrix *R, const ss_mat_src *S, int ns, ss_err *e)
{
	float *Y = malloc((R->n ? R->n : 1) * 2 * sizeof *Y);
	if (!Y)
		return ss_err_set(e, "out of memory");
	ss_progress pg;
	ss_tsne_params p;
	params(&p, &pg);
	ss_tsne_info in;
	ss_progress_start(&pg, "t-SNE");
	double t0 = ss_now();
	int r = tsne_run(R->X, R->n, R->d, &p, Y, &in, e);
	ss_progress_end(&pg);
	if (r < 0) {
		free(Y);
		return ss_err_prefix(e, "%s", ns ? S[0].file : "<stdin>");
	}
	double t1 = ss_now();
	if (in.n_uncalibrated)
		ss_warn(PROG, "warning: %ld of %ld points miss perplexity %g (calibrated %.3g..%.3g): "
		        "their neighbours are equidistant", in.n_uncalibrated, R->n, o_perp, in.perp_min, in.perp_max);
	ss_embed_meta m = {in.kl, in.kl_exact, o_perp, o_exact ? 0 : o_theta, in.iters, o_layer,
	                   o_seed, PROG " " SS_VERSION};
	if (o_out)
		r = matrix_write_embedding_h5(o_out, R, S, decision_lab_name, Y, &m, e);
	else
		matrix_write_embedding_tsv(stdout, R, S, decision_lab_name, Y);
	free(Y);
	if (r == 0 && !o_quiet)
		ss_warn(PROG, "%ld points, %d dims, KL divergence %.5f (%s), %ld iterations, "
		        "perplexity %.3f..%.3f, %.2f s (pca %.2f, knn %.2f, affinities %.2f, optimise %.2f, kl %.2f), %ld threads",
		        R->n, in.dims, in.kl, in.kl_exact ? "exact" : "Barnes-Hut estimate", in.iters,
		        in.perp_min, in.perp_max, t1 - t0, in.t_pca, in.t_knn, in.t_affinity,
		        in.t_optimise, in.t_kl, o_threads);
	return r;
}

/* labels of one embedding's rows: from the episodes, or a stdin label column */
static int label_rows(ss_matrix *R, const decision_set *d, unsigned only, ss_err *e)
{
	if (o_labels) {
		if (decision_label_rows(d, R, o_layer, e) < 0)
			return -1;
	} else {
		if (decision_label_text(R, e) < 0)
			return -1;
	}
	if (only) {
		if (!o_labels && !R->ltext)
			return ss_err_status(e, SS_EXIT_USAGE, "--only needs --labels (or a label column on stdin)");
		matrix_select(R, only);
	}
	return 0;
}

int main(int argc, char **argv)
{
	ss_err e = {0};
	ss_signals_install(PROG);
	int first = ss_opt_parse(&prog, argc, argv, &e);
	if (first < 0)
		return ss_opt_exit(&prog, first, &e);
	int ns = argc - first, rc = -1;
	ss_mat_src *S = calloc(ns > 0 ? ns : 1, sizeof *S);
	ss_matrix R = {0};
	decision_set d = {0};
	decision_rule rule;
	unsigned only = 0, classes = SS_TC_DEFAULT;
	if (!S) {
		ss_err_set(&e, "out of memory");
		goto done;
	}
	if (ss_opt_threads(&o_threads, &e) < 0)
		goto done;
	if (check_options(&only, &classes, &rule, &e) < 0)
		goto done;
	if (o_scan && (!ns || !o_labels)) {
		ss_err_status(&e, SS_EXIT_USAGE, "--scan needs --labels and FILE.h5:/acts/COMPONENT operands");
		goto done;
	}
	if (o_labels && !ns) {
		ss_err_status(&e, SS_EXIT_USAGE, "--labels needs FILE.h5 operands (stdin rows carry a label column)");
		goto done;
	}
	for (int k = 0; k < ns; k++)
		if (matrix_src_parse(&S[k], argv[first + k], &e) < 0)
			goto done;
	for (int k = 0; k < ns; k++)
		if (S[k].is_acts && o_layer < 0 && !o_scan) {
			ss_err_status(&e, SS_EXIT_USAGE, "%s: --layer is required for %s", S[k].file, S[k].dset);
			goto done;
		}
	/* open inputs; traces' stats for labels */
	ss_sink_params sp;
	sink_params_default(&sp);
	if (seen_tau_cos)
		sp.tau_cos = o_tau_cos;
	if (seen_tau_norm)
		sp.tau_norm = o_tau_norm;
	if (decision_init(&d, S, ns, &rule, &e) < 0)
		goto done;
	for (int k = 0; k < ns; k++)
		if (matrix_src_open(&S[k], &e) < 0 ||
		    ((o_labels || o_scan) && decision_load(&d, k, &sp, classes, &e) < 0))
			goto done;
	if (o_labels && decision_read_episodes(&d, o_labels, &e) < 0)
		goto done;
	if (o_scan) {
		rc = run_scan(&d, &e);
		goto done;
	}
	/* one embedding */
	if ((ns ? matrix_read_h5(S, ns, o_layer, &R, &e) : matrix_read_tsv(stdin, "<stdin>", &R, &e)) < 0 ||
	    label_rows(&R, &d, only, &e) < 0)
		goto done;
	rc = run_embedding(&R, S, ns, &e);
done:
	for (int k = 0; k < ns && S; k++)
		matrix_src_free(&S[k]);
	free(S);
	decision_free(&d);
	free(want_level);
	matrix_free(&R);
	ss_opt_free();
	return ss_main_end(PROG, rc, &e);
}
