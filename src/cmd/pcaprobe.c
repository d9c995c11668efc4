/* pcaprobe - how the MLP at l_start forms secondary sinks: PCA of its
 * inputs and its response along each component.  See pcaprobe(1), probe.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/config.h"
#include "engine/decode.h"
#include "util/err.h"
#include "util/mem.h"
#include "io/h5io.h"
#include "engine/model.h"
#include "util/ofile.h"
#include "util/opt.h"
#include "util/progress.h"
#include "interv/cli.h"
#include "interv/probe.h"
#include "sinks/sinks.h"
#include "interv/swap.h"
#include "sinks/tokclass.h"
#include "io/trace.h"

static const char *alphas_s = "-4:4:1", *fit_s = "all";
static long layer, ncomp = 8;
static int layer_seen;
static int per_sink, vectors;

/* "A:B:STEP" or a comma-separated list. */
static int parse_alphas(const char *s, double **a, long *n, ss_err *e)
{
	double lo, hi, st;
	char tail;
	*a = NULL;
	*n = 0;
	if (sscanf(s, "%lf:%lf:%lf%c", &lo, &hi, &st, &tail) == 3) {
		if (!(st > 0) || hi < lo || (hi - lo) / st > 1000)
			return ss_err_status(e, SS_EXIT_USAGE, "--alphas '%s': need A <= B, STEP > 0, "
			                     "at most 1000 steps", s);
		long m = (long)((hi - lo) / st + 1e-9) + 1;
		if (!(*a = ss_malloc(m, sizeof **a, "alphas", e)))
			return -1;
		for (long i = 0; i < m; i++)
			(*a)[i] = lo + i * st;
		*n = m;
		return 0;
	}
	long m = 1;
	for (const char *p = s; *p; p++)
		m += *p == ',';
	if (!(*a = ss_malloc(m, sizeof **a, "alphas", e)))
		return -1;
	char buf[64];
	const char *p = s;
	for (long i = 0; i < m; i++) {
		size_t l = strcspn(p, ",");
		if (l >= sizeof buf || (memcpy(buf, p, l), buf[l] = 0, ss_parse_double(buf, &(*a)[i]))) {
			free(*a);
			*a = NULL;
			return ss_err_status(e, SS_EXIT_USAGE, "--alphas '%s': not a number list or A:B:STEP", s);
		}
		p += l + 1;
	}
	*n = m;
	return 0;
}

static void on_progress(void *ctx, double done, double total)
{
	ss_progress_update(ctx, done, total, "layers");
}

