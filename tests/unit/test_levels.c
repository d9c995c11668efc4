/* test_levels.c - sink levels by density modes (sinks/levels.h) on planted
 * clusters, with hand-derived counts, ranges, medians and assignments;
 * membership where two levels' ranges overlap; levels_assign on a table. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sinks/levels.h"

#define MAXN 256
static long S[MAXN], T[MAXN], A[MAXN];
static double M[MAXN], SC[MAXN];
static size_t N;

/* k episodes at (s, t), mlp norms m0, m0+1, ..., scores sc */
static void add(long s, long t, int k, double m0, double sc)
{
	for (int i = 0; i < k; i++, N++) {
		S[N] = s;
		T[N] = t;
		M[N] = m0 + i;
		SC[N] = sc;
	}
}

static void test_planted(void **st)
{
	N = 0;
	/* level (12,4): 20 at the cell and 4 one layer off in lifetime */
	add(12, 4, 20, 100, 0.5);
	add(12, 5, 2, 200, 0.5);
	add(12, 3, 2, 300, 0.5);
	/* level (12,10): 15 at the cell, 3 at (13,10) */
	add(12, 10, 15, 10, 0.25);
	add(13, 10, 3, 50, 0.25);
	/* level (18,6): 10 */
	add(18, 6, 10, 1, 1.0);
	/* noise: 2 episodes far from everything (fewer than min_count 3) */
	add(30, 2, 2, 7, 0.0);
	ss_level_params p;
	levels_params_default(&p);
	ss_level *lv;
	size_t nl;
	ss_err e = {0};
	assert_int_equal(levels_find(S, T, M, SC, N, &p, A, &lv, &nl, &e), 0);
	assert_int_equal(nl, 3);
	/* ordered by l_start then lifetime; typical cell = most frequent */
	long want[3][8] = {{12, 4, 24, 12, 12, 3, 5}, {12, 10, 18, 12, 13, 10, 10}, {18, 6, 10, 18, 18, 6, 6}};
	for (int q = 0; q < 3; q++) {
		assert_int_equal(lv[q].l_start, want[q][0]);
		assert_int_equal(lv[q].lifetime, want[q][1]);
		assert_int_equal(lv[q].count, want[q][2]);
		assert_int_equal(lv[q].s_min, want[q][3]);
		assert_int_equal(lv[q].s_max, want[q][4]);
		assert_int_equal(lv[q].t_min, want[q][5]);
		assert_int_equal(lv[q].t_max, want[q][6]);
		assert_true(fabs(lv[q].share - (double)want[q][2] / 54) < 1e-15);
	}
	/* medians: level 1 norms 100..119, 200, 201, 300, 301 -> (111 + 112) / 2;
	 * level 2: 10..24, 50..52 -> (18 + 19) / 2; level 3: 1..10 -> 5.5 */
	assert_true(lv[0].mlp_norm_median == 111.5);
	assert_true(lv[1].mlp_norm_median == 18.5);
	assert_true(lv[2].mlp_norm_median == 5.5);
	assert_true(lv[0].score_mean == 0.5 && lv[1].score_mean == 0.25 && lv[2].score_mean == 1);
	for (size_t i = 0; i < N; i++) {
		long w = S[i] == 30 ? -1 : S[i] == 18 ? 2 : T[i] == 10 ? 1 : 0;
		assert_int_equal(A[i], w);
	}
	free(lv);
	/* min_share: 1/4 of 54 = 13.5 episodes drop level 3 (10) to noise */
	p.min_share = 0.25;
	assert_int_equal(levels_find(S, T, M, SC, N, &p, A, &lv, &nl, &e), 0);
	assert_int_equal(nl, 2);
	assert_int_equal(A[N - 3], -1);
	free(lv);
	/* a wide kernel (tol 4: radius 8) merges (12,4) and (12,10) */
	levels_params_default(&p);
	p.tol = 4;
	assert_int_equal(levels_find(S, T, M, SC, N, &p, A, &lv, &nl, &e), 0);
	assert_true(nl < 3);
	assert_int_equal(A[0], A[30]);
	free(lv);
}

/* Level 1 at (10,4) x40 with 5 at (12,6); level 2 at (13,2) x50 with 5 at
 * (11,4).  (11,4) lies in level 1's ranges (l_start 10-12, lifetime 4-6)
 * but within 2 (Chebyshev) of both peaks, and (13,2) is the denser:
 * density 50 + 5 e^{-8/2} = 50.09 against 40 + 5 e^{-1/2} + 5 e^{-8/2} =
 * 43.1 at (10,4).  So its episodes are level 2's, whatever the ranges say. */
static void test_overlap(void **st)
{
	N = 0;
	add(10, 4, 40, 1, 0);
	add(12, 6, 5, 1, 0);
	add(13, 2, 50, 1, 0);
	add(11, 4, 5, 1, 0);
	ss_level_params p;
	levels_params_default(&p);
	ss_level *lv;
	size_t nl;
	ss_err e = {0};
	assert_int_equal(levels_find(S, T, M, SC, N, &p, A, &lv, &nl, &e), 0);
	assert_int_equal(nl, 2);
	assert_int_equal(lv[0].count, 45);
	assert_int_equal(lv[0].s_max, 12);
	assert_int_equal(lv[0].t_max, 6);
	assert_int_equal(lv[1].count, 55);
	assert_int_equal(lv[1].s_min, 11);
	assert_int_equal(A[44], 0);
	assert_int_equal(A[95], 1); /* the first (11,4) */
	assert_int_equal(A[99], 1);
	free(lv);
}

static void test_assign_table(void **st)
{
	ss_eptab t = {0};
	ss_episode ep[6] = {
		{.pos = 0, .primary = 1, .l_start = 1, .lifetime = 20, .level = 9},
		{.pos = 1, .l_start = 5, .lifetime = 2, .mlp_norm_start = 1},
		{.pos = 2, .l_start = 5, .lifetime = 2, .mlp_norm_start = 3},
		{.pos = 3, .l_start = 5, .lifetime = 2, .mlp_norm_start = 2},
		{.pos = 4, .l_start = 9, .lifetime = 7, .mlp_norm_start = 2, .level = 4},
		{.pos = 5, .l_start = 5, .lifetime = 3, .mlp_norm_start = 5},
	};
	char *txt[6] = {"<s>", ",", ",", ".", "x", ","};
	t.n = 6;
	t.ep = ep;
	t.text = txt;
	ss_level_params p;
	levels_params_default(&p);
	ss_level *lv;
	size_t nl;
	ss_err e = {0};
	assert_int_equal(levels_assign(&t, &p, &lv, &nl, &e), 0);
	assert_int_equal(nl, 1);
	assert_int_equal(lv[0].count, 4);
	long want[6] = {0, 1, 1, 1, 0, 1}; /* primary and noise 0, the level 1-based */
	for (int i = 0; i < 6; i++)
		assert_int_equal(ep[i].level, want[i]);
	char *buf;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(levels_write_tsv(f, lv, nl, &t, 3, &e), 0);
	fclose(f);
	/* (5,2) x3 and (5,3) x1; median of 1, 3, 2, 5 = 2.5; tokens by count */
	assert_string_equal(strchr(buf, '\n') + 1, "1\t5\t2\t4\t0.8\t2.5\t0\t5\t5\t2\t3\t\\\",\\\"x3 \\\".\\\"x1\n"); /* quotes escaped: tsv.h */
	free(buf);
	free(lv);
	p.tol = 0;
	assert_int_equal(levels_params_check(&p, &e), -1);
	assert_int_equal(e.status, SS_EXIT_USAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_planted),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_assign_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
