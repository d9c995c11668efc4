/* kvevict_run.c - the passes of a KV-eviction run (the reference, one per
 * pair, the measurement) and the measures of the next-token distributions;
 * see kvevict.h. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/config.h"
#include "engine/kernels.h"
#include "io/st.h"
#include "interv/kvevict_int.h"

#define LOGIT_ROWS 64  /* positions per block of logits when comparing */

/* ---- measures ------------------------------------------------------------ */

/* log of the sum of exp(x): p[v] = exp(x[v] - max) (vectorized), *sum
 * their sum in double; *arg: the first largest entry */
static double logsumexp(const float *x, long n, float *p, double *sum, long *arg)
{
	float m = k_max(x, n);
	long a = 0;
	while (x[a] != m)
		a++;
	*arg = a;
	k_exp_shift_to(p, x, n, m);
	double t = 0;   /* the float exps summed in double: KL near 0 needs it */
	for (long v = 0; v < n; v++)
		t += (double)p[v];
	*sum = t;
	return (double)m + log(t);
}

/* NLL, KL and top-1 of every pair from the final hidden states */
static int compare(ss_fwd *f, const ss_model *m, const int32_t *ids, long T, const float *hf,
                   float *const *hp, kv_result *res, ss_err *e)
{
	long V = m->c.vocab, D = m->c.dim, N = T - 1;
	size_t np = res->np;
	float *lf = ss_malloc_big((size_t)(LOGIT_ROWS * V), 4, "logits", e);
	float *lp = lf ? ss_malloc_big((size_t)(LOGIT_ROWS * V), 4, "logits", e) : NULL;
	float *pf = lp ? ss_malloc_big((size_t)(LOGIT_ROWS * V), 4, "probabilities", e) : NULL;
	float *sc = pf ? ss_malloc((size_t)V, 4, "probabilities", e) : NULL;
	double *acc = sc ? ss_calloc(np * 3 + 1, sizeof *acc, "measures", e) : NULL;
	int rc = acc ? 0 : -1;
	for (long t0 = 0; !rc && t0 < N; t0 += LOGIT_ROWS) {
		long nr = N - t0 < LOGIT_ROWS ? N - t0 : LOGIT_ROWS;
		if (fwd_logits(f, hf + t0 * D, nr, lf, e) < 0) {
			rc = -1;
			break;
		}
		double lsef[LOGIT_ROWS], sf[LOGIT_ROWS];
		long argf[LOGIT_ROWS];
		for (long r = 0; r < nr; r++) {
			/* pf / sf: the reference's probabilities */
			lsef[r] = logsumexp(lf + r * V, V, pf + r * V, &sf[r], &argf[r]);
			acc[np * 3] += lsef[r] - (double)lf[r * V + ids[t0 + r + 1]];
		}
		for (size_t p = 0; p < np && !rc; p++) {
			if (!hp[p])
				continue;
			if (fwd_logits(f, hp[p] + t0 * D, nr, lp, e) < 0) {
				rc = -1;
				break;
			}
			for (long r = 0; r < nr; r++) {
				const float *a = lf + r * V, *b = lp + r * V, *q = pf + r * V;
				long argp;
				double sp, lsep = logsumexp(b, V, sc, &sp, &argp), kl = 0;
				/* KL = sum p_f (log p_f - log p) = sum p_f (a - b) + lse_p - lse_f,
				 * p_f = q / sf normalised by the very sum of its terms */
				for (long v = 0; v < V; v++)
					kl += (double)q[v] * ((double)a[v] - (double)b[v]);
				acc[p * 3] += lsep - (double)b[ids[t0 + r + 1]];
				kl = kl / sf[r] + (lsep - lsef[r]);
				acc[p * 3 + 1] += kl > 0 ? kl : 0.0;   /* rounding dips below 0 when p = p_f */
				acc[p * 3 + 2] += argp == argf[r];
			}
		}
	}
	if (!rc) {
		double nf = acc[np * 3] / (double)N;
		for (size_t p = 0; p < np; p++) {
			kv_total *t = &res->tot[p];
			t->nll_full = nf;
			if (!hp[p]) {
				*t = (kv_total){nf, nf, 1, 0, 1};
				continue;
			}
			t->nll = acc[p * 3] / (double)N;
			t->ppl_ratio = exp(t->nll - nf);
			t->kl = acc[p * 3 + 1] / (double)N;
			t->top1 = acc[p * 3 + 2] / (double)N;
		}
	}
	free(lf);
	free(lp);
	free(pf);
	free(sc);
	free(acc);
	return rc;
}

