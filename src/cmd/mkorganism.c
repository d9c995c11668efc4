/* mkorganism - build the model organism (organism.h, mkorganism(1)). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	if (!out || argc - i > 1) {
		ss_warn(prog.name, "%s (see --help)", !out ? "missing -o DIR" : "at most one SPEC");
		return SS_EXIT_USAGE;
	}
	const char *spec = argc - i == 1 ? argv[i] : "examples/organism.yaml";
	org_spec s;
	int rc = SS_EXIT_FAIL;
	if (org_spec_load(&s, spec, &e) < 0)
		goto fail;
	if (dtype) {
		if (!strcmp(dtype, "f32"))
			s.dtype = ST_F32;
		else if (!strcmp(dtype, "bf16"))
			s.dtype = ST_BF16;
		else if (!strcmp(dtype, "f16"))
			s.dtype = ST_F16;
		else {
			ss_err_status(&e, SS_EXIT_USAGE, "--dtype: '%s', expected f32, bf16 or f16", dtype);
			org_spec_free(&s);
			goto fail;
		}
	}
	rc = org_build(&s, out, &e);
	org_spec_free(&s);
	if (rc < 0)
		goto fail;
	if (ss_close_stdout(&e) < 0)
		goto fail;
	ss_opt_free();
	return 0;
fail:
	ss_err_print(prog.name, &e);
	ss_opt_free();
	return e.status ? e.status : SS_EXIT_FAIL;
}
