/* probe.c - PCA of MLP inputs and the MLP's response (see probe.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "interv/probe.h"
#include "sinks/tokclass.h"
#include "io/tsv.h"
#include "engine/kernels.h"

static double normf(const float *a, long n) { return sqrt(k_sumsq(a, n)); }

static double cos_u(const float *y, const float *u, long n)
{
	double ny = normf(y, n);
	return ny > 0 ? k_dot(y, u, n) / ny : 0; /* u is unit */
}

void probe_free(ss_probe *p)
{
	for (long i = 0; p->comp && i < p->k; i++) {
		free(p->comp[i].gain);
		free(p->comp[i].cos_u);
	}
	free(p->comp);
	free(p->sink);
	free(p->pcs);
	*p = (ss_probe){0};
}

int probe_run(ss_dec *d, const ss_trace *tr, long layer, const float *x, const float *h0,
              const ss_swap_target *tg, size_t n_tg, int k, const double *alpha, long n_alpha,
              int fit_nonsink, const ss_sink_params *sp, unsigned classes, ss_probe *out,
              ss_err *e)
{
	long T = tr->T, L = tr->L, D = tr->meta.d_model;
	int rc = -1;
	ss_pca pca = {0};
	unsigned char *ctl = ss_malloc(T, 1, "control set", e);
	unsigned char *mask = ss_malloc((size_t)(L + 1) * T, 1, "sink mask", e);
	float *fit = NULL, *in = NULL, *y = NULL, *u = ss_malloc(D, sizeof *u, "direction", e);
	*out = (ss_probe){.layer = layer, .k = k, .n_alpha = n_alpha, .alpha = alpha};
	if (!ctl || !mask || !u)
		goto done;
	double n0 = normf(h0, D);
	if (!(n0 > 0)) {
		ss_err_set(e, "%s: h[%ld][0] is zero: no primary sink direction", tr->name, layer);
		goto done;
	}
	for (long i = 0; i < D; i++)
		u[i] = (float)(h0[i] / n0);
	if (tokclass_controls(tr, sp, classes, ctl, e) < 0 || sink_mask(tr, sp, mask, e) < 0)
		goto done;
	for (long j = 0; j < T; j++)
		out->n_controls += ctl[j];
	for (size_t t = 0; t < n_tg; t++)
		out->n_sinks += tg[t].l_start == layer;
	if (!out->n_sinks) {
		ss_err_set(e, "%s: no secondary episode starts at layer %ld", tr->name, layer);
		goto done;
	}
	if (!out->n_controls) {
		ss_err_set(e, "%s: empty control set: no token of the chosen classes is free of sinks",
		           tr->name);
		goto done;
	}
	/* the fit set */
	if (!(fit = ss_malloc((size_t)T * D, sizeof *fit, "PCA inputs", e)))
		goto done;
	long nf = 0;
	for (long j = 1; j < T; j++) {
		int sink = 0;
		for (long l = 0; fit_nonsink && l <= L && !sink; l++)
			sink = mask[(size_t)l * T + j];
		if (!sink)
			memcpy(fit + (size_t)nf++ * D, x + (size_t)j * D, D * sizeof *fit);
	}
	out->n_fit = nf;
	long kmax = nf < D ? nf : D;
	if (nf < 2 || k > kmax) {
		ss_err_set(e, "%s: %ld positions to fit, %d components asked (at most %ld)", tr->name,
		           nf, k, nf >= 2 ? kmax : 0);
		goto done;
	}
	if (pca_fit(fit, nf, D, k, &pca, e) < 0)
		goto done;
	out->dim = D;
	if (!(out->pcs = ss_malloc((size_t)k * D, sizeof *out->pcs, "components", e)))
		goto done;
	memcpy(out->pcs, pca.comp, (size_t)k * D * sizeof *out->pcs);
	out->comp = ss_calloc(k, sizeof *out->comp, "components", e);
	out->sink = ss_calloc(out->n_sinks, sizeof *out->sink, "sinks", e);
	long nin = (long)k * n_alpha + 1;
	if (3 * out->n_sinks > nin)
		nin = 3 * out->n_sinks;
	in = ss_malloc((size_t)nin * D, sizeof *in, "MLP inputs", e);
	y = ss_malloc((size_t)nin * D, sizeof *y, "MLP outputs", e);
	if (!out->comp || !out->sink || !in || !y)
		goto done;
	/* component table: the mean, then mean + alpha sigma pc per (i, alpha) */
	for (long q = 0; q < D; q++)
		in[q] = (float)pca.mean[q];
	for (int i = 0; i < k; i++) {
		double sig = sqrt(pca.var[i] > 0 ? pca.var[i] : 0);
		for (long a = 0; a < n_alpha; a++) {
			float *r = in + (size_t)(1 + i * n_alpha + a) * D;
			for (long q = 0; q < D; q++)
				r[q] = (float)(pca.mean[q] + alpha[a] * sig * pca.comp[(size_t)i * D + q]);
		}
	}
	if (dec_mlp(d, (int)layer, in, (long)k * n_alpha + 1, y, e) < 0)
		goto done;
	double ybase = normf(y, D);
	for (int i = 0; i < k; i++) {
		ss_probe_comp *c = &out->comp[i];
		c->var_ratio = pca_ratio(&pca, i);
		c->gain = ss_malloc(n_alpha, sizeof *c->gain, "gains", e);
		c->cos_u = ss_malloc(n_alpha, sizeof *c->cos_u, "cosines", e);
		if (!c->gain || !c->cos_u)
			goto done;
		for (long a = 0; a < n_alpha; a++) {
			float *r = y + (size_t)(1 + i * n_alpha + a) * D;
			/* the mean itself (alpha 0, or a component of variance 0): its
			 * response is 0 exactly, not the few ulps by which a GEMM's
			 * rows of one input may differ (OpenBLAS's Haswell sgemm: cos_u
			 * 0.12 of noise where numpy's is 0) */
			if (!memcmp(in + (size_t)(1 + i * n_alpha + a) * D, in, (size_t)D * sizeof *in))
				memcpy(r, y, (size_t)D * sizeof *r);
			c->gain[a] = ybase > 0 ? normf(r, D) / ybase : 0;
			for (long q = 0; q < D; q++) /* the response: MLP(point) - MLP(mean) */
				r[q] -= y[q];
			c->cos_u[a] = cos_u(r, u, D);
		}
		const double *pc = pca.comp + (size_t)i * D;
		double ss = 0, sc = 0;
		for (long j = 1; j < T; j++) {
			int is_s = 0;
			for (size_t t = 0; t < n_tg && !is_s; t++)
				is_s = tg[t].l_start == layer && tg[t].pos == j;
			if (!is_s && !ctl[j])
				continue;
			double p = 0;
			for (long q = 0; q < D; q++)
				p += (x[(size_t)j * D + q] - pca.mean[q]) * pc[q];
			if (is_s)
				ss += p;
			else
				sc += p;
		}
		c->proj_sinks = ss / out->n_sinks;
		c->proj_controls = sc / out->n_controls;
	}
	/* per sink: x, x_par, x_perp through the MLP */
	long s = 0;
	for (size_t t = 0; t < n_tg; t++) {
		if (tg[t].l_start != layer)
			continue;
		const float *xj = x + (size_t)tg[t].pos * D;
		float *full = in + (size_t)3 * s * D, *par = full + D, *perp = par + D;
		memcpy(full, xj, D * sizeof *full);
		double all2 = k_sumsq(xj, D);
		for (long q = 0; q < D; q++)
			par[q] = 0;
		for (int i = 0; i < k; i++) {
			const double *pc = pca.comp + (size_t)i * D;
			double c = 0;
			for (long q = 0; q < D; q++)
				c += xj[q] * pc[q];
			for (long q = 0; q < D; q++)
				par[q] += (float)(c * pc[q]);
		}
		for (long q = 0; q < D; q++)
			perp[q] = xj[q] - par[q];
		double par2 = k_sumsq(par, D);
		out->sink[s].pos = tg[t].pos;
		out->sink[s].frac_par = all2 > 0 ? par2 / all2 : 0;
		s++;
	}
	if (dec_mlp(d, (int)layer, in, 3 * out->n_sinks, y, e) < 0)
		goto done;
	for (long i = 0; i < out->n_sinks; i++)
		for (int w = 0; w < 3; w++) {
			const float *r = y + (size_t)(3 * i + w) * D;
			out->sink[i].norm[w] = normf(r, D);
			out->sink[i].cos_u[w] = cos_u(r, u, D);
		}
	rc = 0;
done:
	if (rc)
		probe_free(out);
	pca_free(&pca);
	free(ctl);
	free(mask);
	free(fit);
	free(in);
	free(y);
	free(u);
	return rc;
}

