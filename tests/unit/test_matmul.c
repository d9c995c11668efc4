/* test_matmul.c - engine/matmul.h against a double-precision sum of the
 * same products, |C - ref| <= tol * sum |a w| + 1e-30 (tol 1e-5 for f32
 * arithmetic in any order, 2^-7 for bf16 inputs), and its refusal of
 * oneDNN's reference implementation:
 *   - a strided f32 A given to oneDNN as it is (mm_test_set's
 *     no_dense_copy; oneDNN 2.6 has only ref:any for it) is declined: the
 *     result is sgemm's (f32 tolerance), one warning line on stderr names
 *     the shape and ref, and a second product of that shape warns no more;
 *   - an implementation declared ref by the test hook (the one oneDNN picked
 *     for a dense product, in both modes) is declined the same way, and in
 *     the bf16 mode the result then has f32's accuracy, which bf16 inputs
 *     cannot reach (so sgemm ran, not oneDNN);
 *   - with no W to fall back on, a declined product returns 1, C untouched;
 *   - weights packed from pieces (bf16 and f32 rows, a transposed bf16
 *     matrix as GPT-2's Conv1D stores it) give the product of the
 *     bf16-rounded W.
 * The whole group runs twice: as oneDNN chooses on this CPU, and in a child
 * process with oneDNN capped at AVX2 (dnnl_set_max_cpu_isa), where its f32
 * matmul is gemm:jit on a plain weight layout that matmul.c fills itself
 * (plain_copy) instead of oneDNN's slow simple:any reorder. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "engine/matmul.h"
#include "io/stconv.h"
#include "util/cpu.h"

#include <oneapi/dnnl/dnnl.h>

static uint64_t rng = 7;
static double unif(void)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(rng >> 11) / 9007199254740992.0;
}

typedef struct prob {
	long M, N, K, lda, ldc;
	float *A, *W, *C, *bias;
	double *ref, *mag;
} prob;

static prob mk(long M, long N, long K, long lda, long ldc)
{
	prob p = {.M = M, .N = N, .K = K, .lda = lda, .ldc = ldc};
	p.A = malloc(sizeof(float) * (size_t)(M * lda));
	p.W = malloc(sizeof(float) * (size_t)(N * K));
	p.C = malloc(sizeof(float) * (size_t)(M * ldc));
	p.bias = malloc(sizeof(float) * (size_t)N);
	p.ref = malloc(sizeof(double) * (size_t)(M * N));
	p.mag = malloc(sizeof(double) * (size_t)(M * N));
	assert_non_null(p.mag);
	for (long i = 0; i < M * lda; i++)
		p.A[i] = (float)(2 * unif() - 1);
	for (long i = 0; i < N * K; i++)
		p.W[i] = (float)(2 * unif() - 1);
	for (long j = 0; j < N; j++)
		p.bias[j] = (float)(unif() - 0.5);
	for (long i = 0; i < M; i++)
		for (long j = 0; j < N; j++) {
			double s = p.bias[j], a = fabs(p.bias[j]);
			for (long k = 0; k < K; k++) {
				s += (double)p.A[i * lda + k] * p.W[j * K + k];
				a += fabs((double)p.A[i * lda + k] * p.W[j * K + k]);
			}
			p.ref[i * N + j] = s;
			p.mag[i * N + j] = a;
		}
	return p;
}

static void rm(prob *p)
{
	free(p->A), free(p->W), free(p->C), free(p->bias), free(p->ref), free(p->mag);
}

/* the largest |C - ref| / sum |a w| */
static double err(const prob *p)
{
	double w = 0;
	for (long i = 0; i < p->M; i++)
		for (long j = 0; j < p->N; j++) {
			double d = fabs(p->C[i * p->ldc + j] - p->ref[i * p->N + j]) / (p->mag[i * p->N + j] + 1e-30);
			w = d > w ? d : w;
		}
	return w;
}

