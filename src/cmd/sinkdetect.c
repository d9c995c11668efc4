/* sinkdetect - find sink episodes in sinkscope traces; see sinkdetect(1). */
#include <limits.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "io/episodes.h"
#include "io/h5io.h"
#include "util/ofile.h"
#include "util/opt.h"
#include "util/progress.h"
#include "sinks/sinks.h"
#include "sinks/summary.h"
#include "sinks/tokrate.h"
#include "io/trace.h"
#include "io/tsv.h"

static ss_sink_params sp;
static const char *layers_opt, *out_h5;
static int summary, tokens;
static ss_tokrate *rates; /* --tokens */

static const ss_opt opts[] = {
	{"tau-cos", 'c', SS_OPT_DOUBLE, &sp.tau_cos, "X", "cosine to position 0 above X (0.95)", NULL},
	{"tau-norm", 'n', SS_OPT_DOUBLE, &sp.tau_norm, "X", "norm at least X times the layer median (5)", NULL},
	{"min-lifetime", 0, SS_OPT_INT, &sp.min_lifetime, "N", "drop episodes shorter than N layers (1)", NULL},
	{"primary-start", 0, SS_OPT_DOUBLE, &sp.primary_start_frac, "F", "primary: starts within the first F of the layers (0.25)", NULL},
	{"primary-end", 0, SS_OPT_DOUBLE, &sp.primary_end_frac, "F", "primary: lasts to at least F of the layers (0.9)", NULL},
	{"layers", 'l', SS_OPT_STRING, &layers_opt, "A-B", "consider layers A to B only (all)", NULL},
	{"summary", 0, SS_OPT_FLAG, &summary, NULL, "print per-layer tables instead of episodes", NULL},
	{"tokens", 0, SS_OPT_FLAG, &tokens, NULL, "print per token text: occurrences, sinks, rate, episodes by level", NULL},
	{"output", 'o', SS_OPT_STRING, &out_h5, "OUT.h5", "also write the trace with /sinks to OUT.h5", NULL},
	{0},
};

static const ss_prog prog = {
	"sinkdetect",
	"[--summary] [-c X] [-n X] [--min-lifetime N] [-l A-B] [-o OUT.h5] [options] [FILE ...]",
	"find attention-sink episodes (position, start layer, lifetime) in sinkscope HDF5 traces",
	opts,
};


/* The per-layer rows of the summary (sinks/summary.h). */
static int write_summary(FILE *f, const ss_trace *tr, const ss_episode *ep, size_t n, long lo,
                         long hi, ss_err *e)
{
	ss_layer_sum *r;
	if (layer_summary(tr, ep, n, lo, hi, &r, e))
		return -1;
	layer_summary_put(f, tr->name, r, (size_t)(hi - lo + 1));
	free(r);
	return 0;
}

/* Write the trace (root attributes, /tokens, /stats, /acts) plus /sinks to
 * OUT (atomically). */
static int write_h5(ss_h5 *in, const ss_trace *tr, const ss_episode *ep, size_t n, long lo,
                    long hi, ss_err *e)
{
	ss_h5 *o;
	if (h5_create(&o, out_h5, e))
		return -1;
	if (trace_write_h5(o, tr, e) || h5_copy_attrs(o, in, "/", e) || trace_acts_copy(o, in, e) ||
	    episodes_write_h5(o, ep, n, e) || sink_params_write_h5(o, "/sinks", &sp, lo, hi, e)) {
		h5_close(o);
		return -1;
	}
	return h5_commit(o, e);
}