void probe_write_comps(FILE *f, int header, const ss_trace *tr, const ss_probe *p)
{
	if (header)
		fputs("trace\tl_start\tcomponent\tvar_ratio\tcum_ratio\tproj_sinks\tproj_controls\t"
		      "alpha\tgain\tcos_u\n", f);
	double cum = 0;
	for (long i = 0; i < p->k; i++) {
		const ss_probe_comp *c = &p->comp[i];
		cum += c->var_ratio;
		for (long a = 0; a < p->n_alpha; a++) {
			tsv_put_escaped(f, tr->name, strlen(tr->name));
			fprintf(f, "\t%ld\t%ld", p->layer, i + 1);
			double v[] = {c->var_ratio, cum, c->proj_sinks, c->proj_controls, p->alpha[a],
			              c->gain[a], c->cos_u[a]};
			tsv_put_row_end(f, v, sizeof v / sizeof *v);
		}
	}
}

void probe_write_sinks(FILE *f, int header, const ss_trace *tr, const ss_probe *p)
{
	if (header)
		fputs("trace\tl_start\tpos\ttoken\tfrac_par\tnorm_full\tcos_full\tnorm_par\tcos_par\t"
		      "norm_perp\tcos_perp\n", f);
	for (long i = 0; i < p->n_sinks; i++) {
		const ss_probe_sink *s = &p->sink[i];
		tsv_put_escaped(f, tr->name, strlen(tr->name));
		fprintf(f, "\t%ld\t%ld\t", p->layer, s->pos);
		tsv_put_escaped(f, tr->text[s->pos], strlen(tr->text[s->pos]));
		double v[] = {s->frac_par, s->norm[0], s->cos_u[0], s->norm[1], s->cos_u[1], s->norm[2],
		              s->cos_u[2]};
		tsv_put_row_end(f, v, sizeof v / sizeof *v);
	}
}

