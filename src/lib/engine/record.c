/* record.c - a forward pass recorded as a trace; see record.h. */
#include "engine/record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "engine/attention.h"
#include "engine/kernels.h"
#include "io/stconv.h"
#include "util/cpu.h"
#include "util/opt.h"
#include "util/progress.h"

int rec_acts_parse(const char *s, int on[SS_HOOK_N], ss_err *e)
{
	memset(on, 0, sizeof(int) * SS_HOOK_N);
	if (!s)
		return 0;
	char buf[256];
	snprintf(buf, sizeof buf, "%s", s);
	for (char *sv, *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
		int k = -1;
		for (int i = 0; i < SS_HOOK_N; i++)
			if (!strcmp(t, ss_hook_names[i]))
				k = i;
		if (!strcmp(t, "all"))
			for (int i = 0; i < SS_HOOK_N; i++)
				on[i] = 1;
		else if (k < 0)
			return ss_err_status(e, SS_EXIT_USAGE,
			                     "--acts: unknown component '%s' (resid, attn_out, mlp_in, mlp_out)", t);
		else
			on[k] = 1;
	}
	return 0;
}

int rec_acts_plan(ss_rec_acts *a, const int on[SS_HOOK_N], const unsigned char *layers, long L,
                  ss_err *e)
{
	memset(a, 0, sizeof *a);
	a->L = L;
	for (int k = 0; k < SS_HOOK_N; k++) {
		if (!on[k])
			continue;
		a->on[k] = 1;
		a->n_on++;
		a->mask[k] = ss_calloc((size_t)L + 1, 1, "layers", e);
		a->index[k] = ss_calloc((size_t)L + 1, sizeof(long), "layers", e);
		if (!a->mask[k] || !a->index[k])
			return -1;
		for (long l = k == SS_HOOK_RESID ? 0 : 1; l <= L; l++)
			if (layers[l]) {
				a->mask[k][l] = 1;
				a->index[k][l] = a->n_sel[k]++;
			}
		if (!a->n_sel[k])
			return ss_err_status(e, SS_EXIT_USAGE,
			                     "no layer of %s selected (layer 0 exists only for resid)",
			                     ss_hook_names[k]);
	}
	return 0;
}

void rec_acts_free(ss_rec_acts *a)
{
	for (int k = 0; k < SS_HOOK_N; k++) {
		free(a->mask[k]);
		free(a->index[k]);
		free(a->buf[k]);
	}
	memset(a, 0, sizeof *a);
}

double rec_memory(const ss_config *c, const ss_rec_acts *a, long T, int threads, int image)
{
	long L = c->n_layers, D = c->dim, H = c->n_heads;
	double acts_bytes = 0;
	for (int k = 0; k < SS_HOOK_N; k++)
		if (a->on[k])
			acts_bytes += (double)a->n_sel[k] * (double)T * (double)D * 4;
	return fwd_memory_estimate(c, T, threads, 0) + trace_stats_bytes(L, T, H) +
	       4.0 * a->n_on * (double)T * (double)D +
	       (image ? trace_stats_bytes(L, T, H) + acts_bytes : 0);
}

int rec_trace_init(ss_trace *tr, const ss_model *M, const int32_t *ids, long T, char **pieces,
                   const char *name, const char *model_dir, const char *generator,
                   const char *command, ss_err *e)
{
	const ss_config *c = &M->c;
	if (trace_alloc(tr, c->n_layers, T, c->n_heads, e) < 0)
		return -1;
	memcpy(tr->ids, ids, sizeof(int32_t) * (size_t)T);
	if (pieces) { /* /tokens/text: the decoded piece of each token */
		for (long j = 0; j < T; j++) {
			free(tr->text[j]);
			tr->text[j] = pieces[j];
			pieces[j] = NULL;
		}
	}
	tr->name = ss_strdup(name, e);
	ss_meta *m = &tr->meta;
	m->format = SS_FORMAT;
	m->model = ss_strdup(model_dir, e);
	m->architecture = ss_strdup(c->arch, e);
	m->weight_dtype = ss_strdup(M->weight_dtype, e);
	m->generator = ss_strdup(generator, e);
	m->command = ss_strdup(command, e);
	m->n_layers = c->n_layers;
	m->d_model = c->dim;
	m->n_heads = c->n_heads;
	m->n_kv_heads = c->n_kv_heads;
	m->head_dim = c->head_dim;
	if (!tr->name || !m->model || !m->architecture || !m->weight_dtype || !m->generator ||
	    !m->command) {
		trace_free(tr);
		return -1;
	}
	return 0;
}

/* /acts/<component> created up front, then written one layer at a time */
static int acts_open(ss_rec_acts *a, ss_h5 *h5, long T, long D, ss_err *e)
{
	a->h5 = h5;
	a->T = T;
	a->D = D;
	for (int k = 0; k < SS_HOOK_N; k++) {
		if (!a->on[k])
			continue;
		a->buf[k] = ss_malloc((size_t)(T * D), sizeof(float), "activations", e);
		long *sel = ss_malloc((size_t)a->L + 1, sizeof(long), "layers", e);
		if (!a->buf[k] || !sel) {
			free(sel);
			return -1;
		}
		size_t n_sel = 0;
		for (long l = 0; l <= a->L; l++)
			if (a->mask[k][l])
				sel[n_sel++] = l;
		int r = trace_acts_create(h5, ss_hook_names[k], sel, n_sel, T, D, e);
		free(sel);
		if (r < 0)
			return -1;
	}
	return 0;
}

