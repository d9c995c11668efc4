/* test_sinks.c - the sink rule (sinks/sinks.h) against hand-derived
 * values: the median (odd, even, heavy-tailed, and the failure it reports),
 * the comparison at its boundaries, the mask and the episodes of a
 * heavy-tailed trace (outliers that move a mean but not the median, an
 * outlier off position 0's direction, one just under the norm threshold,
 * one exactly on it), the layer range and the primary/secondary split. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sinks/sinks.h"
#include "util/rng.h"

static double med(const float *x, long n)
{
	double m = -1;
	ss_err e = {0};
	assert_int_equal(ss_median_f32(x, n, &m, &e), 0);
	return m;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

static void test_median(void **st)
{
	float a[5] = {5, 1, 4, 2, 3}, b[4] = {10, 1, 3, 2}, one[1] = {7};
	assert_true(med(a, 5) == 3);
	assert_true(med(b, 4) == 2.5);   /* (2 + 3) / 2 */
	assert_true(a[0] == 5 && b[0] == 10);   /* unchanged */
	assert_true(med(one, 1) == 7);
	assert_true(med(a, 0) == 0);
	/* heavy tail: two huge values move the mean to ~1.7e5, not the median */
	float h[6] = {1e6f, 1, 3, 1, 2, 1e3f};
	assert_true(med(h, 6) == 2.5);
	float d[7] = {4, 4, 4, 4, 1, 9, 4};
	assert_true(med(d, 7) == 4);
	/* Pareto samples (alpha 0.8: infinite mean) of odd and even length,
	 * against the middle of a qsort'ed copy */
	uint64_t s = 42;
	float x[257], y[257];
	for (long n = 1; n <= 257; n += 17) {
		for (long i = 0; i < n; i++)
			x[i] = (float)pow(ss_rng_unif_open(&s), -1 / 0.8);
		memcpy(y, x, sizeof(float) * (size_t)n);
		qsort(y, (size_t)n, sizeof *y, cmp_float);
		double want = n % 2 ? y[n / 2] : 0.5 * ((double)y[n / 2 - 1] + (double)y[n / 2]);
		assert_true(med(x, n) == want);
	}
	/* the scratch copy cannot be had: an error, not a value */
	ss_err e = {0};
	double m = -1;
	assert_int_equal(ss_median_f32(a, (long)(SIZE_MAX / sizeof(float)) + 1, &m, &e), -1);
	assert_non_null(strstr(e.msg, "median scratch"));
	assert_true(m == 0);
}

static void test_rule(void **st)
{
	ss_sink_params p;
	sink_params_default(&p);
	assert_true(p.tau_cos == 0.95 && p.tau_norm == 5);
	assert_true(ss_is_sink(&p, 0.96, 5.0, 1.0));    /* norm on the threshold: a sink */
	assert_false(ss_is_sink(&p, 0.96, 4.999, 1.0));
	assert_false(ss_is_sink(&p, 0.95, 100, 1.0));   /* cosine must exceed tau_cos */
	assert_true(ss_is_sink(&p, 0.9501, 100, 1.0));
	assert_true(ss_is_sink(&p, 0.99, 0, 0));        /* 0 >= 5 * 0 */
	p.tau_norm = 0;
	assert_true(ss_is_sink(&p, 0.99, 0.1, 1e9));
}

/* L = 4 layers, T = 9 positions, H = 2 heads.  Every row's norms start as
 * 64 1 .5 2 1 .75 1.5 1 3: five values <= 1, so the median is 1, and it
 * stays 1 while only positions 0, 3, 6, 8 (above it) change, however far. */
enum { L = 4, T = 9, H = 2 };