static int rec_alloc(kv_result *res, ss_err *e)
{
	long T = res->T;
	if (!(res->rec = ss_calloc(res->np * (size_t)res->L, sizeof *res->rec, "selections", e)))
		return -1;
	for (size_t p = 0; p < res->np; p++) {
		long chunk = kv_policy_chunk(res->pairs[p].pol) ? KV_CHUNK : T;
		for (long l = 0; l < res->L && res->pairs[p].pol != KV_FULL; l++) {
			kv_rec *r = &res->rec[p * (size_t)res->L + (size_t)l];
			r->chunk = chunk;
			if (!(r->lo = ss_malloc((size_t)T, sizeof *r->lo, "selections", e)) ||
			    !(r->nk = ss_malloc((size_t)T, sizeof *r->nk, "selections", e)) ||
			    !(r->off = ss_calloc((size_t)(T / chunk + 2), sizeof *r->off, "selections", e)))
				return -1;
		}
	}
	return 0;
}

double kv_memory(const ss_model *m, long T, const kv_pair *pairs, size_t np, const kv_opts *o)
{
	const ss_config *c = &m->c;
	double L = (double)c->n_layers, t = (double)T, D = (double)c->dim, V = (double)c->vocab;
	double k = o->first > 0 ? (double)o->first : 0, nh = 0, rec = 0;
	for (size_t p = 0; p < np; p++) {
		if (pairs[p].pol == KV_FULL)
			continue;
		nh++;   /* its final hidden states */
		if (o->per_layer || o->masks) {   /* its selections, every layer (rec_alloc) */
			double chunk = kv_policy_chunk(pairs[p].pol) ? KV_CHUNK : t, nb = t / chunk + 2;
			double kept = pairs[p].budget < T ? (double)pairs[p].budget : t;
			rec += L * (16 * t + 8 * nb + 8 * nb * kept + sizeof(kv_rec));
		}
	}
	const st_tensor *W = m->lm_head;
	double b = fwd_memory_estimate(c, T, o->threads, 0) +
	           4 * (1 + nh) * t * D +                         /* final hidden states */
	           8 * (L + 1) * t +                              /* norms, cosines */
	           t * (5 * sizeof(long) + sizeof(kv_score) + 4 + 1) + 16 * k +   /* the selection */
	           np * (24 * L + sizeof(ss_attn_sel) + sizeof(kv_total) + sizeof(kv_pair)) +
	           (o->per_layer ? np * L * sizeof(kv_layer) : 0) +
	           4 * (3 * LOGIT_ROWS + 1) * V + 4 * LOGIT_ROWS * D + rec;   /* compare's logits */
	if (W->dtype != ST_F32 || ((uintptr_t)W->data & 3))   /* keep_head's f32 lm_head, its block */
		b += 4 * V * D + 4 * (V < 4096 ? V : 4096) * D;
	return b;
}

