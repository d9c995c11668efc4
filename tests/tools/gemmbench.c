/* gemmbench - OpenBLAS's own sgemm speed at a model's shapes, and the
 * tokens/s it implies for a prefill of T tokens (tests/bench/actdump.sh).
 *   usage: gemmbench MODEL_DIR T THREADS
 * The four projections of one layer (qkv, o, gate_up, down) run as single
 * sgemm calls with M = T and OpenBLAS's own threading (best of at least 6
 * repetitions after a warm-up, and of at least 2 s).  Model
 * FLOPs per token: 2 x the layer weights x L, plus attention
 * (QK^T and PV, 2 x 2 x head_dim per query, key and head: on average
 * (T+1)/2 keys per query).  Output: one line of name=value pairs; the
 * _cpu figures divide by process CPU time / threads instead of wall time
 * (less sensitive to other processes on a shared machine). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "model.h"
#include "progress.h"

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: gemmbench MODEL_DIR T THREADS\n");
		return 2;
	}
	ss_config c;
	ss_err e = {0};
	if (config_load(&c, argv[1], &e) < 0) {
		fprintf(stderr, "gemmbench: %s\n", e.msg);
		return 1;
	}
	long T = atol(argv[2]), th = atol(argv[3]);
	openblas_set_num_threads((int)th);
	long D = c.dim, F = c.hidden, q = c.n_heads * c.head_dim, kv = c.n_kv_heads * c.head_dim;
	long shp[4][2] = {{q + 2 * kv, D}, {D, q}, {2 * F, D}, {D, F}}; /* N, K */
	size_t maxa = 0, maxw = 0, maxc = 0;
	for (int i = 0; i < 4; i++) {
		size_t a = (size_t)(T * shp[i][1]), w = (size_t)(shp[i][0] * shp[i][1]), cc = (size_t)(T * shp[i][0]);
		maxa = a > maxa ? a : maxa;
		maxw = w > maxw ? w : maxw;
		maxc = cc > maxc ? cc : maxc;
	}
	float *A = malloc(maxa * 4), *W = malloc(maxw * 4), *C = malloc(maxc * 4);
	if (!A || !W || !C)
		return 1;
	for (size_t i = 0; i < maxa; i++)
		A[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
	for (size_t i = 0; i < maxw; i++)
		W[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
	double best = 1e30, bestc = 1e30, flops_layer = 0;
	for (int i = 0; i < 4; i++)
		flops_layer += 2.0 * (double)T * (double)shp[i][0] * (double)shp[i][1];
	/* at least 6 timed repetitions and 2 s: a best of 3 (0.1 s each at
	 * T=512) was at the mercy of one burst of load on a shared machine */
	double start = ss_now();
	for (int rep = 0; rep < 7 || ss_now() - start < 2.0; rep++) {
		double t0 = ss_now(), c0 = cpu_now();
		for (int i = 0; i < 4; i++)
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)T, (int)shp[i][0], (int)shp[i][1],
			            1.0f, A, (int)shp[i][1], W, (int)shp[i][1], 0.0f, C, (int)shp[i][0]);
		double t = ss_now() - t0, ct = (cpu_now() - c0) / (double)th;
		if (rep > 0 && t < best)   /* rep 0 warms up */
			best = t;
		if (rep > 0 && ct < bestc)
			bestc = ct;
	}
	double gflops = flops_layer / best / 1e9, gflops_cpu = flops_layer / bestc / 1e9;
	double lin_tok = flops_layer / (double)T * (double)c.n_layers;
	double attn_tok = (double)c.n_layers * (double)c.n_heads * 2.0 * 2.0 * (double)c.head_dim * (double)(T + 1) / 2.0;
	printf("T=%ld threads=%ld sgemm_gflops=%.1f model_mflop_per_tok=%.1f attn_mflop_per_tok=%.1f "
	       "implied_tok_s=%.1f sgemm_gflops_cpu=%.1f implied_tok_s_cpu=%.1f\n",
	       T, th, gflops, (lin_tok + attn_tok) / 1e6, attn_tok / 1e6, gflops * 1e9 / (lin_tok + attn_tok),
	       gflops_cpu, gflops_cpu * 1e9 / (lin_tok + attn_tok));
	free(A);
	free(W);
	free(C);
	return 0;
}
