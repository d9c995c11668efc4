/* ivcheck - decode.h against full recomputation, as TAP lines.
 *
 *   ivcheck MODEL_DIR T
 *
 * On random ids of length T:
 *  1. every intervention (replace, add, scale of resid, attn_out, mlp_in,
 *     mlp_out at a layer l and a position j), run cheaply by dec_rerun from
 *     h[l-1][j] to h[ls][j] against the baseline cache, equals a full
 *     prefill with the same intervention (max |diff| / max |x| <= 1e-5); all
 *     cases in one layer-major batch, so rows must not see each other;
 *     the same with a bf16 cache (1e-2: the keys and values are rounded)
 *     and resident layer weights;
 *  2. prefill of T/2 then dec_step one token at a time: the last logits
 *     equal a prefill of all T (f32 cache 1e-5, bf16 cache 2e-2), also
 *     with resident weights and an f32 cache (1e-5: a bf16 model's
 *     weights kept in bf16 are its own values);
 *  3. dec_mlp on the captured mlp_in rows gives the captured mlp_out;
 *  4. dec_queries with the cached keys gives the attention received by the
 *     last key from the last query, as the prefill's recv (1e-5). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/decode.h"
#include "engine/model.h"
#include "engine/sample.h"

static int n_test, n_fail;

static void ok(int pass, const char *fmt, const char *what, double err)
{
	n_test++;
	n_fail += !pass;
	printf("%sok %d - ", pass ? "" : "not ", n_test);
	printf(fmt, what);
	printf(" (err %.3g)\n", err);
}

static double relerr(const float *a, const float *b, long n)
{
	double m = 0, d = 0;
	for (long i = 0; i < n; i++) {
		m = fmax(m, fabs(b[i]));
		d = fmax(d, fabs((double)a[i] - b[i]));
	}
	return d / (m > 0 ? m : 1);
}

/* Capture every hook point of every position. */
typedef struct cap {
	long T, D, L;
	float *h[SS_HOOK_N]; /* [(L+1) * T * D] */
} cap;

static int cap_hook(void *ctx, int layer, ss_hook_point what, long t0, long n, float *x, long d)
{
	cap *c = ctx;
	memcpy(c->h[what] + ((size_t)layer * c->T + t0) * d, x, (size_t)n * d * sizeof *x);
	return 0;
}

