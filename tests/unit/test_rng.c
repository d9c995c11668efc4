/* test_rng.c - splitmix64 against its published first outputs for seed 0
 * (the reference C of Vigna's splitmix64.c), and Box-Muller's normals
 * against the moments and tail mass of N(0, 1). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/rng.h"

static void test_splitmix(void **st)
{
	uint64_t s = 0;
	assert_true(ss_rng_next(&s) == 0xe220a8397b1dcdafULL);
	assert_true(ss_rng_next(&s) == 0x6e789e6aa1b965f4ULL);
	assert_true(ss_rng_next(&s) == 0x06c45d188009454fULL);
	assert_true(s == 3 * 0x9e3779b97f4a7c15ULL);
	/* the uniforms are the top 53 bits over 2^53, and the open one is
	 * half a step further: never 0 */
	s = 0;
	double u = ss_rng_unif(&s);
	assert_true(u == (double)(0xe220a8397b1dcdafULL >> 11) / 9007199254740992.0);
	s = 0;
	assert_true(ss_rng_unif_open(&s) == u + 0.5 / 9007199254740992.0);
	/* Box-Muller at hand-derived points: u1 = e^-2 gives radius 2 */
	assert_true(fabs(ss_box_muller(exp(-2.0), 0.0) - 2.0) < 1e-15);
	assert_true(fabs(ss_box_muller(exp(-2.0), 0.5) + 2.0) < 1e-15);
	assert_true(fabs(ss_box_muller(0.0, 0.0) - sqrt(-2 * log(1e-300))) < 1e-12);
}

static void test_gauss(void **st)
{
	/* n = 200000: the standard errors are 0.0022 (mean), 0.0032 (variance)
	 * and 0.00049 (mass beyond 2, 0.0455); tolerances are 5 of them */
	uint64_t s = 42;
	long n = 200000, tail = 0;
	double m1 = 0, m2 = 0;
	for (long i = 0; i < n; i++) {
		double g = ss_rng_gauss(&s);
		m1 += g;
		m2 += g * g;
		tail += fabs(g) > 2;
	}
	m1 /= n;
	m2 = m2 / n - m1 * m1;
	assert_true(fabs(m1) < 0.011);
	assert_true(fabs(m2 - 1) < 0.016);
	assert_true(fabs((double)tail / n - 0.0455003) < 0.0025);
	assert_true(s == 42 + 2 * (uint64_t)n * 0x9e3779b97f4a7c15ULL); /* two steps a normal */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_splitmix),
		cmocka_unit_test(test_gauss),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