int main(int argc, char **argv)
{
	ss_interv_cli c;
	interv_cli_default(&c);
	const ss_opt opts[] = {
		INTERV_CLI_OPTS(c),
		{"layer", 0, SS_OPT_INT, &layer, "N", "l_start to probe (default: every l_start of the table)", &layer_seen},
		{"n-components", 0, SS_OPT_INT, &ncomp, "K", "principal components (default 8)", NULL},
		{"components", 0, SS_OPT_RENAMED, NULL, "n-components", "a count; --components is a list of components in swapexp", NULL},
		{"alphas", 'a', SS_OPT_STRING, &alphas_s, "LIST", "A:B:STEP or a list, in standard deviations (-4:4:1)", NULL},
		{"fit", 0, SS_OPT_STRING, &fit_s, "SET", "positions fitted: all or nonsink (default all)", NULL},
		{"per-sink", 0, SS_OPT_FLAG, &per_sink, NULL, "print the per-sink split instead", NULL},
		{"vectors", 0, SS_OPT_FLAG, &vectors, NULL, "print the principal components instead", NULL},
		{0},
	};
	const ss_prog prog = {"pcaprobe", "[options] -m DIR TRACE.h5 EPISODES.tsv",
	                      "PCA of the MLP inputs at l_start and the MLP's response", opts};
	ss_err e = {0};
	ss_signals_install(prog.name);
	int first = ss_opt_parse(&prog, argc, argv, &e);
	if (first < 0)
		return ss_opt_exit(&prog, first, &e);
	double *alpha = NULL;
	long n_alpha = 0;
	int fit_nonsink = !strcmp(fit_s, "nonsink");
	if (interv_cli_check(&c, argc - first, &e) < 0)
		return ss_opt_exit(&prog, SS_OPT_ERR, &e);
	if (ncomp < 1)
		ss_err_status(&e, SS_EXIT_USAGE, "--n-components: %ld must be at least 1", ncomp);
	else if (!fit_nonsink && strcmp(fit_s, "all"))
		ss_err_status(&e, SS_EXIT_USAGE, "--fit: expected all or nonsink, got '%s'", fit_s);
	if (e.status || parse_alphas(alphas_s, &alpha, &n_alpha, &e) < 0)
		return ss_opt_exit(&prog, SS_OPT_ERR, &e);
	/* --layer against the model's layers (config.json only), before the
	 * trace or the table is read */
	if (layer_seen && config_check_layer(c.model_dir, layer, &e) < 0) {
		free(alpha);
		return ss_opt_exit(&prog, SS_OPT_ERR, &e);
	}
	unsigned classes = c.classes;
	ss_sink_params sp = c.sp;

	ss_model m = {0};
	ss_trace tr = {0};
	ss_h5 *h5 = NULL;
	ss_dec dec = {0};
	ss_swap_target *tg = NULL;
	size_t n_tg = 0;
	ss_ofile of = {0};
	ss_probe *pr = NULL;
	unsigned char *done_l = NULL;
	int rc = SS_EXIT_FAIL;
	ss_dec_opts dopt = {.threads = (int)c.threads, .compute = c.compute};
	if (model_load(&m, c.model_dir, &e) < 0 || h5_open(&h5, argv[first], &e) < 0 ||
	    trace_read_h5(h5, &tr, &e) < 0 || swap_check_model(&tr, &m, &e) < 0 ||
	    swap_targets_read(argv[first + 1], tr.name, tr.T, tr.L, &tg, &n_tg, &e) < 0)
		goto done;
	if (layer && (layer < 1 || layer > tr.L)) {
		ss_err_set(&e, "--layer %ld: out of range 1-%ld of %s", layer, tr.L, tr.name);
		goto done;
	}
	if (!n_tg) {
		ss_err_set(&e, "%s: no secondary episode of trace %s", argv[first + 1], tr.name);
		goto done;
	}
	ss_progress pg; /* on a terminal only (util/progress.h) */
	ss_probe_plan pl = {.layer = layer, .k = (int)ncomp, .fit_nonsink = fit_nonsink, .alpha = alpha,
	                    .n_alpha = n_alpha, .sp = sp, .classes = classes,
	                    .progress = on_progress, .progress_ctx = &pg};
	if (ss_mem_check(probe_memory(&m, &tr, tg, n_tg, &pl, &dopt), m.weight_bytes, c.max_mem, prog.name,
	                 argv[first], tr.name, tr.T, &e) < 0)
		goto done;
	if (!(done_l = ss_calloc(tr.L + 1, 1, "layers", &e)) ||
	    dec_create(&dec, &m, SS_PROBE_CAP, &dopt, &e) < 0)
		goto done;
	/* every layer first, so that a failure leaves no partial table */
	if (!(pr = ss_calloc(tr.L + 1, sizeof *pr, "probes", &e)))
		goto done;
	ss_progress_start(&pg, prog.name);
	int r = probe_run_all(&dec, h5, &tr, tg, n_tg, &pl, pr, done_l, &e);
	ss_progress_end(&pg);
	if (r < 0)
		goto done;
	if (ss_ofile_open(&of, c.out_path, &e) < 0)
		goto done;
	for (long l = 1, hdr = 1; l <= tr.L; l++) {
		if (!done_l[l])
			continue;
		if (vectors)
			probe_write_vectors(of.f, (int)hdr, &tr, &pr[l]);
		else if (per_sink)
			probe_write_sinks(of.f, (int)hdr, &tr, &pr[l]);
		else
			probe_write_comps(of.f, (int)hdr, &tr, &pr[l]);
		hdr = 0;
	}
	if (ss_ofile_commit(&of, &e) < 0)
		goto done;
	rc = 0;
done:
	for (long l = 0; pr && l <= tr.L; l++)
		probe_free(&pr[l]);
	free(pr);
	free(done_l);
	free(alpha);
	free(tg);
	dec_free(&dec);
	h5_close(h5);
	trace_free(&tr);
	model_free(&m);
	ss_opt_free();
	return ss_main_end(prog.name, rc ? -1 : 0, &e);
}
