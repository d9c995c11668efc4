/* attnbench - attn_run alone at Qwen2.5-0.5B's attention shapes (14 heads,
 * 2 KV heads, head_dim 64), next to OpenBLAS sgemm at a linear shape of
 * the same model measured in the same run (tests/bench/attn.sh).
 *   usage: attnbench T THREADS [SECONDS [QBLOCK]]
 * One prefill of T queries (t0 = 0) with the attention received (recv) on,
 * as actdump runs it; best of at least 3 timed runs and SECONDS (default 2)
 * after a warm-up.  Attention FLOPs: 2 x 2 x head_dim per visible (query,
 * key) pair and head.  sgemm: the gate_up projection (M = min(T, 512),
 * N = 9728, K = 896) split over the pool's threads as forward.c does, each
 * a single-threaded OpenBLAS call.  Output: one line of name=value pairs;
 * the _cpu figures divide by process CPU time / threads; sum_o and sum_recv
 * are checksums (old and new code must agree to float rounding); decode_us
 * is one decoding step (query T-1 against its T keys, recv on, best of 50).
 * tests/bench/attn.sh links a second attention.c (an older commit's) in
 * with its functions renamed old_attn_*: then the old and the new code run
 * alternately in this one process (the old_ figures), as does the sgemm,
 * so the machine's drift and other processes' bursts hit all alike.
 * The bf16 compute mode (attn_set_compute: bf16 products, f32 sums) runs
 * in the same turns as a third variant (the bf16_ figures; the same FLOP
 * count; sum_o agrees with f32 to bf16 rounding, sum_recv closely).  On a
 * CPU with AMX (util/cpu.h) the bf16 variant runs its AMX tiles and a
 * fourth, vdp_, the same mode on the vdpbf16ps tiles (SS_ISA_AVX512BF16
 * forced around its creation and its runs; vdp_kernels names them). */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "engine/attention.h"
#include "util/cpu.h"
#include "util/pool.h"
#include "util/progress.h"

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct gjob {
	long M, N, K;
	const float *A, *W;
	float *C;
} gjob;

static void gemm_task(void *ctx, int tid, int nth)
{
	const gjob *j = ctx;
	long n0, n1;
	pool_share(j->N, 16, tid, nth, &n0, &n1);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)j->M, (int)(n1 - n0), (int)j->K, 1.0f, j->A,
	            (int)j->K, j->W + n0 * j->K, (int)j->K, 0.0f, j->C + n0, (int)j->N);
}

static float rnd(unsigned *s, float lo, float hi)
{
	*s = *s * 1103515245u + 12345u;
	return lo + (hi - lo) * (float)(*s >> 8) / (float)(1u << 24);
}

/* an older attention.c, when tests/bench/attn.sh links one in */
int old_attn_create(ss_attn **out, const ss_config *c, long maxT, int nth, long qblock, ss_err *e)
	__attribute__((weak));
int old_attn_run(ss_attn *a, ss_pool *pool, float *q, long t0, long n, const float *kc, const float *vc,
                 double *recv_sum, long ld, ss_err *e) __attribute__((weak));
void old_attn_free(ss_attn *a) __attribute__((weak));

typedef struct variant {
	int (*run)(ss_attn *, ss_pool *, float *, long, long, const float *, const float *, double *, long,
	           ss_err *);
	ss_attn *a;
	double best, bestc, so, sr, dec;
	int isa;   /* the level its calls run at (ss_cpu_force); -1: the process's */
} variant;

/* v's level from here to level_end */
static int level_begin(const variant *v)
{
	int was = (int)ss_cpu_isa();
	ss_err e = {0};
	if (v->isa >= 0)
		ss_cpu_force((ss_isa)v->isa, &e);
	return was;
}

static void level_end(const variant *v, int was)
{
	ss_err e = {0};
	if (v->isa >= 0)
		ss_cpu_force((ss_isa)was, &e);
}

/* one decoding step: the last query against the T - 1 keys before it and
 * its own (best of reps, seconds) */
static double time_decode(variant *v, ss_pool *pool, long T, float *q, const float *q0, const float *K,
                          const float *V, double *rs, int reps)
{
	long qd = 14 * 64;
	ss_err e = {0};
	double best = 1e30;
	for (int r = 0; r < reps; r++) {
		for (long i = 0; i < qd; i++)
			q[(T - 1) * qd + i] = q0[(T - 1) * qd + i];
		double t0 = ss_now();
		int was = level_begin(v);
		int rc = v->run(v->a, pool, q + (T - 1) * qd, T - 1, 1, K, V, rs, T, &e);
		level_end(v, was);
		if (rc < 0) {
			fprintf(stderr, "attnbench: %s\n", e.msg);
			return -1;
		}
		double t = ss_now() - t0;
		best = t < best ? t : best;
	}
	return best;
}

