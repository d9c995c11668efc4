/* sinkplant - write a planted sinkscope trace and its ground truth
 * (organism/plant.h, sinkplant(1)). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "organism/plant.h"
#include "util/err.h"
#include "util/ofile.h"
#include "util/opt.h"

int main(int argc, char **argv)
{
	plant_spec p;
	plant_defaults(&p);
	const char *out = NULL, *truth = NULL;
	const ss_opt opts[] = {
		{"n-layers", 0, SS_OPT_INT, &p.layers, "N", "number of layers (32)", NULL},
		{"layers", 0, SS_OPT_RENAMED, NULL, "n-layers", "a count; --layers is a layer list elsewhere", NULL},
		{"tokens", 0, SS_OPT_INT, &p.tokens, "N", "number of tokens (4096)", NULL},
		{"heads", 0, SS_OPT_INT, &p.heads, "N", "number of heads (8)", NULL},
		{"d-model", 0, SS_OPT_INT, &p.d_model, "N", "d_model attribute (64)", NULL},
		{"levels", 0, SS_OPT_STRING, &p.levels, "S:LIFE,...", "secondary levels (12:4,12:10,18:6; \"\" = none)", NULL},
		{"per-level", 0, SS_OPT_INT, &p.per_level, "N", "episodes per level (200)", NULL},
		{"valley", 0, SS_OPT_DOUBLE, &p.valley, "X", "depth of the primary sink-score valley (0.5)", NULL},
		{"slope-score", 0, SS_OPT_DOUBLE, &p.slope_score, "X", "d score_start / d ln mlp_norm (0.02)", NULL},
		{"slope-life", 0, SS_OPT_DOUBLE, &p.slope_life, "X", "d lifetime / d ln mlp_norm (4)", NULL},
		{"life-sd", 0, SS_OPT_DOUBLE, &p.life_sd, "X", "spread of lifetime within a level (0.8)", NULL},
		{"distractors", 0, SS_OPT_INT, &p.distractors, "N", "near-miss distractors of each kind (20)", NULL},
		{"primary2", 0, SS_OPT_INT, &p.primary2, "POS", "position of a second primary sink (5; 0 = none)", NULL},
		{"seed", 's', SS_OPT_INT, &p.seed, "N", "random seed (1)", NULL},
		{"output", 'o', SS_OPT_STRING, &out, "OUT.h5", "output trace (\"-\" = stdout)", NULL},
		{"truth", 0, SS_OPT_STRING, &truth, "FILE", "also write the ground truth as TSV", NULL},
		{0},
	};
	const ss_prog prog = {"sinkplant", "[options] -o OUT.h5 [--truth FILE]",
	                      "write a planted sinkscope trace and its ground truth", opts};
	ss_err e = {0};
	ss_signals_install(prog.name);
	int i = ss_opt_parse(&prog, argc, argv, &e);
	if (i < 0)
		return ss_opt_exit(&prog, i, &e);
	if (i != argc || !out) {
		ss_warn(prog.name, "%s (see --help)", !out ? "missing -o OUT.h5" : "unexpected operand");
		ss_opt_free();
		return SS_EXIT_USAGE;
	}
	const char *outs[2] = {out, truth}, *names[2] = {"-o", "--truth"};
	if (ss_out_check(outs, names, 2, &e) < 0)
		return ss_opt_exit(&prog, SS_OPT_ERR, &e);
	int rc = plant_check(&p, &e);
	char *cmd = rc ? NULL : ss_command_line(argc, argv, &e);
	if (!rc)
		rc = cmd ? plant_write(&p, cmd, out, truth, &e) : -1;
	free(cmd);
	rc = ss_main_end(prog.name, rc, &e);
	ss_opt_free();
	return rc;
}
