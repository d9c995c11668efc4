/* tracecat - test tool: read a sinkscope trace with the library and print
 * every attribute, token and stat value as text (%.9g), so a test can
 * compare it with an independent reader (h5py); -o writes a copy with the
 * library's writer ("-" = an HDF5 image on stdout); -a COMP:LAYER also
 * prints one layer of /acts/COMP.
 *   usage: tracecat [-o OUT] [-a COMP:LAYER] FILE|-                       */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "io/h5io.h"
#include "util/ofile.h"
#include "util/opt.h"
#include "io/trace.h"
#include "io/tsv.h"

static const char *out, *acts;
static const ss_opt opts[] = {
	{"output", 'o', SS_OPT_STRING, &out, "OUT", "write a copy (\"-\" = stdout image)", NULL},
	{"acts", 'a', SS_OPT_STRING, &acts, "COMP:LAYER", "also print one layer of /acts/COMP", NULL},
	{0},
};
static const ss_prog prog = {"tracecat", "[-o OUT] [-a COMP:LAYER] FILE", "dump a trace", opts};

static void vals(const char *name, const float *x, size_t n)
{
	printf("%s", name);
	for (size_t i = 0; i < n; i++)
		printf(" %.9g", x[i]);
	printf("\n");
}

int main(int argc, char **argv)
{
	ss_err e = {0};
	ss_signals_install("tracecat");
	int i = ss_opt_parse(&prog, argc, argv, &e);
	if (i == SS_OPT_EXIT)
		return 0;
	if (i < 0 || i != argc - 1) {
		if (i >= 0)
			ss_err_status(&e, 2, "expected one FILE");
		ss_err_print("tracecat", &e);
		return e.status;
	}
	ss_h5 *f = NULL;
	ss_trace tr;
	if (h5_open(&f, argv[i], &e) || trace_read_h5(f, &tr, &e)) {
		h5_close(f);
		ss_err_print("tracecat", &e);
		return 1;
	}
	if (out) {
		ss_h5 *g;
		if (h5_create(&g, out, &e) || trace_write_h5(g, &tr, &e) ||
		    trace_acts_copy(g, f, &e)) {
			h5_close(g);
			ss_err_print("tracecat", &e);
			return 1;
		}
		if (h5_commit(g, &e)) {
			ss_err_print("tracecat", &e);
			return 1;
		}
		h5_close(f);
		trace_free(&tr);
		return 0;
	}
	ss_meta *m = &tr.meta;
	printf("name %s\nformat %ld\nmodel %s\narchitecture %s\nweight_dtype %s\ngenerator %s\n"
	       "command %s\n", tr.name, m->format, m->model, m->architecture, m->weight_dtype,
	       m->generator, m->command);
	printf("n_layers %ld\nd_model %ld\nn_heads %ld\nn_kv_heads %ld\nhead_dim %ld\nT %ld\n",
	       m->n_layers, m->d_model, m->n_heads, m->n_kv_heads, m->head_dim, tr.T);
	for (long j = 0; j < tr.T; j++) {
		printf("tok %ld %d ", j, tr.ids[j]);
		tsv_put_escaped(stdout, tr.text[j], strlen(tr.text[j]));
		printf("\n");
	}
	size_t L = (size_t)tr.L, T = (size_t)tr.T, H = (size_t)tr.H;
	vals("resid_norm", tr.resid_norm, (L + 1) * T);
	vals("resid_cos0", tr.resid_cos0, (L + 1) * T);
	vals("attn_out_norm", tr.attn_out_norm, L * T);
	vals("mlp_out_norm", tr.mlp_out_norm, L * T);
	vals("recv", tr.recv, L * H * T);
	if (acts) {
		char comp[64];
		long layer;
		float *x;
		long tt, d;
		if (sscanf(acts, "%63[^:]:%ld", comp, &layer) != 2) {
			fprintf(stderr, "tracecat: bad -a\n");
			return 2;
		}
		if (trace_acts_read(f, comp, layer, &x, &tt, &d, &e)) {
			ss_err_print("tracecat", &e);
			return 1;
		}
		vals("acts", x, (size_t)(tt * d));
		free(x);
	}
	h5_close(f);
	trace_free(&tr);
	if (ss_close_stdout(&e)) {
		ss_err_print("tracecat", &e);
		return 1;
	}
	return 0;
}