static int run(const char *path, FILE *buf, ss_err *e)
{
	ss_h5 *f = NULL;
	ss_trace tr;
	ss_episode *ep = NULL;
	size_t n = 0;
	long lo, hi;
	int rc = -1;
	memset(&tr, 0, sizeof tr);
	if (h5_open(&f, path, e) || trace_read_h5(f, &tr, e))
		goto done;
	if (sink_params_check(&sp, tr.L, &lo, &hi, e)) {
		ss_err_prefix(e, "%s:/", h5_name(f));
		goto done;
	}
	if (sink_episodes(&tr, &sp, &ep, &n, e))
		goto done;
	if (summary && write_summary(buf, &tr, ep, n, lo, hi, e))
		goto done;
	if (tokens && tokrate_add(rates, &tr, ep, n, e))
		goto done;
	/* the header once, with the experts column when the first trace is of
	 * a mixture of experts */
	static int with = -1;
	if (!summary && !tokens && with < 0) {
		with = tr.moe_experts ? EP_WITH_EXPERTS : 0;
		episodes_put_header(buf, with);
	}
	for (size_t k = 0; !summary && !tokens && k < n; k++)
		episodes_put_row(buf, tr.name, tr.text[ep[k].pos], &ep[k], with);
	if (out_h5 && write_h5(f, &tr, ep, n, lo, hi, e))
		goto done;
	rc = 0;
done:
	free(ep);
	trace_free(&tr);
	h5_close(f);
	return rc;
}

int main(int argc, char **argv)
{
	ss_err e = {0};
	ss_signals_install(prog.name);
	sink_params_default(&sp);
	int i = ss_opt_parse(&prog, argc, argv, &e);
	if (i < 0)
		return ss_opt_exit(&prog, i, &e);
	long lo, hi;
	int nin = argc - i;
	if (layers_opt && ss_parse_range(layers_opt, &sp.layer_lo, &sp.layer_hi, "--layers", &e))
		return ss_opt_exit(&prog, SS_OPT_ERR, &e);
	if (sink_params_check(&sp, LONG_MAX, &lo, &hi, &e))
		return ss_opt_exit(&prog, SS_OPT_ERR, &e);
	if (summary && tokens) {
		ss_err_status(&e, SS_EXIT_USAGE, "--summary and --tokens: choose one table");
		return ss_opt_exit(&prog, SS_OPT_ERR, &e);
	}
	const char *outs[1] = {out_h5}, *names[1] = {"-o"};
	if (ss_out_check(outs, names, 1, &e) < 0)
		return ss_opt_exit(&prog, SS_OPT_ERR, &e);
	/* the table always goes to stdout: -o naming stdout in any spelling
	 * (/dev/stdout, /dev/fd/1, the file stdout is redirected to) would mix
	 * HDF5 into it */
	if (out_h5 && (nin > 1 || ss_out_is_stdout(out_h5))) {
		if (nin > 1)
			ss_err_status(&e, SS_EXIT_USAGE, "-o takes exactly one input trace");
		else if (!strcmp(out_h5, "-"))
			ss_err_status(&e, SS_EXIT_USAGE, "-o -: stdout carries the table; name a file");
		else
			ss_err_status(&e, SS_EXIT_USAGE, "-o %s: is stdout, which carries the table; name a file",
			              out_h5);
		return ss_opt_exit(&prog, SS_OPT_ERR, &e);
	}
	/* The whole table is built in memory and written only when every input
	 * was good: a bad file never leaves a partial table. */
	char *text = NULL;
	size_t len = 0;
	FILE *buf = open_memstream(&text, &len);
	if (!buf)
		return ss_main_end(prog.name, ss_err_set(&e, "out of memory"), &e);
	if (summary)
		layer_summary_put_header(buf);
	if (tokens && !(rates = tokrate_new(&e))) {
		fclose(buf);
		free(text);
		return ss_main_end(prog.name, -1, &e);
	}
	ss_progress pg;
	ss_progress_start(&pg, "sinkdetect");
	int rc = 0;
	if (nin == 0)
		rc = run("-", buf, &e);
	for (int k = 0; k < nin && rc == 0; k++) {
		rc = run(argv[i + k], buf, &e);
		ss_progress_update(&pg, k + 1, nin, "files");
	}
	ss_progress_end(&pg);
	if (tokens && rc == 0) {
		ss_level_params lp;
		levels_params_default(&lp);
		rc = tokrate_write_tsv(buf, rates, &lp, &e);
	}
	tokrate_free(rates);
	if (fclose(buf) != 0 && rc == 0)
		rc = ss_err_set(&e, "out of memory building the table");
	if (rc == 0 && fwrite(text, 1, len, stdout) != len)
		rc = ss_err_errno(&e, errno ? errno : EIO, "<stdout>: write error");
	free(text);
	ss_opt_free();
	return ss_main_end(prog.name, rc, &e);
}
