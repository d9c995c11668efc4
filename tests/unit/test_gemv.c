/* test_gemv.c - bf16-weight gemv (engine/gemv.h) on every path this CPU
 * runs, against a double-precision sum of the same products:
 *   |y - ref| <= 1e-5 * sum |w x| + 1e-30   (f32 sums in any order)
 * with K and N not multiples of any vector width (tails), rows apart
 * (ldw > K), and for the bf16-input kernel x rounded to bf16 first. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "engine/gemv.h"
#include "io/stconv.h"

static uint64_t rng = 99;
static double unif(void)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(rng >> 11) / 9007199254740992.0;
}

static void check(long N, long K, long ldw, int dot, ss_gemv_path p)
{
	uint16_t *W = malloc((size_t)N * ldw * sizeof *W), *xb = malloc((size_t)K * sizeof *xb);
	float *x = malloc((size_t)K * sizeof *x), *y = malloc((size_t)N * sizeof *y);
	assert_non_null(W);
	for (long i = 0; i < N * ldw; i++)
		W[i] = st_f32_to_bf16((float)(2 * unif() - 1));
	for (long k = 0; k < K; k++) {
		x[k] = (float)(4 * unif() - 2);
		xb[k] = st_f32_to_bf16(x[k]);
	}
	gemv_set_path(p);
	assert_int_equal(dot ? gemv_dot_path() : gemv_path(),
	                 dot || p != SS_GEMV_AVX512BF16 ? p : SS_GEMV_AVX512);
	if (dot)
		gemv_bf16_dot(N, K, W, ldw, xb, y);
	else
		gemv_bf16(N, K, W, ldw, x, y);
	for (long i = 0; i < N; i++) {
		double s = 0, a = 0;
		for (long k = 0; k < K; k++) {
			double w = st_bf16_to_f32(W[i * ldw + k]), v = dot ? st_bf16_to_f32(xb[k]) : x[k];
			s += w * v;
			a += fabs(w * v);
		}
		if (fabs(y[i] - s) > 1e-5 * a + 1e-30)
			fail_msg("path %s %s N %ld K %ld row %ld: %.9g vs %.9g", gemv_path_name(p),
			         dot ? "dot" : "f32", N, K, i, y[i], s);
	}
	free(W);
	free(xb);
	free(x);
	free(y);
}

static void every_path(void **state)
{
	static const long shape[][3] = {{1, 1, 1}, {3, 7, 9}, {4, 16, 16}, {5, 33, 40}, {13, 896, 896},
	                                {9, 97, 128}, {64, 4864, 4864}, {7, 31, 31}};
	ss_gemv_path best = gemv_cpu_best();
	for (int p = SS_GEMV_C; p <= (int)best; p++)
		for (size_t s = 0; s < sizeof shape / sizeof *shape; s++)
			for (int dot = 0; dot < 2; dot++)
				check(shape[s][0], shape[s][1], shape[s][2], dot, (ss_gemv_path)p);
	gemv_set_path(best);
	print_message("# gemv paths run: c..%s\n", gemv_path_name(best));
}

/* exact where every partial sum is: small integers times powers of two */
static void exact_small(void **state)
{
	uint16_t W[2 * 40];
	float x[40], y[2];
	for (int k = 0; k < 40; k++) {
		W[k] = st_f32_to_bf16((float)(k % 5));
		W[40 + k] = st_f32_to_bf16(-0.5f);
		x[k] = (float)(k % 3);
	}
	double want = 0;
	for (int k = 0; k < 40; k++)
		want += (k % 5) * (k % 3);
	for (int p = SS_GEMV_C; p <= (int)gemv_cpu_best(); p++) {
		gemv_set_path((ss_gemv_path)p);
		gemv_bf16(2, 40, W, 40, x, y);
		assert_float_equal(y[0], want, 0);
		assert_float_equal(y[1], -0.5 * 39, 0);   /* sum of k % 3 over 40 = 39 */
	}
	gemv_set_path(gemv_cpu_best());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_path),
		cmocka_unit_test(exact_small),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