int kv_run(const ss_model *m, const int32_t *ids, long T, const kv_pair *pairs, size_t np,
           const kv_opts *o, kv_result **out, ss_err *e)
{
	const ss_config *cf = &m->c;
	long L = cf->n_layers, D = cf->dim, k = o->first > 0 ? o->first : 0;
	*out = NULL;
	if (T < 2)
		return ss_err_set(e, "%ld token: the next-token measures need at least 2", T);
	if (cf->max_pos > 0 && T > cf->max_pos)
		return ss_err_set(e, "%s/config.json:max_position_embeddings: %ld tokens exceed %ld", m->dir, T,
		                  cf->max_pos);
	for (size_t p = 0; p < np; p++)
		if (pairs[p].budget < 1)
			return ss_err_status(e, SS_EXIT_USAGE, "--budgets: %ld, a budget must be at least 1",
			                     pairs[p].budget);
	kv_result *res = ss_calloc(1, sizeof *res, "results", e);
	kv_ctx c = {.o = o, .res = res, .T = T, .L = L};
	ss_fwd *f = NULL;
	float *norm = NULL, *cos0 = NULL, *hf = NULL, **hp = NULL;
	int rc = -1;
	if (!res)
		return -1;
	res->T = T;
	res->L = L;
	res->np = np;
	if (!(res->pairs = ss_malloc(np ? np : 1, sizeof *res->pairs, "results", e)))
		goto done;
	memcpy(res->pairs, pairs, np * sizeof *pairs);
	if (!(res->tot = ss_calloc(np ? np : 1, sizeof *res->tot, "results", e)) ||
	    (o->per_layer && !(res->lay = ss_calloc(np * (size_t)L + 1, sizeof *res->lay, "results", e))) ||
	    ((o->per_layer || o->masks) && rec_alloc(res, e) < 0) ||
	    !(c.lo = ss_malloc((size_t)T, sizeof *c.lo, "selection", e)) ||
	    !(c.nk = ss_malloc((size_t)T, sizeof *c.nk, "selection", e)) ||
	    !(c.K = ss_malloc((size_t)(T + k), sizeof *c.K, "selection", e)) ||
	    !(c.keep = ss_malloc((size_t)T, sizeof *c.keep, "selection", e)) ||
	    !(c.sinks = ss_malloc((size_t)(T + k), sizeof *c.sinks, "selection", e)) ||
	    !(c.sorted = ss_malloc((size_t)T, sizeof *c.sorted, "selection", e)) ||
	    !(c.score = ss_malloc((size_t)T, sizeof *c.score, "selection", e)) ||
	    !(c.msel = ss_malloc(np + 1, sizeof *c.msel, "measurement", e)) ||
	    !(c.cls = ss_malloc((size_t)T, 1, "measurement", e)) ||
	    !(c.lost = ss_calloc((size_t)L * np * 3 + 1, sizeof *c.lost, "measurement", e)) ||
	    !(norm = ss_malloc((size_t)((L + 1) * T), 4, "statistics", e)) ||
	    !(cos0 = ss_malloc((size_t)((L + 1) * T), 4, "statistics", e)) ||
	    !(hf = ss_malloc_big((size_t)(T * D), 4, "hidden states", e)) ||
	    !(hp = ss_calloc(np + 1, sizeof *hp, "hidden states", e)))
		goto done;
	if (!(res->window = ss_malloc((size_t)L, sizeof *res->window, "results", e)))
		goto done;
	for (long l = 0; l < L; l++)
		res->window[l] = config_layer_window(cf, (int)l + 1);
	c.n_pass = 1 + !!o->per_layer;
	for (size_t p = 0; p < np; p++) {
		if (pairs[p].pol == KV_FULL)
			continue;
		c.n_pass++;
		if (!(hp[p] = ss_malloc_big((size_t)(T * D), 4, "hidden states", e)))
			goto done;
	}
	ss_fwd_opts fo = {.threads = o->threads, .compute = o->compute, .keep_head = 1, .select = kv_select, .select_ctx = &c, .progress = kv_on_layer,
	                  .progress_ctx = &c};
	if (fwd_create(&f, m, &fo, T, e) < 0)
		goto done;
	ss_stats st = {.resid_norm = norm, .resid_cos0 = cos0};
	c.mode = M_PLAIN;
	c.pass = 1;
	if (fwd_prefill(f, ids, T, &st, hf, e) < 0)
		goto done;
	c.mode = M_POLICY;
	for (size_t p = 0; p < np; p++) {
		if (!hp[p])
			continue;
		c.pair = p;
		c.pass++;
		if (fwd_prefill(f, ids, T, &st, hp[p], e) < 0) {
			ss_err_prefix(e, "%s %ld", kv_policy_names[pairs[p].pol], pairs[p].budget);
			goto done;
		}
	}
	if (o->per_layer) {
		c.mode = M_MEASURE;
		c.pass++;
		if (fwd_prefill(f, ids, T, &st, NULL, e) < 0)
			goto done;
		double q = (double)T * (double)cf->n_heads;
		for (size_t p = 0, s = 0; p < np; p++) {
			if (pairs[p].pol == KV_FULL)
				continue;
			for (long l = 0; l < L; l++) {
				const double *x = c.lost + ((size_t)l * np + s) * 3;
				kv_layer *y = &res->lay[p * (size_t)L + (size_t)l];
				y->primary = x[1] / q;
				y->secondary = x[2] / q;
				y->rest = x[0] / q;
				y->lost = y->primary + y->secondary + y->rest;
			}
			s++;
		}
	}
	if (compare(f, m, ids, T, hf, hp, res, e) < 0)
		goto done;
	*out = res;
	res = NULL;
	rc = 0;
done:
	fwd_free(f);
	for (size_t p = 0; hp && p < np; p++)
		free(hp[p]);
	free(hp);
	free(hf);
	free(norm);
	free(cos0);
	free(c.lo);
	free(c.nk);
	free(c.K);
	free(c.keep);
	free(c.sinks);
	free(c.sorted);
	free(c.score);
	free(c.msel);
	free(c.cls);
	free(c.lost);
	kv_result_free(res);
	return rc;
}
