/* test_summary.c - the layer summary and the compensation curve
 * (sinks/summary.h) on hand-made episodes: counts per layer, the l_start
 * histogram, the primary sink-score, the range, the table's text. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sinks/summary.h"

static void test_summary(void **st)
{
	ss_trace tr;
	ss_err e = {0};
	long L = 4, T = 6, H = 2;
	assert_int_equal(trace_alloc(&tr, L, T, H, &e), 0);
	free(tr.name);
	tr.name = strdup("a\tb.h5");
	/* recv of position 0: head k at layer l (row l-1) = 0.1 l + 0.2 k, so
	 * its sink-score (the mean over the 2 heads) is 0.1 l + 0.1 */
	for (long l = 1; l <= L; l++)
		for (long k = 0; k < H; k++)
			tr.recv[((l - 1) * H + k) * T] = (float)(0.1 * l + 0.2 * k);
	ss_episode ep[5] = {
		{.pos = 0, .primary = 1, .l_start = 1, .l_end = 4},
		{.pos = 2, .primary = 1, .l_start = 1, .l_end = 4},
		{.pos = 3, .l_start = 2, .l_end = 3},
		{.pos = 4, .l_start = 2, .l_end = 2},
		{.pos = 5, .l_start = 3, .l_end = 3},
	};
	ss_layer_sum *r;
	/* layers 2..4: position 0 never counts; pos 2 primary everywhere;
	 * layer 2: pos 3, 4 (both start there); layer 3: pos 3, 5 (5 starts) */
	assert_int_equal(layer_summary(&tr, ep, 5, 2, 4, &r, &e), 0);
	long want[3][5] = {{2, 3, 1, 2, 2}, {3, 3, 1, 2, 1}, {4, 1, 1, 0, 0}};
	for (int k = 0; k < 3; k++) {
		assert_int_equal(r[k].layer, want[k][0]);
		assert_int_equal(r[k].sinks, want[k][1]);
		assert_int_equal(r[k].primary, want[k][2]);
		assert_int_equal(r[k].secondary, want[k][3]);
		assert_int_equal(r[k].starts, want[k][4]);
		assert_true(fabs(r[k].primary_score - (0.1 * (double)want[k][0] + 0.1)) < 1e-7);
	}
	char *buf;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	layer_summary_put_header(f);
	layer_summary_put(f, tr.name, r, 2);
	fclose(f);
	assert_string_equal(buf, "trace\tlayer\tsinks\tprimary\tsecondary\tprimary_score\tsecondary_starts\n"
	                         "a\\tb.h5\t2\t3\t1\t2\t0.3\t2\n"
	                         "a\\tb.h5\t3\t3\t1\t2\t0.4\t1\n");
	free(buf);
	free(r);
	assert_int_equal(layer_summary(&tr, ep, 5, 2, 5, &r, &e), -1);
	assert_non_null(strstr(e.msg, "layer range 2-5: outside the trace's layers 1-4"));
	trace_free(&tr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_summary),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
