/* decodebench - decoding speed against the memory's, in one process
 * (tests/bench/decode.sh).
 *   usage: decodebench MODEL_DIR DEPTH STEPS THREADS bf16|f32
 *          decodebench --path      (prints the gemv path: avx512, avx2, c)
 *
 * 1. The machine's read bandwidth: THREADS threads sum a 1 GiB buffer
 *    (far beyond the caches) with 64-bit loads, best of 5 passes.
 * 2. Decoding: a resident dec (weights kept: bf16 for a bf16 model, or
 *    f32 whatever the dtype with "f32", the former path), a prefill of
 *    DEPTH random ids (the first 1), 4 warm-up steps, then STEPS timed
 *    dec_step calls with logits (greedy ids).
 * The bound: bytes of weights read per token (every layer's matrices and
 * lm_head, in the resident dtype) over the bandwidth.  One line:
 *   decode bf16 depth 512: 27.1 tok/s, 0.91 GB/token, bound 30.2 tok/s
 *   (read 27.5 GB/s): 90% of the bound; peak RSS 1402 MiB (bf16 weights
 *   942 MiB + 0.45 GiB: the RSS against the file's bf16 weights, the target
 *   being + 0.5 GiB whatever the resident form)
 * Peak RSS is the process's VmHWM (the bandwidth buffer is freed before
 * the model is loaded and not counted: VmHWM is read before it is taken). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/decode.h"
#include "engine/gemv.h"
#include "engine/model.h"
#include "engine/sample.h"
#include "util/pool.h"
#include "util/progress.h"

typedef struct bw_job { const uint64_t *p; long n; uint64_t sum[64]; } bw_job;

static void bw_task(void *ctx, int tid, int nth)
{
	bw_job *j = ctx;
	long lo, hi;
	pool_share(j->n, 64, tid, nth, &lo, &hi);
	uint64_t a[8] = {0};
	for (long i = lo; i + 8 <= hi; i += 8)
		for (int k = 0; k < 8; k++)
			a[k] += j->p[i + k];
	j->sum[tid] = a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}

static double bandwidth(int th)
{
	ss_err e = {0};
	ss_pool *pool;
	long n = (1L << 30) / 8;
	uint64_t *p = malloc((size_t)n * 8);
	if (!p || pool_create(&pool, th, &e) < 0)
		return 0;
	for (long i = 0; i < n; i++)
		p[i] = (uint64_t)i;
	bw_job j = {p, n, {0}};
	double best = 0;
	for (int r = 0; r < 5; r++) {
		double t0 = ss_now();
		pool_run(pool, bw_task, &j);
		double gbs = (double)n * 8 / (ss_now() - t0) / 1e9;
		best = gbs > best ? gbs : best;
	}
	uint64_t s = 0;
	for (int t = 0; t < th; t++)
		s += j.sum[t];
	if (s == 42)   /* keeps the sums alive */
		fputs("", stderr);
	pool_free(pool);
	free(p);
	return best;
}

static long vm_hwm_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = 0;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "VmHWM:", 6))
			v = atol(line + 6);
	if (f)
		fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--path")) {   /* the gemv path this CPU runs */
		printf("%s\n", gemv_path_name(gemv_path()));
		return 0;
	}
	if (argc != 6 || (strcmp(argv[5], "bf16") && strcmp(argv[5], "f32"))) {
		fprintf(stderr, "usage: decodebench MODEL_DIR DEPTH STEPS THREADS bf16|f32\n");
		return 2;
	}
	long depth = atol(argv[2]), steps = atol(argv[3]);
	int th = atoi(argv[4]), f32 = !strcmp(argv[5], "f32");
	if (depth < 1 || steps < 1 || th < 1) {
		fprintf(stderr, "decodebench: DEPTH, STEPS and THREADS must be positive\n");
		return 2;
	}
	double bw = bandwidth(th);
	/* VmHWM so far is the bandwidth buffer's; reset it (Linux >= 4.0) */
	FILE *cr = fopen("/proc/self/clear_refs", "w");
	if (cr) {
		fputs("5", cr);
		fclose(cr);
	}
	ss_err e = {0};
	ss_model m;
	if (model_load(&m, argv[1], &e) < 0) {
		fprintf(stderr, "decodebench: %s\n", e.msg);
		return 1;
	}
	const ss_config *c = &m.c;
	ss_dec d;
	ss_dec_opts o = {.threads = th, .resident = 1, .resident_f32 = f32};
	long warm = 4, cap = depth + warm + steps, V = c->vocab;
	int32_t *ids = malloc((size_t)depth * sizeof *ids);
	float *logits = malloc((size_t)V * sizeof *logits);
	uint64_t rng = 7;
	for (long i = 0; i < depth; i++)
		ids[i] = i ? (int32_t)(sample_uniform(&rng) * V) : 1;
	if (!ids || !logits || dec_create(&d, &m, cap, &o, &e) < 0 ||
	    dec_prefill(&d, ids, depth, NULL, logits, &e) < 0) {
		fprintf(stderr, "decodebench: %s\n", e.msg);
		return 1;
	}
	double t0 = 0;
	for (long k = 0; k < warm + steps; k++) {
		if (k == warm)
			t0 = ss_now();
		long best = 0;
		for (long v = 1; v < V; v++)
			best = logits[v] > logits[best] ? v : best;
		if (dec_step(&d, (int32_t)best, logits, &e) < 0) {
			fprintf(stderr, "decodebench: %s\n", e.msg);
			return 1;
		}
	}
	double tok = (double)steps / (ss_now() - t0);
	/* bytes read per token: every layer's matrices and lm_head */
	double el = f32 || !fwd_resident_bf16(&m) ? 4 : 2;
	long qkv = (c->n_heads + 2 * c->n_kv_heads) * c->head_dim, qd = c->n_heads * c->head_dim;
	double per = (double)qkv * c->dim + (double)c->dim * qd +
	             (c->ungated ? 2.0 : 3.0) * c->hidden * c->dim;
	double bytes = el * (per * c->n_layers + (double)V * c->dim);
	double bound = bw * 1e9 / bytes;
	/* peak RSS against the weights as the file holds them (bf16): the
	 * target is the bf16 weights + 0.5 GiB, whatever the resident form */
	double rss_d = (vm_hwm_kib() * 1024.0 - m.weight_bytes) / 1073741824.0;
	printf("decode %s depth %ld: %.2f tok/s, %.3f GB/token, bound %.2f tok/s (read %.1f GB/s): "
	       "%.0f%% of the bound; peak RSS %.0f MiB (bf16 weights %.0f MiB %c %.2f GiB)\n",
	       f32 ? "f32" : "bf16", depth, tok, bytes / 1e9, bound, bw, 100 * tok / bound,
	       vm_hwm_kib() / 1024.0, m.weight_bytes / 1048576.0, rss_d < 0 ? '-' : '+', fabs(rss_d));
	dec_free(&d);
	model_free(&m);
	free(ids);
	free(logits);
	return 0;
}