/* stderr into a file while f runs; returns the lines naming a declined shape */
static char cap[4096];
static int saved = -1;
static FILE *capf;
static void cap_start(void)
{
	fflush(stderr);
	capf = tmpfile();
	assert_non_null(capf);
	saved = dup(2);
	dup2(fileno(capf), 2);
}
static int cap_end(void)
{
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(capf);
	size_t n = fread(cap, 1, sizeof cap - 1, capf);
	cap[n] = 0;
	fclose(capf);
	int lines = 0;
	for (const char *s = cap; (s = strstr(s, "warning: oneDNN has only")); s++)
		lines++;
	return lines;
}

static void run(ss_mm *m, prob *p, ss_mm_w **w, int with_w)
{
	ss_err e = {0};
	if (!*w)
		assert_int_equal(mm_pack(m, w, p->W, p->N, p->K, p->K, p->M, &e), 0);
	for (long i = 0; i < p->M * p->ldc; i++)
		p->C[i] = NAN;
	int rc = mm_run_w(m, *w, p->M, p->A, p->lda, with_w ? p->W : NULL, p->K, p->C, p->ldc, p->bias, &e);
	if (rc < 0)
		fail_msg("mm_run: %s", e.msg);
	assert_int_equal(rc, with_w ? 0 : mm_declined(m) ? 1 : 0);
}

/* dense products in both modes: oneDNN's own result, not declined */
static int capped;   /* 1 in the AVX2-capped child */
/* 1 where oneDNN has no bf16 matmul (the capped child; a CPU without
 * AVX512_BF16 or AMX, or oneDNN capped by ONEDNN_MAX_CPU_ISA): f32 only */
static int nobf16;

static void dense(void **state)
{
	(void)state;
	for (int mode = 0; mode < 2 - nobf16; mode++) {
		ss_mm *m;
		ss_err e = {0};
		assert_int_equal(mm_create(&m, (ss_compute)mode, 2, &e), 0);
		prob p = mk(37, 70, 96, 96, 70);
		ss_mm_w *w = NULL;
		run(m, &p, &w, 1);
		assert_int_equal(mm_declined(m), 0);
		assert_true(strncmp(mm_impl(m), "ref:", 4) != 0);
		double d = err(&p);
		if (d > (mode ? 1.0 / 128 : 1e-5))
			fail_msg("%s (%s): error %g", mm_compute_name((ss_compute)mode), mm_impl(m), d);
		/* mm_blocked says what the dense product ran on */
		assert_int_equal(mm_blocked(m), !strncmp(mm_impl(m), "brg", 3));
		if (capped)
			assert_int_equal(mm_blocked(m), 0);
		if (mode == 1 && d < 1e-4)   /* bf16 inputs really */
			fail_msg("bf16 mode as accurate as f32 (%g)", d);
		mm_w_free(w);
		rm(&p);
		mm_free(m);
	}
}

/* a strided A that oneDNN 2.6 can only run on ref:any */
static void strided_ref(void **state)
{
	(void)state;
	ss_mm *m;
	ss_err e = {0};
	assert_int_equal(mm_create(&m, SS_COMPUTE_F32, 2, &e), 0);
	if (!mm_blocked(m)) {   /* gemm:jit (AVX2) takes a strided A itself */
		mm_free(m);
		skip();
	}
	mm_test_set(m, 1, NULL);
	prob p = mk(33, 48, 64, 2 * 64, 48);   /* A: the first 64 of 128 columns */
	ss_mm_w *w = NULL;
	cap_start();
	run(m, &p, &w, 1);
	run(m, &p, &w, 1);   /* the same shape again: no second warning */
	int lines = cap_end();
	assert_int_equal(mm_declined(m), 1);
	assert_int_equal(lines, 1);
	if (!strstr(cap, "ref:") || !strstr(cap, "33 x 48 x 64"))
		fail_msg("the warning names neither ref nor the shape: %s", cap);
	assert_string_equal(mm_impl(m), "sgemm (declined ref)");
	if (err(&p) > 1e-5)
		fail_msg("declined product: error %g", err(&p));
	mm_w_free(w);
	rm(&p);
	mm_free(m);
}

