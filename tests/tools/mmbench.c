/* mmbench - one layer's four projections of the Qwen2.5-0.5B shapes (qkv
 * 1152 x 896, o 896 x 896, gate_up 9728 x 896, down 896 x 4864) at M rows,
 * by each candidate backend of the f32 and bf16 modes, alternating in one
 * process so that the machine's drift hits all alike (tests/bench/mm.sh):
 *   blas    OpenBLAS sgemm split over the pool's threads (the engine before
 *           engine/matmul.c: each thread a single-threaded call on its rows
 *           of W)
 *   dsgemm  oneDNN's dnnl_sgemm (its own threads)
 *   mmf32   oneDNN's matmul primitive, f32, weights packed (matmul.h)
 *   mmbf16  the same in bf16: bf16 A and W, f32 accumulation (matmul.h)
 *   usage: mmbench M THREADS [SECONDS]
 * Best of at least 3 timed runs of each and SECONDS (default 2) in all.
 * Output: one line of name=value pairs, GFLOP/s (2 M N K per product; _cpu:
 * over process CPU time / threads, steadier on a busy machine), and
 * the largest difference of each backend's C from blas's relative to the
 * largest |C| (rel_*), a check that all computed the same products. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <oneapi/dnnl/dnnl.h>

#include "engine/matmul.h"
#include "util/pool.h"
#include "util/progress.h"

enum { NP = 4, NB = 4 };
static const long SN[NP] = {1152, 896, 9728, 896}, SK[NP] = {896, 896, 896, 4864};

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct gjob { long M, N, K; const float *A, *W; float *C; } gjob;

static void gemm_task(void *ctx, int tid, int nth)
{
	const gjob *j = ctx;
	long n0, n1;
	pool_share(j->N, 16, tid, nth, &n0, &n1);
	if (n1 > n0)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)j->M, (int)(n1 - n0), (int)j->K, 1.0f,
		            j->A, (int)j->K, j->W + n0 * j->K, (int)j->K, 0.0f, j->C + n0, (int)j->N);
}

static float rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return (float)(*s >> 8) / (float)(1u << 24) - 0.5f;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: mmbench M THREADS [SECONDS]\n");
		return 2;
	}
	long M = atol(argv[1]);
	int th = atoi(argv[2]);
	double secs = argc > 3 ? atof(argv[3]) : 2.0;
	if (M < 1 || th < 1) {
		fprintf(stderr, "mmbench: M and THREADS must be positive\n");
		return 2;
	}
	ss_err e = {0};
	ss_pool *pool;
	ss_mm *mf, *mb;
	openblas_set_num_threads(1);
	if (pool_create(&pool, th, &e) < 0 || mm_create(&mf, SS_COMPUTE_F32, th, &e) < 0 ||
	    mm_create(&mb, SS_COMPUTE_BF16, th, &e) < 0) {
		fprintf(stderr, "mmbench: %s\n", e.msg);
		return 1;
	}
	float *W[NP], *A[NP], *C[NB][NP];
	ss_mm_w *pf[NP] = {0}, *pb[NP] = {0};
	unsigned s = 1;
	double flop = 0;
	for (int p = 0; p < NP; p++) {
		W[p] = malloc(sizeof(float) * (size_t)(SN[p] * SK[p]));
		A[p] = malloc(sizeof(float) * (size_t)(M * SK[p]));
		for (int b = 0; b < NB; b++)
			C[b][p] = malloc(sizeof(float) * (size_t)(M * SN[p]));
		for (long i = 0; i < SN[p] * SK[p]; i++)
			W[p][i] = rnd(&s) * 0.1f;
		for (long i = 0; i < M * SK[p]; i++)
			A[p][i] = rnd(&s);
		if (mm_pack(mf, &pf[p], W[p], SN[p], SK[p], SK[p], M, &e) < 0 ||
		    mm_pack(mb, &pb[p], W[p], SN[p], SK[p], SK[p], M, &e) < 0) {
			fprintf(stderr, "mmbench: %s\n", e.msg);
			return 1;
		}
		flop += 2.0 * (double)M * (double)SN[p] * (double)SK[p];
	}
	static const char *name[NB] = {"blas", "dsgemm", "mmf32", "mmbf16"};
	double best[NB] = {1e30, 1e30, 1e30, 1e30}, bestc[NB] = {1e30, 1e30, 1e30, 1e30}, t_all = ss_now();
	for (int rep = 0; rep < 4 || ss_now() - t_all < secs; rep++)
		for (int b = 0; b < NB; b++) {
			double t0 = ss_now(), c0 = cpu_now();
			for (int p = 0; p < NP; p++) {
				long N = SN[p], K = SK[p];
				int rc = 0;
				if (b == 0) {
					gjob j = {M, N, K, A[p], W[p], C[b][p]};
					pool_run(pool, gemm_task, &j);
				} else if (b == 1) {
					rc = dnnl_sgemm('N', 'T', M, N, K, 1.0f, A[p], K, W[p], K, 0.0f, C[b][p], N) !=
					     dnnl_success;
				} else {
					rc = mm_run_w(b == 2 ? mf : mb, b == 2 ? pf[p] : pb[p], M, A[p], K, W[p], K, C[b][p], N,
					            NULL, &e);
				}
				if (rc) {
					fprintf(stderr, "mmbench: %s: %s\n", name[b], e.msg);
					return 1;
				}
			}
			double t = ss_now() - t0, c = (cpu_now() - c0) / th;
			if (rep > 0 && t < best[b])   /* rep 0: warm-up (JIT, caches) */
				best[b] = t;
			if (rep > 0 && c < bestc[b])
				bestc[b] = c;
		}
	printf("M=%ld threads=%d", M, th);
	for (int b = 0; b < NB; b++)
		printf(" %s=%.1f %s_cpu=%.1f", name[b], flop / best[b] * 1e-9, name[b], flop / bestc[b] * 1e-9);
	for (int b = 1; b < NB; b++) {
		double dmax = 0, cmax = 0;
		for (int p = 0; p < NP; p++)
			for (long i = 0; i < M * SN[p]; i++) {
				double d = fabs((double)C[b][p][i] - C[0][p][i]);
				dmax = d > dmax ? d : dmax;
				cmax = fabs(C[0][p][i]) > cmax ? fabs(C[0][p][i]) : cmax;
			}
		printf(" rel_%s=%.2e", name[b], dmax / cmax);
	}
	printf(" impl_bf16=%s impl_f32=%s\n", mm_impl(mb), mm_impl(mf));
	return 0;
}