static void heavy_trace(ss_trace *tr)
{
	ss_err e = {0};
	static const float base[T] = {64, 1, .5f, 2, 1, .75f, 1.5f, 1, 3};
	assert_int_equal(trace_alloc(tr, L, T, H, &e), 0);
	for (long l = 0; l <= L; l++)
		for (long j = 0; j < T; j++) {
			tr->resid_norm[l * T + j] = base[j];
			tr->resid_cos0[l * T + j] = j ? 0.1f : 1;
		}
#define AT(l, j, n, c) (tr->resid_norm[(l) * T + (j)] = (n), tr->resid_cos0[(l) * T + (j)] = (c))
	for (long l = 1; l <= L; l++)
		AT(l, 3, 5, 0.96f);          /* exactly 5 x the median, aligned: layers 1-4 */
	AT(2, 8, 400, 0.99f);            /* heavy outlier, aligned: layers 2-3 */
	AT(3, 8, 400, 0.99f);
	AT(0, 8, 400, 0.99f);            /* row 0 (embeddings) is outside 1..L */
	AT(1, 6, 10, 0.95f);             /* cosine 0.95f < 0.95: no */
	AT(2, 6, 1000, 0.2f);            /* huge but off position 0's direction: no */
	AT(3, 6, 4.99f, 0.99f);          /* aligned, 4.99 x the median: no */
	AT(4, 6, 1.5f, 0.999f);          /* aligned, ordinary norm: no */
#undef AT
	/* recv[l][k][j] = 0.01 (k+1) l (j+1): sink-score 0.015 l (j+1) */
	for (long l = 1; l <= L; l++)
		for (long k = 0; k < H; k++)
			for (long j = 0; j < T; j++)
				tr->recv[((l - 1) * H + k) * T + j] = 0.01f * (float)((k + 1) * l * (j + 1));
	for (long l = 0; l < L; l++)
		for (long j = 0; j < T; j++)
			tr->mlp_out_norm[l * T + j] = (float)(100 * l + j);
}

static void test_mask(void **st)
{
	ss_trace tr;
	ss_err e = {0};
	heavy_trace(&tr);
	ss_sink_params p;
	sink_params_default(&p);
	unsigned char m[(L + 1) * T];
	assert_int_equal(sink_mask(&tr, &p, m, &e), 0);
	unsigned char want[(L + 1) * T] = {0};
	for (long l = 1; l <= L; l++)
		want[l * T + 3] = 1;
	want[2 * T + 8] = want[3 * T + 8] = 1;
	assert_memory_equal(m, want, sizeof want);
	/* a layer range: rows outside it stay 0 */
	p.layer_lo = 3;
	p.layer_hi = 4;
	assert_int_equal(sink_mask(&tr, &p, m, &e), 0);
	want[1 * T + 3] = want[2 * T + 3] = want[2 * T + 8] = 0;
	assert_memory_equal(m, want, sizeof want);
	/* a range past the trace: an error naming it */
	p.layer_hi = 5;
	assert_int_equal(sink_mask(&tr, &p, m, &e), -1);
	assert_non_null(strstr(e.msg, "layer range 3-5: outside the trace's layers 1-4"));
	trace_free(&tr);
}