/* the implementation picked for a dense product, declared ref by the hook */
static void forced_ref(void **state)
{
	(void)state;
	for (int mode = 0; mode < 2 - nobf16; mode++) {
		ss_mm *m;
		ss_err e = {0};
		assert_int_equal(mm_create(&m, (ss_compute)mode, 2, &e), 0);
		prob p = mk(20, 40, 72, 72, 40);
		ss_mm_w *w = NULL;
		run(m, &p, &w, 1);
		char impl[48];
		snprintf(impl, sizeof impl, "%s", mm_impl(m));
		mm_w_free(w);
		mm_free(m);
		assert_int_equal(mm_create(&m, (ss_compute)mode, 2, &e), 0);
		mm_test_set(m, 0, impl);
		w = NULL;
		cap_start();
		run(m, &p, &w, 1);
		run(m, &p, &w, 1);
		int lines = cap_end();
		assert_int_equal(lines, 1);
		assert_int_equal(mm_declined(m), 1);
		if (!strstr(cap, impl))
			fail_msg("the warning does not name %s: %s", impl, cap);
		if (err(&p) > 1e-5)   /* f32 sgemm, also in the bf16 mode */
			fail_msg("%s declined: error %g", mm_compute_name((ss_compute)mode), err(&p));
		/* no W: the caller's to do, C untouched */
		cap_start();
		run(m, &p, &w, 0);
		assert_int_equal(cap_end(), 0);
		for (long i = 0; i < p.M * p.ldc; i++)
			assert_true(isnan(p.C[i]));
		/* another shape is not declined by the first one's */
		prob q = mk(20, 24, 72, 72, 24);
		ss_mm_w *wq = NULL;
		mm_test_set(m, 0, NULL);
		run(m, &q, &wq, 1);
		assert_int_equal(mm_declined(m), 1);
		assert_true(strcmp(mm_impl(m), "sgemm (declined ref)") != 0);
		mm_w_free(wq);
		rm(&q);
		mm_w_free(w);
		rm(&p);
		mm_free(m);
	}
}

/* W given as pieces: the product of bf16(W) whatever the pieces' types */
static void pieces(void **state)
{
	(void)state;
	long M = 29, N = 160, K = 96, n1 = 128;   /* pieces split at 128 rows: oneDNN's blocks are at most 64 */
	for (int mode = 0; mode < 2 - nobf16; mode++)
		for (int c = 0; c < 3; c++) {   /* two bf16 row pieces; one transposed bf16; f32 + bf16 */
			ss_mm *m;
			ss_err e = {0};
			assert_int_equal(mm_create(&m, (ss_compute)mode, 2, &e), 0);
			prob p = mk(M, N, K, K, N);
			uint16_t *wb = malloc(sizeof *wb * (size_t)(N * K)), *wt = malloc(sizeof *wt * (size_t)(N * K));
			assert_non_null(wt);
			for (long i = 0; i < N * K; i++) {   /* W := bf16(W), the reference again */
				wb[i] = st_f32_to_bf16(p.W[i]);
				p.W[i] = st_bf16_to_f32(wb[i]);
			}
			for (long j = 0; j < N; j++)
				for (long k = 0; k < K; k++)
					wt[k * N + j] = wb[j * K + k];
			for (long i = 0; i < M; i++)
				for (long j = 0; j < N; j++) {
					double s = p.bias[j], a = fabs(p.bias[j]);
					for (long k = 0; k < K; k++) {
						s += (double)p.A[i * K + k] * p.W[j * K + k];
						a += fabs((double)p.A[i * K + k] * p.W[j * K + k]);
					}
					p.ref[i * N + j] = s, p.mag[i * N + j] = a;
				}
			ss_mm_piece pc[2] = {{.src = wb, .bf16 = 1, .n0 = 0, .rows = n1, .ld = K},
			                     {.src = wb + n1 * K, .bf16 = 1, .n0 = n1, .rows = N - n1, .ld = K}};
			if (c == 1)
				pc[0] = (ss_mm_piece){.src = wt, .bf16 = 1, .tr = 1, .n0 = 0, .rows = N, .ld = N};
			if (c == 2)
				pc[0] = (ss_mm_piece){.src = p.W, .bf16 = 0, .n0 = 0, .rows = n1, .ld = K};
			ss_mm_w *w = NULL;
			if (mm_pack_pieces(m, &w, N, K, M, pc, c == 1 ? 1 : 2, &e) < 0)
				fail_msg("pieces case %d: %s", c, e.msg);
			if (capped && mode == 0 && !mm_w_plain(w))
				fail_msg("oneDNN capped at AVX2 chose a blocked f32 layout: plain_copy not tested");
			for (long i = 0; i < M * N; i++)
				p.C[i] = NAN;
			assert_int_equal(mm_run_w(m, w, M, p.A, K, NULL, K, p.C, N, p.bias, &e), 0);
			double d = err(&p);
			if (d > (mode ? 1.0 / 128 : 1e-5))
				fail_msg("%s pieces case %d (%s%s): error %g", mm_compute_name((ss_compute)mode), c,
				         mm_impl(m), mm_w_plain(w) ? ", plain" : "", d);
			mm_w_free(w);
			free(wb), free(wt);
			rm(&p);
			mm_free(m);
		}
}