static int capture_hook(void *ctx, int layer, ss_hook_point what, long t0, long n, float *x, long d)
{
	ss_rec_acts *c = ctx;
	if (c->on[what] && c->mask[what][layer])
		memcpy(c->buf[what] + t0 * c->D, x, sizeof(float) * (size_t)(n * d));
	/* resid of the last block ends the layer: every component is complete */
	if (what != SS_HOOK_RESID || t0 + n != c->T)
		return 0;
	double t = ss_now();
	for (int k = 0; k < SS_HOOK_N; k++)
		if (c->on[k] && c->mask[k][layer] &&
		    trace_acts_write(c->h5, ss_hook_names[k], (size_t)c->index[k][layer], c->buf[k], &c->err) < 0)
			return -1;
	c->write_s += ss_now() - t;
	return 0;
}

typedef struct prog_ctx { ss_progress p; long T; const char *prog; char what[64]; } prog_ctx;

static void on_layer(void *ctx, int done, int L)
{
	prog_ctx *pc = ctx;
	snprintf(pc->what, sizeof pc->what, "%s: layer %d/%d", pc->prog, done, L);
	pc->p.what = pc->what;
	ss_progress_update(&pc->p, (double)done * (double)pc->T / L, (double)pc->T, "tok");
}

static double cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
	       (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

int rec_run(const ss_model *M, const int32_t *ids, long T, int threads, ss_compute compute,
            ss_fwd_keep *keep, ss_rec_acts *a, ss_trace *tr, ss_h5 *h5, const char *prog,
            ss_rec_times *times, ss_err *e)
{
	if (a->n_on && acts_open(a, h5, T, M->c.dim, e) < 0)
		return -1;
	prog_ctx pc = {.T = T, .prog = prog};
	ss_progress_start(&pc.p, prog);
	ss_fwd_opts fo = {.threads = threads, .compute = compute, .hook = a->n_on ? capture_hook : NULL, .hook_ctx = a,
	                  .progress = on_layer, .progress_ctx = &pc, .keep = keep};
	double t0 = ss_now(), c0 = cpu_seconds();
	ss_fwd *fwd = NULL;
	int rc = fwd_create(&fwd, M, &fo, T, e);
	const ss_config *c = &M->c;
	if (rc == 0 && c->n_experts) { /* /stats/moe_experts, /stats/moe_weights */
		tr->K = c->top_k;
		tr->n_experts = c->n_experts;
		if (!(tr->moe_experts = ss_calloc((size_t)(c->n_layers * T * tr->K), sizeof(int32_t),
		                                  "/stats/moe_experts", e)) ||
		    !(tr->moe_weights = ss_calloc((size_t)(c->n_layers * T * tr->K), sizeof(float),
		                                  "/stats/moe_weights", e)))
			rc = -1;
	}
	if (rc == 0) {
		ss_stats st = {tr->resid_norm, tr->resid_cos0, tr->attn_out_norm, tr->mlp_out_norm, tr->recv,
		               tr->moe_experts, tr->moe_weights};
		rc = fwd_prefill(fwd, ids, T, &st, NULL, e);
		if (rc < 0 && a->err.status) /* the capture hook's own message */
			*e = a->err;
	}
	ss_progress_end(&pc.p);
	if (rc == 0 && times) {
		times->forward = ss_now() - t0;
		times->cpu = cpu_seconds() - c0;
		times->write_acts = a->write_s;
		fwd_times(fwd, &times->parts);
	}
	fwd_free(fwd);
	return rc;
}

void rec_times_print(FILE *f, const char *prog, long T, long L, int threads, const ss_rec_times *t,
                     double write_s)
{
	const ss_fwd_times *ft = &t->parts;
	double compute = t->forward - t->write_acts;
	fprintf(f, "%s: %ld tokens, %ld layers, %d threads: forward %.3f s (%.2f tok/s), "
	        "of which writing activations %.3f s; compute %.3f s (%.2f tok/s); final write %.3f s; "
	        "cpu %.3f s (%.2f tok/s per %d threads)\n",
	        prog, T, L, threads, t->forward, (double)T / t->forward, t->write_acts, compute,
	        (double)T / compute, write_s, t->cpu, (double)T * (double)threads / t->cpu, threads);
	fprintf(f, "%s: time: projections %.3f s (%.6g GFLOP, %.1f GFLOP/s), attention %.3f s "
	        "(%.6g GFLOP, %.1f GFLOP/s), weight conversion %.3f s, row kernels %.3f s, paging %.3f s, "
	        "rest %.3f s; matrices packed %ld, kept from an earlier sequence %ld\n",
	        prog, ft->linear, ft->linear_flop / 1e9, ft->linear_flop / ft->linear / 1e9, ft->attention,
	        ft->attention_flop / 1e9, ft->attention_flop / ft->attention / 1e9, ft->convert, ft->rows,
	        ft->pages, t->forward - fwd_times_parts(ft), ft->packed, ft->kept);
	fprintf(f, "%s: kernels (%s): attention %s (bf16 compute: %s), rows %s, bf16/f16 rows %s\n", prog,
	        ss_isa_name(ss_cpu_isa()), attn_kernels_name(), attn_kernels16_name(), k_kernels_name(),
	        st_conv_kernels_name());
}
