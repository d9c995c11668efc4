/* swapbench - cost of cheap swaps and of decoding, beside one full forward
 * pass measured in the same run (tests/bench/swap.sh).
 *
 *   swapbench MODEL_DIR T TARGETS WINDOW THREADS DECODE_STEPS
 *
 * 1. one prefill of T random ids (stats on, filling an f32 KV cache);
 * 2. TARGETS positions x WINDOW layers x 3 components of swaps (replace
 *    resid, attn_out, mlp_out at (l, j) and re-run j to ls), l_start
 *    spread over the upper half of the layers, in one layer-major batch;
 *    plus the per-l_start baseline queries and normalisers swapexp needs;
 * 3. DECODE_STEPS tokens decoded after the T-token context, f32 and bf16
 *    caches, every layer's f32 weights resident.
 * Prints "key value" lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "engine/decode.h"
#include "util/progress.h"
#include "engine/sample.h"

/* CPU seconds of the whole process (all threads): the machine is shared,
 * so wall time alone says little */
static double cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: swapbench MODEL_DIR T TARGETS WINDOW THREADS DECODE_STEPS\n");
		return 2;
	}
	ss_err e = {0};
	ss_model m = {0};
	long T = atol(argv[2]), NT = atol(argv[3]), W = atol(argv[4]), steps = atol(argv[6]);
	int th = atoi(argv[5]);
	if (model_load(&m, argv[1], &e) < 0) {
		fprintf(stderr, "swapbench: %s\n", e.msg);
		return 1;
	}
	long D = m.c.dim, L = m.c.n_layers, H = m.c.n_heads, V = m.c.vocab;
	int32_t *ids = malloc((T + steps) * sizeof *ids);
	uint64_t rng = 99;
	for (long i = 0; i < T + steps; i++)
		ids[i] = (int32_t)(sample_uniform(&rng) * V);
	ss_dec d;
	ss_dec_opts o = {.threads = th};
	if (dec_create(&d, &m, T + steps, &o, &e) < 0) {
		fprintf(stderr, "swapbench: %s\n", e.msg);
		return 1;
	}
	ss_stats st = {0};
	st.resid_norm = malloc((L + 1) * T * sizeof(float));
	st.resid_cos0 = malloc((L + 1) * T * sizeof(float));
	st.recv = malloc(L * H * T * sizeof(float));
	double t0 = ss_now(), c0 = cpu();
	if (dec_prefill(&d, ids, T, &st, NULL, &e) < 0) {
		fprintf(stderr, "swapbench: %s\n", e.msg);
		return 1;
	}
	double t_fwd = ss_now() - t0, c_fwd = cpu() - c0;
	printf("forward_s %.3f\nforward_cpu_s %.3f\nforward_tok_s %.1f\n", t_fwd, c_fwd, T / t_fwd);

	/* swaps: inputs are random stand-ins for h[l-1][j] (cost does not
	 * depend on the values) */
	long ns = NT * W * 3;
	ss_rerun *rr = calloc(ns, sizeof *rr);
	ss_interv *iv = calloc(ns, sizeof *iv);
	float *xs = malloc((size_t)ns * D * sizeof *xs), *vec = malloc(D * sizeof *vec);
	float *keys = malloc((size_t)ns * d.kv.kv_dim * sizeof *keys), *self = malloc(ns * H * sizeof *self);
	for (long i = 0; i < D; i++)
		vec[i] = (float)(sample_uniform(&rng) - 0.5);
	for (long i = 0; i < (long)ns * D; i++)
		xs[i] = (float)(sample_uniform(&rng) - 0.5);
	static const ss_hook_point hp[3] = {SS_HOOK_RESID, SS_HOOK_ATTN_OUT, SS_HOOK_MLP_OUT};
	long k = 0, rowlayers = 0;
	for (long t = 0; t < NT; t++) {
		long j = 1 + t * (T - 2) / NT, ls = L / 2 + t % (L / 2 - 1) + 1;
		if (ls - W + 1 < 1)
			ls = W;
		for (long l = ls - W + 1; l <= ls; l++)
			for (int c = 0; c < 3; c++, k++) {
				iv[k] = (ss_interv){.layer = (int)l, .what = hp[c], .pos = j, .vec = vec};
				rr[k] = (ss_rerun){.pos = j, .l_from = (int)l, .l_to = (int)ls,
				                   .x = xs + (size_t)k * D, .iv = &iv[k], .n_iv = 1,
				                   .key_out = keys + (size_t)k * d.kv.kv_dim,
				                   .self_attn = self + k * H};
				rowlayers += ls - l + 1;
			}
	}
	t0 = ss_now();
	c0 = cpu();
	if (dec_rerun(&d, rr, ns, &e) < 0) {
		fprintf(stderr, "swapbench: %s\n", e.msg);
		return 1;
	}
	double t_sw = ss_now() - t0, c_sw = cpu() - c0;
	printf("swaps %ld\nswap_row_layers %ld\nswaps_s %.3f\nswaps_cpu_s %.3f\nswaps_per_s %.1f\n", ns,
	       rowlayers, t_sw, c_sw, ns / t_sw);
	printf("swap_over_forward %.6f\nswap_over_forward_cpu %.6f\n", t_sw / ns / t_fwd,
	       c_sw / ns / c_fwd);
	/* swapexp's extra per l_start: queries and normalisers of all T (one
	 * attention layer's worth), measured for one layer */
	float *h = malloc((size_t)T * D * sizeof *h), *q = malloc((size_t)T * H * m.c.head_dim * sizeof *q);
	for (long i = 0; i < T * D; i++)
		h[i] = (float)(sample_uniform(&rng) - 0.5);
	t0 = ss_now();
	if (dec_queries(&d, (int)L, h, 0, T, q, &e) < 0) {
		fprintf(stderr, "swapbench: %s\n", e.msg);
		return 1;
	}
	printf("queries_per_lstart_s %.3f\n", ss_now() - t0);

	/* decoding after a T-token context */
	float *lg = malloc(V * sizeof *lg);
	for (int dt = 0; dt < 2; dt++) {
		ss_dec dd;
		ss_dec_opts od = {.threads = th, .kv_dtype = (ss_kv_dtype)dt, .resident = 1};
		if (dec_create(&dd, &m, T + steps, &od, &e) < 0 ||
		    dec_prefill(&dd, ids, T, NULL, NULL, &e) < 0) {
			fprintf(stderr, "swapbench: %s\n", e.msg);
			return 1;
		}
		t0 = ss_now();
		c0 = cpu();
		for (long s = 0; s < steps; s++)
			if (dec_step(&dd, ids[T + s], lg, &e) < 0) {
				fprintf(stderr, "swapbench: %s\n", e.msg);
				return 1;
			}
		double td = ss_now() - t0, cd = cpu() - c0;
		printf("decode_%s_tok_s %.2f\ndecode_%s_cpu_s_per_tok %.4f\nkv_%s_MiB %.1f\n",
		       dt ? "bf16" : "f32", steps / td, dt ? "bf16" : "f32", cd / steps,
		       dt ? "bf16" : "f32", kv_bytes(L, T + steps, dd.kv.kv_dim, od.kv_dtype) / 1048576.0);
		dec_free(&dd);
	}
	return 0;
}