static void test_episodes(void **st)
{
	ss_trace tr;
	ss_err e = {0};
	heavy_trace(&tr);
	ss_sink_params p;
	sink_params_default(&p);
	ss_episode *ep;
	size_t n;
	assert_int_equal(sink_episodes(&tr, &p, &ep, &n, &e), 0);
	assert_int_equal(n, 3);
	/* position 0 over the whole range, primary */
	assert_int_equal(ep[0].pos, 0);
	assert_int_equal(ep[0].l_start, 1);
	assert_int_equal(ep[0].l_end, 4);
	assert_int_equal(ep[0].primary, 1);
	/* L = 4: primary when l_start <= ceil(0.25 * 4) = 1 and l_end >= floor(0.9 * 4) = 3 */
	assert_int_equal(ep[1].pos, 3);
	assert_int_equal(ep[1].l_start, 1);
	assert_int_equal(ep[1].l_end, 4);
	assert_int_equal(ep[1].lifetime, 4);
	assert_int_equal(ep[1].primary, 1);
	assert_true(fabs(ep[1].norm_ratio - 5) < 1e-12);
	assert_true(fabs(ep[1].peak_norm - 5) < 1e-12);
	assert_true(fabs(ep[1].cos0 - 0.96) < 1e-6);
	/* scores of the reading layers 2..4: 0.015 * 4 * mean(2, 3, 4) = 0.18;
	 * at l_start + 1 = 2: 0.12; the MLP that wrote it: row 0, 0 * 100 + 3 */
	assert_true(fabs(ep[1].score - 0.18) < 1e-6);
	assert_true(fabs(ep[1].score_start - 0.12) < 1e-6);
	assert_true(ep[1].mlp_norm_start == 3);
	assert_int_equal(ep[2].pos, 8);
	assert_int_equal(ep[2].l_start, 2);
	assert_int_equal(ep[2].l_end, 3);
	assert_int_equal(ep[2].primary, 0);
	assert_true(fabs(ep[2].norm_ratio - 400) < 1e-9);
	/* layers 3, 4: 0.015 * 9 * 3.5 = 0.4725; at 3: 0.405; row 1: 108 */
	assert_true(fabs(ep[2].score - 0.4725) < 1e-6);
	assert_true(fabs(ep[2].score_start - 0.405) < 1e-6);
	assert_true(ep[2].mlp_norm_start == 108);
	free(ep);

	/* min_lifetime 3 drops the two-layer episode */
	p.min_lifetime = 3;
	assert_int_equal(sink_episodes(&tr, &p, &ep, &n, &e), 0);
	assert_int_equal(n, 2);
	assert_int_equal(ep[1].pos, 3);
	free(ep);

	/* range 3..4 (n = 2 layers): primary when l_start <= 2 + ceil(0.5) = 3
	 * and l_end >= 2 + floor(1.8) = 3: both episodes, clipped to the range */
	p.min_lifetime = 1;
	p.layer_lo = 3;
	p.layer_hi = 4;
	assert_int_equal(sink_episodes(&tr, &p, &ep, &n, &e), 0);
	assert_int_equal(n, 3);
	assert_int_equal(ep[1].l_start, 3);
	assert_int_equal(ep[1].l_end, 4);
	assert_int_equal(ep[1].primary, 1);
	assert_int_equal(ep[2].l_start, 3);
	assert_int_equal(ep[2].l_end, 3);
	assert_int_equal(ep[2].primary, 1);
	free(ep);

	/* a stricter norm threshold: 5 x median no longer, 400 x still */
	sink_params_default(&p);
	p.tau_norm = 5.5;
	assert_int_equal(sink_episodes(&tr, &p, &ep, &n, &e), 0);
	assert_int_equal(n, 2);
	assert_int_equal(ep[1].pos, 8);
	free(ep);
	trace_free(&tr);
}

static void test_params(void **st)
{
	ss_sink_params p;
	ss_err e = {0};
	long lo, hi;
	sink_params_default(&p);
	assert_int_equal(sink_params_check(&p, 24, &lo, &hi, &e), 0);
	assert_int_equal(lo, 1);
	assert_int_equal(hi, 24);
	p.tau_cos = 1;
	assert_int_equal(sink_params_check(&p, 24, &lo, &hi, &e), -1);
	assert_int_equal(e.status, SS_EXIT_USAGE);
	sink_params_default(&p);
	p.tau_norm = -1;
	assert_int_equal(sink_params_check(&p, 24, &lo, &hi, &e), -1);
	assert_int_equal(e.status, SS_EXIT_USAGE);
	sink_params_default(&p);
	p.min_lifetime = 0;
	assert_int_equal(sink_params_check(&p, 24, &lo, &hi, &e), -1);
	assert_non_null(strstr(e.msg, "--min-lifetime 0"));
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_median),
		cmocka_unit_test(test_rule),
		cmocka_unit_test(test_mask),
		cmocka_unit_test(test_episodes),
		cmocka_unit_test(test_params),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