/* bf16 pieces packed by matmul.c's own transposes (AVX-512: brgemm's
 * blocked layouts) give the bytes oneDNN's reorder gives, padding included,
 * at shapes with K and N on and off the blocks (odd K: a half pair) */
static void own_packing(void **state)
{
	(void)state;
	const long shp[][2] = {{1152, 896}, {160, 96}, {130, 97}, {64, 33}, {5, 1}, {200, 70}, {896, 4864}};
	int mine = 0;
	for (int mode = 0; mode < 2 - nobf16; mode++)
		for (size_t t = 0; t < sizeof shp / sizeof shp[0]; t++) {
			long N = shp[t][0], K = shp[t][1], n1 = N > 128 ? 128 : N;
			ss_mm *m;
			ss_err e = {0};
			assert_int_equal(mm_create(&m, (ss_compute)mode, 2, &e), 0);
			uint16_t *wb = malloc(sizeof *wb * (size_t)(N * K));
			assert_non_null(wb);
			unsigned r = 12345u + (unsigned)t;
			for (long i = 0; i < N * K; i++) {
				r = r * 1103515245u + 12345u;
				wb[i] = st_f32_to_bf16(((float)(r >> 9) / (float)(1u << 23) - 0.5f) * 0.2f);
			}
			ss_mm_piece pc[2] = {{.src = wb, .bf16 = 1, .n0 = 0, .rows = n1, .ld = K},
			                     {.src = wb + n1 * K, .bf16 = 1, .n0 = n1, .rows = N - n1, .ld = K}};
			int np = n1 < N ? 2 : 1;
			ss_mm_w *a = NULL, *b = NULL;
			if (mm_pack_pieces(m, &a, N, K, 512, pc, np, &e) < 0)
				fail_msg("own packing %ld x %ld: %s", N, K, e.msg);
			mm_test_reorder_only(m, 1);
			if (mm_pack_pieces(m, &b, N, K, 512, pc, np, &e) < 0)
				fail_msg("reorder packing %ld x %ld: %s", N, K, e.msg);
			assert_int_equal(mm_w_bytes(a), mm_w_bytes(b));
			if (memcmp(mm_w_data(a), mm_w_data(b), mm_w_bytes(a)) != 0)
				fail_msg("%s packing of %ld x %ld differs from oneDNN's reorder",
				         mm_compute_name((ss_compute)mode), N, K);
			mine += !mm_w_plain(a);
			mm_w_free(a), mm_w_free(b);
			free(wb);
			mm_free(m);
		}
	if (ss_cpu_isa() >= SS_ISA_AVX512 && !capped && !mine)
		fail_msg("no shape took a blocked layout: the own packing went untested");
}

