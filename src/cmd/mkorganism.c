/* mkorganism - build the model organism (organism.h, mkorganism(1)). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/ofile.h"
#include "util/opt.h"
#include "io/h5io.h"
#include "organism/organism.h"

/* --truth: the planted truth of each trace, gathered in memory first so
 * that a bad trace leaves no partial table */
static int truth_of(const char *dir, char **files, int n, ss_err *e)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return ss_err_set(e, "out of memory");
	fputs("trace\tpos\ttoken\tfuture\tlevel\tl_start\tlifetime\tnorm\ttriggers\n", m);
	int bad = 0;
	for (int k = 0; k < n && !bad; k++) {
		ss_h5 *h = NULL;
		int32_t *ids = NULL;
		size_t dims[H5IO_MAX_RANK];
		const char *b = strrchr(files[k], '/');
		bad = h5_open(&h, files[k], e) < 0 || h5_read_i32(h, "/tokens/ids", 1, NULL, &ids, dims, e) < 0 ||
		      org_occurrences(dir, b ? b + 1 : files[k], ids, (long)dims[0], m, e) < 0;
		free(ids);
		h5_close(h);
	}
	fclose(m);
	if (!bad)
		fwrite(buf, 1, len, stdout);
	free(buf);
	return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
	const char *out = NULL, *dtype = NULL, *truth = NULL;
	ss_opt opts[] = {
		{"output", 'o', SS_OPT_STRING, &out, "DIR", "model folder to write (required)", NULL},
		{"dtype", 0, SS_OPT_STRING, &dtype, "T", "weight dtype: f32, bf16 or f16 (overrides the spec)", NULL},
		{"truth", 0, SS_OPT_STRING, &truth, "DIR", "print the planted truth of traces for organism DIR", NULL},
		{NULL, 0, 0, NULL, NULL, NULL, NULL},
	};
	ss_prog prog = {"mkorganism", "[--dtype T] -o DIR [SPEC]\n--truth DIR FILE.h5 ...",
	                "build a small Qwen2 model with planted attention sinks", opts};
	ss_err e = {0};
	ss_signals_install(prog.name);
	int i = ss_opt_parse(&prog, argc, argv, &e);
	if (i < 0)
		return ss_opt_exit(&prog, i, &e);
	if (truth) {
		if (out || dtype || argc - i < 1)
			ss_err_status(&e, SS_EXIT_USAGE, "%s (see --help)",
			              argc - i < 1 ? "--truth needs FILE.h5 operands" : "--truth goes without -o and --dtype");
		int rc = e.status ? -1 : truth_of(truth, argv + i, argc - i, &e);
		ss_opt_free();
		return ss_main_end(prog.name, rc, &e);
	}
	st_dtype dt = ST_F32;
	if (!out || argc - i > 1)
		ss_err_status(&e, SS_EXIT_USAGE, "%s (see --help)", !out ? "missing -o DIR" : "at most one SPEC");
	else if (!*out)
		ss_err_status(&e, SS_EXIT_USAGE, "-o: an empty path, expected a folder");
	else if (dtype && st_dtype_parse(dtype, &dt) < 0)
		ss_err_status(&e, SS_EXIT_USAGE, "--dtype: '%s', expected f32, bf16 or f16", dtype);
	int rc = e.status ? -1 : 0;
	org_spec s;
	char def[4200];
	if (rc == 0)
		rc = org_spec_load(&s, argc - i == 1 ? argv[i] : org_spec_default(def, sizeof def), &e);
	if (rc == 0) {
		if (dtype)
			s.dtype = dt;
		rc = org_build(&s, out, &e);
		org_spec_free(&s);
	}
	ss_opt_free();
	return ss_main_end(prog.name, rc, &e);
}
