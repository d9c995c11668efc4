/* genstats.c - statistics recorded during generation; see genstats.h. */
#include "engine/genstats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels.h"

double gst_bytes(const ss_config *c, long cap)
{
	double L = (double)c->n_layers, T = (double)cap;
	return 4.0 * (2 * (L + 1) * T + 2 * L * T) + 8.0 * L * c->n_heads * T + 4.0 * (L + 1) * c->dim +
	       8.0 * (L + 1);
}

int gst_init(ss_genstats *g, const ss_config *c, long cap, ss_err *e)
{
	long L = c->n_layers;
	*g = (ss_genstats){.L = L, .H = c->n_heads, .D = c->dim, .cap = cap};
	g->resid_norm = ss_calloc((size_t)(L + 1) * cap, sizeof(float), "generation stats", e);
	g->resid_cos0 = ss_calloc((size_t)(L + 1) * cap, sizeof(float), "generation stats", e);
	g->attn_out_norm = ss_calloc((size_t)L * cap, sizeof(float), "generation stats", e);
	g->mlp_out_norm = ss_calloc((size_t)L * cap, sizeof(float), "generation stats", e);
	g->recv = ss_calloc((size_t)L * g->H * cap, sizeof(double), "generation stats", e);
	g->h0 = ss_calloc((size_t)(L + 1) * g->D, sizeof(float), "generation stats", e);
	g->h0n = ss_calloc((size_t)L + 1, sizeof(double), "generation stats", e);
	if (!g->resid_norm || !g->resid_cos0 || !g->attn_out_norm || !g->mlp_out_norm || !g->recv ||
	    !g->h0 || !g->h0n) {
		gst_free(g);
		return -1;
	}
	return 0;
}

void gst_free(ss_genstats *g)
{
	free(g->resid_norm);
	free(g->resid_cos0);
	free(g->attn_out_norm);
	free(g->mlp_out_norm);
	free(g->recv);
	free(g->h0);
	free(g->h0n);
	*g = (ss_genstats){0};
}

/* the same formulas as the prefill's (forward.c stats_resid and row norms) */
void gst_observe(ss_genstats *g, int layer, ss_hook_point what, long t0, long n, const float *x)
{
	long D = g->D, cap = g->cap;
	if (t0 < 0 || t0 + n > cap)
		return;
	if (what == SS_HOOK_RESID) {
		if (t0 == 0) {
			memcpy(g->h0 + (size_t)layer * D, x, (size_t)D * sizeof *x);
			g->h0n[layer] = sqrt(k_sumsq(x, D));
		}
		const float *h0 = g->h0 + (size_t)layer * D;
		double n0 = g->h0n[layer];
		for (long i = 0; i < n; i++) {
			const float *r = x + i * D;
			double nj = sqrt(k_sumsq(r, D));
			g->resid_norm[layer * cap + t0 + i] = (float)nj;
			g->resid_cos0[layer * cap + t0 + i] =
			    (float)(nj > 0 && n0 > 0 ? k_dot(r, h0, D) / (nj * n0) : 0.0);
		}
		if (layer == g->L && t0 + n > g->n)
			g->n = t0 + n;
	} else if (what == SS_HOOK_ATTN_OUT || what == SS_HOOK_MLP_OUT) {
		float *o = (what == SS_HOOK_ATTN_OUT ? g->attn_out_norm : g->mlp_out_norm) +
		           (layer - 1) * cap + t0;
		for (long i = 0; i < n; i++)
			o[i] = (float)sqrt(k_sumsq(x + i * D, D));
	}
}

double *gst_recv_sum(ss_genstats *g, int l)
{
	return g->recv + (size_t)(l - 1) * g->H * g->cap;
}

int gst_fill(const ss_genstats *g, long T, ss_stats *st, ss_err *e)
{
	long L = g->L, H = g->H, cap = g->cap;
	if (T < 1 || T > g->n)
		return ss_err_set(e, "generation stats: %ld positions asked for, %ld recorded", T, g->n);
	for (long l = 0; l <= L; l++) {
		if (st->resid_norm)
			memcpy(st->resid_norm + l * T, g->resid_norm + l * cap, (size_t)T * sizeof(float));
		if (st->resid_cos0)
			memcpy(st->resid_cos0 + l * T, g->resid_cos0 + l * cap, (size_t)T * sizeof(float));
		if (l == L)
			break;
		if (st->attn_out_norm)
			memcpy(st->attn_out_norm + l * T, g->attn_out_norm + l * cap, (size_t)T * sizeof(float));
		if (st->mlp_out_norm)
			memcpy(st->mlp_out_norm + l * T, g->mlp_out_norm + l * cap, (size_t)T * sizeof(float));
		if (st->recv)
			for (long h = 0; h < H; h++)
				for (long j = 0; j < T; j++)
					st->recv[(l * H + h) * T + j] =
					    (float)(g->recv[(l * H + h) * cap + j] / (double)(T - j));
	}
	return 0;
}