static float *at(cap *c, ss_hook_point w, long l, long j)
{
	return c->h[w] + ((size_t)l * c->T + j) * c->D;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: ivcheck MODEL_DIR T\n");
		return 2;
	}
	ss_err e = {0};
	ss_model m = {0};
	if (model_load(&m, argv[1], &e) < 0) {
		fprintf(stderr, "ivcheck: %s\n", e.msg);
		return 1;
	}
	long T = atol(argv[2]), D = m.c.dim, L = m.c.n_layers, V = m.c.vocab;
	int32_t *ids = malloc(T * sizeof *ids);
	uint64_t rng = 12345;
	for (long i = 0; i < T; i++)
		ids[i] = (int32_t)(sample_uniform(&rng) * V);
	cap base = {T, D, L, {0}}, full = {T, D, L, {0}};
	for (int w = 0; w < SS_HOOK_N; w++) {
		base.h[w] = calloc((size_t)(L + 1) * T * D, sizeof(float));
		full.h[w] = calloc((size_t)(L + 1) * T * D, sizeof(float));
	}
	ss_dec_opts o = {.threads = 1, .hook = cap_hook, .hook_ctx = &base};
	ss_dec dc, df, db, dr;
	ss_dec_opts of = o, ob = o, orr = o;
	orr.resident = 1;
	orr.hook = NULL;
	of.hook_ctx = &full;
	ob.kv_dtype = SS_KV_BF16;
	ob.resident = 1; /* and every layer's weights kept */
	ob.hook = NULL;
	if (dec_create(&dc, &m, T, &o, &e) < 0 || dec_create(&df, &m, T, &of, &e) < 0 ||
	    dec_create(&db, &m, T, &ob, &e) < 0 || dec_create(&dr, &m, T, &orr, &e) < 0 ||
	    dec_prefill(&dc, ids, T, NULL, NULL, &e) < 0 ||
	    dec_prefill(&db, ids, T, NULL, NULL, &e) < 0) {
		fprintf(stderr, "ivcheck: %s\n", e.msg);
		return 1;
	}
	dc.hook = NULL; /* the baseline stays captured */

	/* 1. interventions: cheap batch vs one full pass each */
	static const char *const wn[] = {"resid", "attn_out", "mlp_in", "mlp_out"};
	static const char *const on[] = {"replace", "add", "scale"};
	enum { NC = 12 };
	ss_interv iv[NC];
	ss_rerun rr[NC], rb[NC];
	float *vec = malloc((size_t)NC * D * sizeof *vec), *xs = malloc((size_t)2 * NC * D * sizeof *xs);
	for (long i = 0; i < NC * D; i++)
		vec[i] = (float)(2 * sample_uniform(&rng) - 1);
	int ls = (int)L;
	for (int k = 0; k < NC; k++) {
		int w = k % 4, op = k / 4;
		int l = 1 + k % (int)L;
		long j = 1 + (k * 7) % (T - 1);
		iv[k] = (ss_interv){.layer = l, .what = (ss_hook_point)w, .pos = j, .op = (ss_iv_op)op,
		                    .vec = vec + (size_t)k * D, .alpha = 3.5f};
		float *x = xs + (size_t)k * D, *xb = xs + (size_t)(NC + k) * D;
		memcpy(x, at(&base, SS_HOOK_RESID, l - 1, j), D * sizeof *x);
		memcpy(xb, x, D * sizeof *x);
		rr[k] = (ss_rerun){.pos = j, .l_from = l, .l_to = ls, .x = x, .iv = &iv[k], .n_iv = 1};
		rb[k] = rr[k];
		rb[k].x = xb;
	}
	if (dec_rerun(&dc, rr, NC, &e) < 0 || dec_rerun(&db, rb, NC, &e) < 0) {
		fprintf(stderr, "ivcheck: %s\n", e.msg);
		return 1;
	}
	for (int k = 0; k < NC; k++) {
		dec_set_interv(&df, &iv[k], 1);
		if (dec_prefill(&df, ids, T, NULL, NULL, &e) < 0) {
			fprintf(stderr, "ivcheck: %s\n", e.msg);
			return 1;
		}
		char what[96];
		snprintf(what, sizeof what, "%s %s at layer %d pos %ld -> h[%d]", on[k / 4], wn[k % 4],
		         iv[k].layer, iv[k].pos, ls);
		const float *ref = at(&full, SS_HOOK_RESID, ls, iv[k].pos);
		double err = relerr(rr[k].x, ref, D);
		ok(err <= 1e-5, "re-run equals full pass: %s", what, err);
		double eb = relerr(rb[k].x, ref, D);
		ok(eb <= 1e-2, "re-run with bf16 cache: %s", what, eb);
		/* the intervention really changed something downstream */
		double moved = relerr(ref, at(&base, SS_HOOK_RESID, ls, iv[k].pos), D);
		ok(moved > 1e-3, "intervention moves h[ls]: %s", what, moved);
	}
	dec_set_interv(&df, NULL, 0);
	df.hook = NULL;

	/* 2. decode vs prefill */
	float *lp = malloc(V * sizeof *lp), *ls_ = malloc(V * sizeof *ls_);
	for (int dt = 0; dt < 3; dt++) {
		ss_dec *d = dt == 2 ? &dr : dt ? &db : &df;
		/* the reference: a prefill of all T through the plain path (df) */
		if (dec_prefill(dt == 2 ? &df : d, ids, T, NULL, lp, &e) < 0 ||
		    dec_prefill(d, ids, T / 2, NULL, NULL, &e) < 0) {
			fprintf(stderr, "ivcheck: %s\n", e.msg);
			return 1;
		}
		for (long t = T / 2; t < T; t++)
			if (dec_step(d, ids[t], ls_, &e) < 0) {
				fprintf(stderr, "ivcheck: %s\n", e.msg);
				return 1;
			}
		double err = relerr(ls_, lp, V);
		ok(err <= (dt == 1 ? 2e-2 : 1e-5), "decode one token at a time equals prefill logits (%s)",
		   dt == 2 ? "f32 cache, resident weights" : dt ? "bf16 cache" : "f32 cache", err);
	}

	/* 3. the MLP alone */
	{
		int l = (int)(L + 1) / 2;
		float *y = malloc((size_t)T * D * sizeof *y);
		if (dec_mlp(&dc, l, at(&base, SS_HOOK_MLP_IN, l, 0), T, y, &e) < 0) {
			fprintf(stderr, "ivcheck: %s\n", e.msg);
			return 1;
		}
		double err = relerr(y, at(&base, SS_HOOK_MLP_OUT, l, 0), T * D);
		ok(err <= 1e-6, "dec_mlp reproduces mlp_out at layer %s", l == 1 ? "1" : "mid", err);
		free(y);
	}

	/* 4. queries x cached keys: A[T-1][T-1] per head, against the full
	 * pass's recv (the last key is seen by the last query only) */
	{
		long H = m.c.n_heads, hd = m.c.head_dim, group = H / m.c.n_kv_heads, kvd = dc.kv.kv_dim;
		float *q = malloc((size_t)T * H * hd * sizeof *q), *k = malloc(kvd * sizeof *k),
		      *v = malloc(kvd * sizeof *v);
		ss_stats st = {0};
		st.recv = malloc((size_t)L * H * T * sizeof *st.recv);
		if (dec_prefill(&dc, ids, T, &st, NULL, &e) < 0 ||
		    dec_queries(&dc, (int)L, at(&base, SS_HOOK_RESID, L - 1, 0), 0, T, q, &e) < 0) {
			fprintf(stderr, "ivcheck: %s\n", e.msg);
			return 1;
		}
		double maxerr = 0;
		for (long h = 0; h < H; h++) {
			const float *qi = q + (size_t)(T - 1) * H * hd + h * hd;
			double s[4096], mx = -INFINITY, z = 0;
			long n = T < 4096 ? T : 4096;
			for (long t = 0; t < n; t++) {
				kv_get(&dc.kv, (int)L, t, k, v);
				double a = 0;
				for (long i = 0; i < hd; i++)
					a += (double)qi[i] * k[(h / group) * hd + i];
				s[t] = a / sqrt((double)hd);
				mx = fmax(mx, s[t]);
			}
			for (long t = 0; t < n; t++)
				z += exp(s[t] - mx);
			double p = exp(s[n - 1] - mx) / z, r = st.recv[((size_t)(L - 1) * H + h) * T + T - 1];
			maxerr = fmax(maxerr, fabs(p - r));
		}
		ok(maxerr <= 1e-5, "dec_queries: A[T-1][T-1] per head equals the prefill's recv%s", "",
		   maxerr);
		free(q);
		free(k);
		free(v);
		free(st.recv);
	}
	printf("1..%d\n", n_test);
	dec_free(&dc);
	dec_free(&df);
	dec_free(&db);
	dec_free(&dr);
	model_free(&m);
	for (int w = 0; w < SS_HOOK_N; w++) {
		free(base.h[w]);
		free(full.h[w]);
	}
	free(ids);
	free(vec);
	free(xs);
	free(lp);
	free(ls_);
	return n_fail ? 1 : 0;
}
