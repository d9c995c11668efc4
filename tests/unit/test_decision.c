/* test_decision.c - the decision study (analysis/decision.h) on hand-made
 * sources: which positions are future sinks at a layer under each part of
 * the rule, controls and others; and the TSV matrix reader under it
 * (io/matrix.h): metadata columns, positions, errors, selection. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "analysis/decision.h"

static void test_label(void **st)
{
	ss_mat_src S[2] = {{.name = "a.h5", .T = 6, .T_known = 1}, {.name = "b.h5", .T = 4, .T_known = 1}};
	unsigned char ca[6] = {0, 1, 0, 1, 0, 0}, cb[4] = {0, 0, 1, 0};
	unsigned char *control[2] = {ca, cb};
	decision_future ep[3] = {
		{.si = 0, .pos = 2, .l_start = 5, .lifetime = 3, .level = 2},
		{.si = 0, .pos = 3, .l_start = 3, .lifetime = 1, .level = 1}, /* a control too */
		{.si = 1, .pos = 1, .l_start = 4, .lifetime = 2, .level = 1},
	};
	decision_set d = {.S = S, .ns = 2, .control = control, .L = 8, .ep = ep, .n_ep = 3,
	                  .rule = {.min_life = 1, .lo = 0, .hi = 1L << 30}};
	/* future only before l_start */
	assert_int_equal(decision_label(&d, 0, 2, 4), DECISION_FUTURE);
	assert_int_equal(decision_label(&d, 0, 2, 5), DECISION_OTHER);
	assert_int_equal(decision_label(&d, 0, 3, 2), DECISION_FUTURE);
	assert_int_equal(decision_label(&d, 0, 3, 3), DECISION_CONTROL);
	assert_int_equal(decision_label(&d, 0, 1, 1), DECISION_CONTROL);
	assert_int_equal(decision_label(&d, 1, 1, 3), DECISION_FUTURE);
	assert_int_equal(decision_label(&d, 1, 2, 3), DECISION_CONTROL);
	assert_int_equal(decision_label(&d, 1, 3, 3), DECISION_OTHER);
	/* the source counts: position 2 of b is no episode */
	assert_int_equal(decision_label(&d, 1, 2, 1), DECISION_CONTROL);
	/* lifetime */
	d.rule.min_life = 2;
	assert_int_equal(decision_label(&d, 0, 3, 2), DECISION_CONTROL);
	assert_int_equal(decision_label(&d, 1, 1, 3), DECISION_FUTURE);
	/* l_start range */
	d.rule = (decision_rule){.min_life = 1, .lo = 4, .hi = 4};
	assert_int_equal(decision_label(&d, 0, 2, 1), DECISION_OTHER);
	assert_int_equal(decision_label(&d, 1, 1, 1), DECISION_FUTURE);
	/* levels */
	long lv[1] = {2};
	d.rule = (decision_rule){.min_life = 1, .lo = 0, .hi = 1L << 30, .levels = lv, .n_levels = 1};
	assert_int_equal(decision_label(&d, 0, 2, 1), DECISION_FUTURE);
	assert_int_equal(decision_label(&d, 1, 1, 1), DECISION_OTHER);
}

static int read_text(const char *text, ss_matrix *m, ss_err *e)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	assert_non_null(f);
	int r = matrix_read_tsv(f, "<in>", m, e);
	fclose(f);
	return r;
}

static void test_matrix(void **st)
{
	ss_matrix m;
	ss_err e = {0};
	assert_int_equal(read_text("x\ttrace\tlabel\ty\tpos\n1.5\tt\tfuture\t-2\t7\n\n3\tu\tcontrol\t4e1\t9\n"
	                           "0\tv\tother\t0.25\t11\n", &m, &e), 0);
	assert_int_equal(m.n, 3);
	assert_int_equal(m.d, 2);
	assert_null(m.si);
	float want[6] = {1.5f, -2, 3, 40, 0, 0.25f};
	for (int i = 0; i < 6; i++)
		assert_true(m.X[i] == want[i]);
	assert_int_equal(m.pos[1], 9);
	assert_string_equal(m.tname[1], "u");
	assert_string_equal(m.ltext[2], "other");
	assert_non_null(m.lab = malloc(3 * sizeof *m.lab));
	m.lab[0] = DECISION_FUTURE, m.lab[1] = DECISION_CONTROL, m.lab[2] = DECISION_OTHER;
	matrix_select(&m, 1u << DECISION_FUTURE | 1u << DECISION_OTHER);
	assert_int_equal(m.n, 2);
	assert_true(m.X[2] == 0 && m.X[3] == 0.25f);
	assert_int_equal(m.pos[1], 11);
	assert_string_equal(matrix_row_trace(&m, NULL, 1), "v");
	assert_string_equal(matrix_row_label(&m, decision_lab_name, 0), "future");
	matrix_free(&m);
	/* no header: every column a coordinate, pos the row index */
	assert_int_equal(read_text("1\t2\n3\t4\n", &m, &e), 0);
	assert_int_equal(m.d, 2);
	assert_int_equal(m.pos[1], 1);
	assert_null(m.tname[0]);
	matrix_free(&m);
	static const char *const bad[][2] = {
		{"1\t2\n3\n", "<in>:2: 1 fields, expected 2"},
		{"a\tb\n1\tx\n", "<in>:2: column 'b': not a finite number: 'x'"},
		{"1\t2\n1\tinf\n", "<in>:2: column 2: not a finite number: 'inf'"},
		{"a\tb\n1\t1e39\n", "<in>:2: column 'b': outside the float range: '1e39'"},
		{"1\t-1e39\n", "<in>:1: column 2: outside the float range: '-1e39'"},
		{"pos\ta\n1.5\t2\n", "<in>:2: column 'pos': not an integer: '1.5'"},
		{"a\tb\n", "<in>: no rows"},
		{"pos\tlabel\n1\tfuture\n", "<in>: no numeric columns"},
	};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		ss_err_clear(&e);
		assert_int_equal(read_text(bad[k][0], &m, &e), -1);
		assert_string_equal(e.msg, bad[k][1]);
		matrix_free(&m);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_label),
		cmocka_unit_test(test_matrix),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
