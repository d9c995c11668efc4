/* test_sample.c - sampling (greedy, temperature, top-p, seeds)
 * against hand-derived values. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "engine/sample.h"

static void test_greedy(void **st)
{
	float lg[5] = {0.1f, 3.0f, -1.0f, 3.0f, 2.0f};
	ss_sampler s;
	ss_err e = {0};
	assert_int_equal(sampler_init(&s, 5, 0.0, 1.0, 7, &e), 0);
	assert_int_equal(sampler_next(&s, lg), 1); /* ties: lowest id */
	sampler_free(&s);
}

/* With logits log(p), temperature 1 draws follow p; top-p 0.5 on
 * p = (0.4, 0.3, 0.2, 0.1) keeps {0, 1} renormalised to (4/7, 3/7). */
static void test_distribution(void **st)
{
	float lg[4] = {logf(0.4f), logf(0.3f), logf(0.2f), logf(0.1f)};
	ss_err e = {0};
	ss_sampler s;
	long cnt[4] = {0}, N = 200000;
	assert_int_equal(sampler_init(&s, 4, 1.0, 1.0, 42, &e), 0);
	for (long i = 0; i < N; i++)
		cnt[sampler_next(&s, lg)]++;
	sampler_free(&s);
	double p[4] = {0.4, 0.3, 0.2, 0.1};
	for (int i = 0; i < 4; i++)
		assert_true(fabs(cnt[i] / (double)N - p[i]) < 0.005);
	long c2[4] = {0};
	assert_int_equal(sampler_init(&s, 4, 1.0, 0.5, 42, &e), 0);
	for (long i = 0; i < N; i++)
		c2[sampler_next(&s, lg)]++;
	sampler_free(&s);
	assert_int_equal(c2[2] + c2[3], 0);
	assert_true(fabs(c2[0] / (double)N - 4.0 / 7) < 0.005);
	/* temperature 0.5 squares then renormalises: 16:9:4:1 */
	long c3[4] = {0};
	assert_int_equal(sampler_init(&s, 4, 0.5, 1.0, 1, &e), 0);
	for (long i = 0; i < N; i++)
		c3[sampler_next(&s, lg)]++;
	sampler_free(&s);
	assert_true(fabs(c3[0] / (double)N - 16.0 / 30) < 0.005);
	assert_true(fabs(c3[3] / (double)N - 1.0 / 30) < 0.003);
}

static void test_seed(void **st)
{
	float lg[8] = {0};
	ss_err e = {0};
	ss_sampler a, b, c;
	assert_int_equal(sampler_init(&a, 8, 1.0, 0.9, 5, &e), 0);
	assert_int_equal(sampler_init(&b, 8, 1.0, 0.9, 5, &e), 0);
	assert_int_equal(sampler_init(&c, 8, 1.0, 0.9, 6, &e), 0);
	int same = 1, diff = 0;
	for (int i = 0; i < 100; i++) {
		long x = sampler_next(&a, lg), y = sampler_next(&b, lg), z = sampler_next(&c, lg);
		same &= x == y;
		diff += x != z;
	}
	assert_true(same);
	assert_true(diff > 50);
	sampler_free(&a);
	sampler_free(&b);
	sampler_free(&c);
	assert_int_equal(sampler_init(&a, 8, -1.0, 0.9, 5, &e), -1);
	assert_int_equal(sampler_init(&a, 8, 1.0, 0.0, 5, &e), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_greedy),
		cmocka_unit_test(test_distribution),
		cmocka_unit_test(test_seed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
