/* mkorganism - build the model organism (organism.h, mkorganism(1)). */
#include <stdio.h>

#include "util/err.h"
#include "util/ofile.h"
#include "util/opt.h"
#include "organism/organism.h"

int main(int argc, char **argv)
{
	const char *out = NULL, *dtype = NULL;
	ss_opt opts[] = {
		{"output", 'o', SS_OPT_STRING, &out, "DIR", "model folder to write (required)", NULL},
		{"dtype", 0, SS_OPT_STRING, &dtype, "T", "weight dtype: f32, bf16 or f16 (overrides the spec)", NULL},
		{NULL, 0, 0, NULL, NULL, NULL, NULL},
	};
	ss_prog prog = {"mkorganism", "[--dtype T] -o DIR [SPEC]",
	                "build a small Qwen2 model with planted attention sinks", opts};
	ss_err e = {0};
	ss_signals_install(prog.name);
	int i = ss_opt_parse(&prog, argc, argv, &e);
	if (i < 0)
		return ss_opt_exit(&prog, i, &e);
	st_dtype dt = ST_F32;
	if (!out || argc - i > 1)
		ss_err_status(&e, SS_EXIT_USAGE, "%s (see --help)", !out ? "missing -o DIR" : "at most one SPEC");
	else if (dtype && st_dtype_parse(dtype, &dt) < 0)
		ss_err_status(&e, SS_EXIT_USAGE, "--dtype: '%s', expected f32, bf16 or f16", dtype);
	int rc = e.status ? -1 : 0;
	org_spec s;
	if (rc == 0)
		rc = org_spec_load(&s, argc - i == 1 ? argv[i] : "examples/organism.yaml", &e);
	if (rc == 0) {
		if (dtype)
			s.dtype = dt;
		rc = org_build(&s, out, &e);
		org_spec_free(&s);
	}
	ss_opt_free();
	return ss_main_end(prog.name, rc, &e);
}
