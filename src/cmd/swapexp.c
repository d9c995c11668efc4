/* swapexp - token swapping: where is the choice of a secondary sink made?
 * See swapexp(1) and swap.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/decode.h"
#include "util/err.h"
#include "util/mem.h"
#include "engine/model.h"
#include "util/ofile.h"
#include "util/opt.h"
#include "util/progress.h"
#include "sinks/sinks.h"
#include "interv/cli.h"
#include "interv/swap.h"
#include "sinks/tokclass.h"
#include "io/trace.h"

static const char *comps_s = "all", *kv_s = "f32";
static long window = 10;
static double dfrac = 0.5;
static int summary, exact;

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
		{"window", 'w', SS_OPT_INT, &window, "N", "swap layers l_start-N+1 .. l_start (default 10)", NULL},
		{"components", 0, SS_OPT_STRING, &comps_s, "LIST", "resid,attn_out,mlp_out (default all)", NULL},
		{"kv", 0, SS_OPT_STRING, &kv_s, "TYPE", "KV cache f32 or bf16 (default f32)", NULL},
		{"exact", 0, SS_OPT_FLAG, &exact, NULL, "re-run the whole sequence for each swap", NULL},
		{"summary", 0, SS_OPT_FLAG, &summary, NULL, "print the suppression summary instead", NULL},
		{"decision-frac", 0, SS_OPT_DOUBLE, &dfrac, "X", "fraction suppressed that marks a decision layer (0.5)", NULL},
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
	ss_swap_opts o = {.window = window, .exact = exact};
	if (interv_cli_check(&c, argc - first, &e) < 0)
		return ss_opt_exit(&prog, SS_OPT_ERR, &e);
	if (window < 1)
		ss_err_status(&e, SS_EXIT_USAGE, "--window: %ld must be at least 1", window);
	else if (!(dfrac > 0 && dfrac <= 1))
		ss_err_status(&e, SS_EXIT_USAGE, "--decision-frac: %g must be in (0, 1]", dfrac);
	else if (swap_comps_parse(comps_s, &o.comps, &e) < 0)
		ss_err_prefix(&e, "--components");
	else if (kv_dtype_parse(kv_s, &o.dec.kv_dtype, &e) < 0)
		ss_err_prefix(&e, "--kv");
	if (e.status) {
		e.status = SS_EXIT_USAGE;
		return ss_opt_exit(&prog, SS_OPT_ERR, &e);
	}
	o.dec.threads = (int)c.threads;
	o.dec.compute = c.compute;
	o.classes = c.classes;
	o.sp = c.sp;

	ss_model m = {0};
	ss_trace tr = {0};
	ss_swap_target *tg = NULL;
	ss_swap_row *rows = NULL;
	size_t n_tg = 0, n_rows = 0;
	ss_ofile of = {0};
	int rc = SS_EXIT_FAIL;
	if (model_load(&m, c.model_dir, &e) < 0 || trace_read(argv[first], &tr, &e) < 0 ||
	    swap_check_model(&tr, &m, &e) < 0 ||
	    swap_targets_read(argv[first + 1], tr.name, tr.T, tr.L, &tg, &n_tg, &e) < 0)
		goto done;
	if (!n_tg) {
		ss_err_set(&e, "%s: no secondary episode of trace %s", argv[first + 1], tr.name);
		goto done;
	}
	if (ss_mem_check(swap_memory(&m, &tr, tg, n_tg, &o), m.weight_bytes, c.max_mem, prog.name, m.dir,
	                 tr.name, tr.T, &e) < 0)
		goto done;
	ss_progress pg; /* on a terminal only (util/progress.h) */
	ss_progress_start(&pg, prog.name);
	o.progress = on_progress;
	o.progress_ctx = &pg;
	int r = swap_run(&m, &tr, tg, n_tg, &o, &rows, &n_rows, NULL, &e);
	ss_progress_end(&pg);
	if (r < 0)
		goto done;
	if (ss_ofile_open(&of, c.out_path, &e) < 0)
		goto done;
	if (summary)
		swap_write_summary(of.f, 1, tg, n_tg, rows, n_rows, window, dfrac);
	else
		swap_write_rows(of.f, 1, &tr, tg, rows, n_rows);
	if (ss_ofile_commit(&of, &e) < 0)
		goto done;
	rc = 0;
done:
	free(rows);
	free(tg);
	trace_free(&tr);
	model_free(&m);
	ss_opt_free();
	return ss_main_end(prog.name, rc ? -1 : 0, &e);
}
