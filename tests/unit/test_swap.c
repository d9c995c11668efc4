/* test_swap.c - the parts of token swapping (interv/swap.h) that need no
 * model, against hand-derived values: the component list, the targets of
 * an episode table (secondary episodes of this trace only; range errors
 * naming file and line) and the summary table (levels by (l_start,
 * lifetime) rank, counts, fractions suppressed, the decision layer).  The
 * swaps themselves are checked against the float64 reference in
 * tests/ref/swapexp.sh and tests/ref/families.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "interv/swap.h"

static void test_comps(void **st)
{
	unsigned m;
	ss_err e = {0};
	assert_int_equal(swap_comps_parse("resid,mlp_out", &m, &e), 0);
	assert_int_equal(m, (1u << SS_SWAP_RESID) | (1u << SS_SWAP_MLP_OUT));
	assert_int_equal(swap_comps_parse("all", &m, &e), 0);
	assert_int_equal(m, 7);
	assert_int_equal(swap_comps_parse("attn_out", &m, &e), 0);
	assert_int_equal(m, 1u << SS_SWAP_ATTN_OUT);
	assert_int_equal(swap_comps_parse("resid,mlp", &m, &e), -1);
	assert_int_equal(e.status, SS_EXIT_USAGE);
	assert_non_null(strstr(e.msg, "unknown 'mlp'"));
}

static const char *write_tmp(const char *text)
{
	static char path[64];
	strcpy(path, "/tmp/ssswap.XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void test_targets(void **st)
{
	ss_err e = {0};
	ss_swap_target *tg;
	size_t n;
	const char *p = write_tmp(
		"trace\tpos\ttoken\tkind\tl_start\tl_end\tlifetime\tlevel\n"
		"a.h5\t0\t1\tprimary\t1\t24\t24\t0\n"
		"a.h5\t7\t13\tsecondary\t5\t8\t4\t2\n"
		"b.h5\t9\t13\tsecondary\t6\t6\t1\t1\n"      /* another trace */
		"a.h5\t11\t13\tsecondary\t3\t3\t1\t1\n");
	assert_int_equal(swap_targets_read(p, "a.h5", 20, 24, &tg, &n, &e), 0);
	assert_int_equal(n, 2);
	assert_int_equal(tg[0].pos, 7);
	assert_int_equal(tg[0].l_start, 5);
	assert_int_equal(tg[0].lifetime, 4);
	assert_int_equal(tg[0].level, 2);
	assert_int_equal(tg[1].pos, 11);
	assert_int_equal(tg[1].level, 1);
	free(tg);
	/* a trace of 10 tokens: pos 11 (line 5) is outside 1-9 */
	assert_int_equal(swap_targets_read(p, "a.h5", 10, 24, &tg, &n, &e), -1);
	assert_non_null(strstr(e.msg, ":5: pos 11 out of range 1-9 of trace a.h5"));
	/* 4 layers: l_start 5 (line 3) is outside */
	assert_int_equal(swap_targets_read(p, "a.h5", 20, 4, &tg, &n, &e), -1);
	assert_non_null(strstr(e.msg, ":3: l_start 5 out of range 1-4"));
	unlink(p);
}

/* window 2; targets (l_start, lifetime) (3,2), (3,2), (6,1): levels 1, 1,
 * 2 by rank.  resid swaps: the first target still a sink after the swap at
 * layer 2, suppressed at 3; the second suppressed at 2 and 3; the third
 * not a sink at layer 5 without the swap (not counted), suppressed at 6.
 * Level 1: layer 2 has 2 swaps, 1 suppressed (0.5, the first layer at
 * >= 0.5: the decision), layer 3 has 2 of 2; level 2: layer 6 1 of 1; all
 * by relative layer: -1 has 1 of 2, 0 has 3 of 3. */
static void test_summary(void **st)
{
	ss_swap_target tg[3] = {{5, 3, 2, 0}, {9, 3, 2, 0}, {12, 6, 1, 0}};
	ss_swap_row r[6] = {
		{.target = 0, .layer = 2, .comp = SS_SWAP_RESID, .base_sink = 1, .sink = 1},
		{.target = 0, .layer = 3, .comp = SS_SWAP_RESID, .base_sink = 1, .sink = 0},
		{.target = 1, .layer = 2, .comp = SS_SWAP_RESID, .base_sink = 1, .sink = 0},
		{.target = 1, .layer = 3, .comp = SS_SWAP_RESID, .base_sink = 1, .sink = 0},
		{.target = 2, .layer = 5, .comp = SS_SWAP_RESID, .base_sink = 0, .sink = 0},
		{.target = 2, .layer = 6, .comp = SS_SWAP_RESID, .base_sink = 1, .sink = 0},
	};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	swap_write_summary(f, 1, tg, 3, r, 6, 2, 0.5);
	fclose(f);
	assert_string_equal(buf,
		"level\tl_start\tlifetime\tcomponent\trel_layer\tlayer\tn\tsuppressed\tfrac\tdecision\n"
		"1\t3\t2\tresid\t-1\t2\t2\t1\t0.5\t1\n"
		"1\t3\t2\tresid\t0\t3\t2\t2\t1\t0\n"
		"2\t6\t1\tresid\t0\t6\t1\t1\t1\t1\n"
		"all\t-\t-\tresid\t-1\t-\t2\t1\t0.5\t1\n"
		"all\t-\t-\tresid\t0\t-\t3\t3\t1\t0\n");
	free(buf);
	/* a decision fraction of 0.9: level 1 decides at layer 3 */
	buf = NULL;
	f = open_memstream(&buf, &len);
	swap_write_summary(f, 0, tg, 3, r, 6, 2, 0.9);
	fclose(f);
	assert_non_null(strstr(buf, "1\t3\t2\tresid\t-1\t2\t2\t1\t0.5\t0\n1\t3\t2\tresid\t0\t3\t2\t2\t1\t1\n"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_comps),
		cmocka_unit_test(test_targets),
		cmocka_unit_test(test_summary),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