void probe_write_vectors(FILE *f, int header, const ss_trace *tr, const ss_probe *p)
{
	if (header)
		fputs("trace\tl_start\tcomponent\tvar_ratio\tvector\n", f);
	for (long i = 0; i < p->k; i++) {
		tsv_put_escaped(f, tr->name, strlen(tr->name));
		fprintf(f, "\t%ld\t%ld\t", p->layer, i + 1);
		tsv_put_double(f, p->comp[i].var_ratio);
		for (long q = 0; q < p->dim; q++)
			fprintf(f, "%c%.9g", q ? ',' : '\t', p->pcs[(size_t)i * p->dim + q]);
		fputc('\n', f);
	}
}

double probe_memory(const ss_model *m, const ss_trace *tr, const ss_swap_target *tg, size_t n_tg,
                    const ss_probe_plan *pl, const ss_dec_opts *dopt)
{
	const ss_config *c = &m->c;
	long L = tr->L;
	double T = (double)tr->T, D = (double)c->dim, kvd = (double)c->n_kv_heads * c->head_dim;
	double n_ls = 0, most = 0;   /* the l_starts probed; most future sinks at one */
	for (long l = 1; l <= L; l++) {
		double ns = 0;
		for (size_t t = 0; t < n_tg; t++)
			ns += tg[t].l_start == l;
		if (ns && (!pl->layer || pl->layer == l)) {
			n_ls++;
			most = ns > most ? ns : most;
		}
	}
	double k = pl->k, nin = k * pl->n_alpha + 1 > 3 * most ? k * pl->n_alpha + 1 : 3 * most;
	double rows = nin < SS_PROBE_CAP ? nin : SS_PROBE_CAP;
	/* one l_start at a time: x[ls] and h[ls] read, the fit set, the masks,
	 * the PCA, the MLP's inputs and outputs and dec_mlp's rows */
	double one = 4 * 3 * T * D + T + (double)(L + 1) * T + 4 * D + 8 * nin * D +
	             pca_memory(tr->T - 1, c->dim, pl->k) + 4 * rows * (D + 2 * kvd);
	/* what every probe keeps until the table is written */
	double kept = n_ls * (8 * k * D + k * (sizeof(ss_probe_comp) + 16 * pl->n_alpha) +
	                      most * sizeof(ss_probe_sink)) + (double)(L + 1) * (sizeof(ss_probe) + 1);
	return dec_memory_estimate(m, SS_PROBE_CAP, dopt, 0) + trace_stats_bytes(L, tr->T, c->n_heads) +
	       48 * T + kept + one;
}

int probe_run_all(ss_dec *d, ss_h5 *f, const ss_trace *tr, const ss_swap_target *tg, size_t n_tg,
                  const ss_probe_plan *pl, ss_probe *pr, unsigned char *probed, ss_err *e)
{
	long n_ls = 0, k_ls = 0; /* the l_starts to probe, for progress */
	memset(probed, 0, (size_t)tr->L + 1);
	for (size_t t = 0; t < n_tg; t++) {
		long ls = pl->layer ? pl->layer : tg[t].l_start;
		n_ls += !probed[ls];
		probed[ls] = 1;
	}
	memset(probed, 0, (size_t)tr->L + 1);
	float *x = NULL, *res = NULL;
	int rc = -1;
	for (size_t t = 0; t < n_tg; t++) {
		long ls = pl->layer ? pl->layer : tg[t].l_start, T, D;
		if (probed[ls])
			continue;
		probed[ls] = 1;
		if (pl->progress)
			pl->progress(pl->progress_ctx, (double)k_ls++, (double)n_ls);
		free(x);
		free(res);
		x = res = NULL;
		if (trace_acts_read(f, "mlp_in", ls, &x, &T, &D, e) < 0 ||
		    trace_acts_read(f, "resid", ls, &res, &T, &D, e) < 0 ||
		    probe_run(d, tr, ls, x, res, tg, n_tg, pl->k, pl->alpha, pl->n_alpha,
		              pl->fit_nonsink, &pl->sp, pl->classes, &pr[ls], e) < 0)
			goto done;
	}
	if (pl->progress)
		pl->progress(pl->progress_ctx, (double)n_ls, (double)n_ls);
	rc = 0;
done:
	free(x);
	free(res);
	return rc;
}
