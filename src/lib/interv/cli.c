/* cli.c - the options pcaprobe and swapexp share; see cli.h. */
#include "interv/cli.h"

#include "sinks/tokclass.h"
#include "util/ofile.h"

void interv_cli_default(ss_interv_cli *c)
{
	*c = (ss_interv_cli){.out_path = "-", .classes_s = "space,punct,digit",
	                     .threads = SS_THREADS_UNSET, .compute_s = "f32"};
	sink_params_default(&c->sp);
}

int interv_cli_check(ss_interv_cli *c, int operands, ss_err *e)
{
	if (!c->model_dir)
		return ss_err_status(e, SS_EXIT_USAGE, "-m, --model: missing; give -m DIR");
	if (operands != 2)
		return ss_err_status(e, SS_EXIT_USAGE, "expected TRACE.h5 EPISODES.tsv, got %d operands",
		                     operands);
	const char *outs[1] = {c->out_path}, *names[1] = {"-o"};
	if (ss_out_check(outs, names, 1, e) < 0)
		return -1;
	if (ss_opt_threads(&c->threads, e) < 0)
		return -1;
	if (mm_compute_parse(c->compute_s ? c->compute_s : "f32", &c->compute, e) < 0)
		return -1;
	if (ss_max_memory(c->max_mem_s, &c->max_mem, e) < 0)
		return -1;
	if (!(c->sp.tau_cos > -1 && c->sp.tau_cos < 1))
		return ss_err_status(e, SS_EXIT_USAGE, "--tau-cos: %g outside (-1, 1)", c->sp.tau_cos);
	if (!(c->sp.tau_norm > 0))
		return ss_err_status(e, SS_EXIT_USAGE, "--tau-norm: %g must be positive", c->sp.tau_norm);
	if (tokclass_parse(c->classes_s, &c->classes, e) < 0) {
		e->status = SS_EXIT_USAGE;
		return ss_err_prefix(e, "--classes");
	}
	return 0;
}