/* mm_w_suits: a packing suits the rows it was made for, and where it says
 * a packing suits other rows, a packing made for them holds the same bytes
 * (what lets the engine keep packings from pass to pass, forward.h) */
static void suits(void **state)
{
	(void)state;
	const long shp[][2] = {{64, 64}, {64, 172}, {256, 64}, {1152, 896}, {97, 130}};
	const long Ms[] = {1, 7, 16, 37, 100, 512, 2048};
	enum { NM = sizeof Ms / sizeof Ms[0] };
	for (int mode = 0; mode < 2 - nobf16; mode++)
		for (size_t t = 0; t < sizeof shp / sizeof shp[0]; t++) {
			long N = shp[t][0], K = shp[t][1];
			ss_mm *m;
			ss_err e = {0};
			assert_int_equal(mm_create(&m, (ss_compute)mode, 2, &e), 0);
			float *W = malloc(sizeof *W * (size_t)(N * K));
			assert_non_null(W);
			for (long i = 0; i < N * K; i++)
				W[i] = (float)((i * 7919) % 2001) / 1000.0f - 1.0f;
			ss_mm_w *w[NM] = {NULL};
			for (int a = 0; a < NM; a++)
				assert_int_equal(mm_pack(m, &w[a], W, N, K, K, Ms[a], &e), 0);
			for (int a = 0; a < NM; a++) {
				if (!mm_w_suits(m, w[a], Ms[a]))
					fail_msg("%s %ld x %ld: the packing for %ld rows does not suit them",
					         mm_compute_name((ss_compute)mode), N, K, Ms[a]);
				for (int b = 0; b < NM; b++)
					if (mm_w_suits(m, w[a], Ms[b]) &&
					    (mm_w_bytes(w[a]) != mm_w_bytes(w[b]) ||
					     memcmp(mm_w_data(w[a]), mm_w_data(w[b]), mm_w_bytes(w[a]))))
						fail_msg("%s %ld x %ld: the packing for %ld rows said to suit %ld rows, "
						         "whose own packing differs", mm_compute_name((ss_compute)mode), N, K,
						         Ms[a], Ms[b]);
			}
			for (int a = 0; a < NM; a++)
				mm_w_free(w[a]);
			free(W);
			mm_free(m);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dense),
		cmocka_unit_test(strided_ref),
		cmocka_unit_test(forced_ref),
		cmocka_unit_test(pieces),
		cmocka_unit_test(own_packing),
		cmocka_unit_test(suits),
	};
	fflush(stdout);
	pid_t pid = fork();   /* before any oneDNN call of this process */
	if (pid == 0) {
		capped = nobf16 = 1;
		if (dnnl_set_max_cpu_isa(dnnl_cpu_isa_avx2) != dnnl_success)
			_exit(1);
		const struct CMUnitTest avx2[] = {cmocka_unit_test(dense), cmocka_unit_test(pieces)};
		_exit(_cmocka_run_group_tests("matmul (oneDNN capped at AVX2: f32)", avx2,
		                              sizeof avx2 / sizeof avx2[0], NULL, NULL) != 0);
	}
	int st = 0, rc = pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st);
	ss_mm *m;
	ss_err e = {0};
	if (mm_create(&m, SS_COMPUTE_BF16, 2, &e) < 0) {
		fprintf(stderr, "test_matmul: %s\n", e.msg);
		return 1;
	}
	nobf16 = !mm_blocked(m);
	mm_free(m);
	if (nobf16)
		printf("# oneDNN has no bf16 matmul here: the bf16 mode's cases are not run\n");
	return _cmocka_run_group_tests("matmul", tests, sizeof tests / sizeof tests[0], NULL, NULL) | rc;
}
