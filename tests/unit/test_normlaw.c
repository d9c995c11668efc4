/* test_normlaw.c - line fits and the norm law (sinks/normlaw.h) against
 * hand-derived values: exact lines, a 3-point case worked by hand, the
 * degenerate cases, and the fit table on exactly log-linear episodes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sinks/normlaw.h"

static void test_linfit(void **st)
{
	double a, b, r;
	double x[4] = {0, 1, 2, 3}, y[4] = {1, 3, 5, 7}, yd[4] = {5, 2, -1, -4};
	assert_int_equal(ss_linfit(x, y, 4, &a, &b, &r), 0);
	assert_true(a == 2 && b == 1 && fabs(r - 1) < 1e-15);
	assert_int_equal(ss_linfit(x, yd, 4, &a, &b, &r), 0);
	assert_true(a == -3 && b == 5 && fabs(r + 1) < 1e-15);
	/* x 0 1 2, y 0 2 1: means 1 and 1, sxx 2, sxy 1, syy 2: slope 1/2,
	 * intercept 1/2, r = 1 / sqrt(2 * 2) = 1/2 */
	double y3[3] = {0, 2, 1};
	assert_int_equal(ss_linfit(x, y3, 3, &a, &b, &r), 0);
	assert_true(a == 0.5 && b == 0.5 && fabs(r - 0.5) < 1e-15);
	/* y without spread: r = 0; x without spread or n < 3: no line */
	double yc[3] = {4, 4, 4}, xc[3] = {2, 2, 2};
	assert_int_equal(ss_linfit(x, yc, 3, &a, &b, &r), 0);
	assert_true(a == 0 && b == 4 && r == 0);
	assert_int_equal(ss_linfit(xc, y, 3, &a, &b, &r), -1);
	assert_int_equal(ss_linfit(x, y, 2, &a, &b, &r), -1);
}

/* lifetime = 4 ln(m) - 17.5 and score_start = 0.02 ln(m) + 0.1, exactly:
 * m = exp((life + 17.5) / 4) */
static ss_episode law(long life, long level)
{
	double x = (life + 17.5) / 4;
	return (ss_episode){.l_start = 9, .lifetime = life, .level = level, .mlp_norm_start = exp(x),
	                    .score_start = 0.02 * x + 0.1};
}

static void test_law(void **st)
{
	ss_episode ep[10] = {
		law(2, 1), law(3, 1), law(4, 1), law(12, 2), law(13, 2), law(20, 0),
		/* left out: a primary episode, a zero norm */
		{.primary = 1, .lifetime = 40, .mlp_norm_start = 1},
		{.lifetime = 30, .mlp_norm_start = 0, .level = 1},
		law(7, 3), law(8, 3),
	};
	ss_normlaw nl;
	ss_err e = {0};
	assert_int_equal(normlaw_fit(ep, 10, 0, &nl, &e), 0);
	assert_true(nl.lifetime.ok && nl.score_start.ok);
	assert_int_equal(nl.lifetime.n, 8);
	assert_true(fabs(nl.lifetime.slope - 4) < 1e-12 && fabs(nl.lifetime.intercept + 17.5) < 1e-11);
	assert_true(fabs(nl.lifetime.r - 1) < 1e-12);
	assert_true(fabs(nl.score_start.slope - 0.02) < 1e-14 &&
	            fabs(nl.score_start.intercept - 0.1) < 1e-13);
	assert_int_equal(normlaw_fit(ep, 10, 1, &nl, &e), 0);
	assert_int_equal(nl.lifetime.n, 3);
	assert_true(fabs(nl.lifetime.slope - 4) < 1e-12);
	assert_int_equal(normlaw_fit(ep, 10, 2, &nl, &e), 0);
	assert_false(nl.lifetime.ok); /* 2 episodes: no fit */
	char *buf;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(normlaw_write_tsv(f, ep, 10, 3, &e), 0);
	fclose(f);
	assert_string_equal(buf, "scope\ty\tslope\tintercept\tr\tn\n"
	                         "all\tscore_start\t0.02\t0.1\t1\t8\n"
	                         "all\tlifetime\t4\t-17.5\t1\t8\n"
	                         "level1\tscore_start\t0.02\t0.1\t1\t3\n"
	                         "level1\tlifetime\t4\t-17.5\t1\t3\n");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_linfit),
		cmocka_unit_test(test_law),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