static int time_attn(variant *v, ss_pool *pool, int th, long T, float *q, const float *q0, const float *K,
                     const float *V, double *rs, int first)
{
	long qd = 14 * 64;
	ss_err e = {0};
	for (long i = 0; i < T * qd; i++)
		q[i] = q0[i];
	for (long i = 0; i < 14 * T; i++)
		rs[i] = 0;
	int was = level_begin(v);
	double t0 = ss_now(), c0 = cpu_now();
	int rc = v->run(v->a, pool, q, 0, T, K, V, rs, T, &e);
	double t = ss_now() - t0, ct = (cpu_now() - c0) / th;
	level_end(v, was);
	if (rc < 0) {
		fprintf(stderr, "attnbench: %s\n", e.msg);
		return -1;
	}
	if (!first && t < v->best)
		v->best = t;
	if (!first && ct < v->bestc)
		v->bestc = ct;
	v->so = v->sr = 0;
	for (long i = 0; i < T * qd; i++)
		v->so += fabs(q[i]);
	for (long i = 0; i < 14 * T; i++)
		v->sr += rs[i] * (double)(i % T + 1);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: attnbench T THREADS [SECONDS [QBLOCK]]\n");
		return 2;
	}
	long T = atol(argv[1]);
	int th = atoi(argv[2]);
	double secs = argc > 3 ? atof(argv[3]) : 2.0;
	long qb = argc > 4 ? atol(argv[4]) : 32;   /* forward.c's QBLOCK */
	if (T < 1 || th < 1 || qb < 1)
		return 2;
	openblas_set_num_threads(1);
	ss_config c = {.n_heads = 14, .n_kv_heads = 2, .head_dim = 64};
	long H = 14, hd = 64, qd = H * hd, kvd = 2 * hd;
	ss_err e = {0};
	ss_pool *pool;
	variant nv = {attn_run, NULL, 1e30, 1e30, 0, 0, 0, -1}, ov = {old_attn_run, NULL, 1e30, 1e30, 0, 0, 0, -1};
	variant bv = {attn_run, NULL, 1e30, 1e30, 0, 0, 0, -1}, dv = {attn_run, NULL, 1e30, 1e30, 0, 0, 0, -1};
	int vdp = ss_cpu_isa() >= SS_ISA_AMX;
	const char *vdp_name = "none";
	if (vdp) {   /* the vdpbf16ps tiles next to AMX's */
		dv.isa = SS_ISA_AVX512BF16;
		int was = level_begin(&dv);
		vdp_name = attn_kernels16_name();
		if (attn_create(&dv.a, &c, T, th, qb, &e) < 0 || attn_set_compute(dv.a, SS_COMPUTE_BF16, &e) < 0) {
			fprintf(stderr, "attnbench: %s\n", e.msg);
			return 1;
		}
		level_end(&dv, was);
	}
	int old = old_attn_create && old_attn_run && old_attn_free;
	if (pool_create(&pool, th, &e) < 0 || attn_create(&nv.a, &c, T, th, qb, &e) < 0 ||
	    attn_create(&bv.a, &c, T, th, qb, &e) < 0 || attn_set_compute(bv.a, SS_COMPUTE_BF16, &e) < 0 ||
	    (old && old_attn_create(&ov.a, &c, T, th, qb, &e) < 0)) {
		fprintf(stderr, "attnbench: %s\n", e.msg);
		return 1;
	}
	if (getenv("ATTN_KT") && (attn_set_key_tile(nv.a, atol(getenv("ATTN_KT")), &e) < 0 ||
	                          attn_set_key_tile(bv.a, atol(getenv("ATTN_KT")), &e) < 0)) {
		fprintf(stderr, "attnbench: %s\n", e.msg);
		return 1;
	}
	float *q0 = malloc(sizeof(float) * (size_t)(T * qd)), *q = malloc(sizeof(float) * (size_t)(T * qd));
	float *K = malloc(sizeof(float) * (size_t)(T * kvd)), *V = malloc(sizeof(float) * (size_t)(T * kvd));
	double *rs = malloc(sizeof(double) * (size_t)(H * T));
	gjob g = {T < 512 ? T : 512, 9728, 896, NULL, NULL, NULL};
	float *A = malloc(sizeof(float) * (size_t)(g.M * g.K)), *W = malloc(sizeof(float) * (size_t)(g.N * g.K));
	float *C = malloc(sizeof(float) * (size_t)(g.M * g.N));
	if (!q0 || !q || !K || !V || !rs || !A || !W || !C)
		return 1;
	/* scores of a few units, a strong key 0 (a sink) as in real traces */
	unsigned s = 12345;
	for (long i = 0; i < T * qd; i++)
		q0[i] = rnd(&s, -0.5f, 0.5f);
	for (long i = 0; i < T * kvd; i++) {
		K[i] = rnd(&s, -0.5f, 0.5f) + (i < kvd ? 1.0f : 0.0f);
		V[i] = rnd(&s, -1.0f, 1.0f);
	}
	for (long i = 0; i < g.M * g.K; i++)
		A[i] = rnd(&s, -0.5f, 0.5f);
	for (long i = 0; i < g.N * g.K; i++)
		W[i] = rnd(&s, -0.5f, 0.5f);
	g.A = A, g.W = W, g.C = C;
	/* new, old, sgemm in turn; the sgemm repeated to take about as long */
	double gb = 1e30, gbc = 1e30, gflop = 2.0 * (double)g.M * (double)g.N * (double)g.K;
	double aflop = 4.0 * (double)hd * (double)H * (double)T * (double)(T + 1) / 2.0;
	int greps = 1;
	double start = ss_now();
	for (int rep = 0; rep < 4 || ss_now() - start < secs; rep++) {
		if (time_attn(&nv, pool, th, T, q, q0, K, V, rs, rep == 0) < 0 ||
		    time_attn(&bv, pool, th, T, q, q0, K, V, rs, rep == 0) < 0 ||
		    (vdp && time_attn(&dv, pool, th, T, q, q0, K, V, rs, rep == 0) < 0) ||
		    (old && time_attn(&ov, pool, th, T, q, q0, K, V, rs, rep == 0) < 0))
			return 1;
		double t0 = ss_now(), c0 = cpu_now();
		for (int k = 0; k < greps; k++)
			pool_run(pool, gemm_task, &g);
		double t = (ss_now() - t0) / greps, ct = (cpu_now() - c0) / th / greps;
		if (rep == 0)
			greps = (int)(aflop / gflop) > 1 ? (int)(aflop / gflop) : 1;
		else if (t < gb)
			gb = t;
		if (rep > 0 && ct < gbc)
			gbc = ct;
	}
	for (int r = 0; r < 3; r++) {
		nv.dec = time_decode(&nv, pool, T, q, q0, K, V, rs, 50);
		bv.dec = time_decode(&bv, pool, T, q, q0, K, V, rs, 50);
		if (vdp)
			dv.dec = time_decode(&dv, pool, T, q, q0, K, V, rs, 50);
		if (old)
			ov.dec = time_decode(&ov, pool, T, q, q0, K, V, rs, 50);
	}
	double sg = gflop / gb / 1e9, sgc = gflop / gbc / 1e9;
	printf("T=%ld threads=%d kernels=%s bf16_kernels=%s vdp_kernels=%s sgemm_gflops=%.1f sgemm_gflops_cpu=%.1f",
	       T, th, attn_kernels_name(), attn_kernels16_name(), vdp_name, sg, sgc);
	for (int k = 0; k < 4; k++) {
		if ((k == 1 && !old) || (k == 3 && !vdp))
			continue;
		variant *v = k == 3 ? &dv : k == 2 ? &bv : k ? &ov : &nv;
		const char *p = k == 3 ? "vdp_" : k == 2 ? "bf16_" : k ? "old_" : "";
		double ag = aflop / v->best / 1e9, agc = aflop / v->bestc / 1e9;
		printf(" %sattn_s=%.4f %sattn_gflops=%.1f %sratio=%.3f %sattn_gflops_cpu=%.1f %sratio_cpu=%.3f "
		       "%ssum_o=%.6e %ssum_recv=%.9e %sdecode_us=%.1f",
		       p, v->best, p, ag, p, ag / sg, p, agc, p, agc / sgc, p, v->so, p, v->sr, p, 1e6 * v->dec);
	}
	printf("\n");
	attn_free(nv.a);
	attn_free(bv.a);
	attn_free(dv.a);
	if (old)
		old_attn_free(ov.a);
	pool_free(pool);
	free(q0); free(q); free(K); free(V); free(rs); free(A); free(W); free(C);
	return 0;
}
