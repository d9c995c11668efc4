/* swapexp - token swapping: where is the choice of a secondary sink made?
 * See swapexp(1) and swap.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/decode.h"
#include "util/err.h"
#include "engine/model.h"
#include "util/ofile.h"
#include "util/opt.h"
#include "sinks/sinks.h"
#include "interv/swap.h"
#include "sinks/tokclass.h"
#include "io/trace.h"

static const char *model_dir, *out_path = "-", *comps_s = "all", *classes_s = "space,punct,digit",
                  *kv_s = "f32";
static long window = 10, threads = 1;
static double dfrac = 0.5;
static int summary, exact;

int main(int argc, char **argv)
{
	ss_sink_params sp;
	sink_params_default(&sp);
	const ss_opt opts[] = {
		{"model", 'm', SS_OPT_STRING, &model_dir, "DIR", "model folder (config.json, *.safetensors)", NULL},
		{"output", 'o', SS_OPT_STRING, &out_path, "FILE", "write the table to FILE (default stdout)", NULL},
		{"window", 'w', SS_OPT_INT, &window, "N", "swap layers l_start-N+1 .. l_start (default 10)", NULL},
		{"components", 'c', SS_OPT_STRING, &comps_s, "LIST", "resid,attn_out,mlp_out (default all)", NULL},
		{"classes", 0, SS_OPT_STRING, &classes_s, "LIST", "control token classes (default space,punct,digit)", NULL},
		{"tau-cos", 0, SS_OPT_DOUBLE, &sp.tau_cos, "X", "sink rule: cosine threshold", NULL},
		{"tau-norm", 0, SS_OPT_DOUBLE, &sp.tau_norm, "X", "sink rule: norm over the layer median", NULL},
		{"kv", 0, SS_OPT_STRING, &kv_s, "TYPE", "KV cache f32 or bf16 (default f32)", NULL},
		{"exact", 0, SS_OPT_FLAG, &exact, NULL, "re-run the whole sequence for each swap", NULL},
		{"summary", 's', SS_OPT_FLAG, &summary, NULL, "print the suppression summary instead", NULL},
		{"decision-frac", 0, SS_OPT_DOUBLE, &dfrac, "X", "fraction suppressed that marks a decision layer (0.5)", NULL},
		{"threads", 't', SS_OPT_INT, &threads, "N", "threads (default 1)", NULL},
		{0},
	};
	const ss_prog prog = {"swapexp", "[options] -m DIR TRACE.h5 EPISODES.tsv",
	                      "replace components of future sinks by control means and test the sink rule",
	                      opts};
	ss_err e = {0};
	ss_signals_install(prog.name);
	int first = ss_opt_parse(&prog, argc, argv, &e);
	if (first < 0)
		return ss_opt_exit(&prog, first, &e);
	ss_swap_opts o = {.window = window, .exact = exact,
	                  .dec = {.threads = (int)threads}};
	if (!model_dir)
		ss_err_status(&e, SS_EXIT_USAGE, "no model: give -m DIR");
	else if (argc - first != 2)
		ss_err_status(&e, SS_EXIT_USAGE, "expected TRACE.h5 EPISODES.tsv, got %d operands",
		              argc - first);
	else if (window < 1)
		ss_err_status(&e, SS_EXIT_USAGE, "--window %ld: must be at least 1", window);
	else if (threads < 1)
		ss_err_status(&e, SS_EXIT_USAGE, "--threads %ld: must be at least 1", threads);
	else if (!(dfrac > 0 && dfrac <= 1))
		ss_err_status(&e, SS_EXIT_USAGE, "--decision-frac %g: must be in (0, 1]", dfrac);
	if (e.status || swap_comps_parse(comps_s, &o.comps, &e) < 0 ||
	    kv_dtype_parse(kv_s, &o.dec.kv_dtype, &e) < 0) {
		ss_err_print(prog.name, &e);
		return SS_EXIT_USAGE;
	}
	if (tokclass_parse(classes_s, &o.classes, &e) < 0) {
		ss_err_print(prog.name, &e);
		return SS_EXIT_USAGE;
	}
	o.sp = sp;

	ss_model m = {0};
	ss_trace tr = {0};
	ss_swap_target *tg = NULL;
	ss_swap_row *rows = NULL;
	size_t n_tg = 0, n_rows = 0;
	ss_ofile of = {0};
	int rc = SS_EXIT_FAIL;
	if (model_load(&m, model_dir, &e) < 0 || trace_read(argv[first], &tr, &e) < 0 ||
	    swap_check_model(&tr, &m, &e) < 0 ||
	    swap_targets_read(argv[first + 1], tr.name, tr.T, tr.L, &tg, &n_tg, &e) < 0)
		goto done;
	if (!n_tg) {
		ss_err_set(&e, "%s: no secondary episode of trace %s", argv[first + 1], tr.name);
		goto done;
	}
	if (swap_run(&m, &tr, tg, n_tg, &o, &rows, &n_rows, NULL, &e) < 0)
		goto done;
	if (ss_ofile_open(&of, out_path, &e) < 0)
		goto done;
	if (summary)
		swap_write_summary(of.f, 1, tg, n_tg, rows, n_rows, window, dfrac);
	else
		swap_write_rows(of.f, 1, &tr, tg, rows, n_rows);
	if (ss_ofile_commit(&of, &e) < 0 || ss_close_stdout(&e) < 0)
		goto done;
	rc = 0;
done:
	if (rc)
		ss_err_print(prog.name, &e);
	free(rows);
	free(tg);
	trace_free(&tr);
	model_free(&m);
	ss_opt_free();
	return rc;
}
