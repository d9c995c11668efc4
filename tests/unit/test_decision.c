/* test_decision.c - the decision study (analysis/decision.h) on hand-made
 * sources: which positions are future sinks at a layer under each part of
 * the rule, twins, controls and others; the Wilson interval and the rule
 * of the decision layer by hand; and the TSV matrix reader under it
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
	/* tokens: 7 is a future sink's (a:2, b:1); 9 only a's pos 3 (lifetime 1) */
	int32_t ia[6] = {1, 5, 7, 9, 7, 5}, ib[4] = {1, 7, 5, 7};
	ss_trace tr[2] = {{.T = 6, .ids = ia}, {.T = 4, .ids = ib}};
	unsigned char ca[6] = {0, 1, 0, 1, 0, 1}, cb[4] = {0, 0, 1, 0};
	unsigned char ta[6] = {0, 0, 0, 0, 1, 0}, tb[4] = {0, 0, 0, 1};
	unsigned char *control[2] = {ca, cb}, *twin[2] = {ta, tb};
	decision_future ep[3] = {
		{.si = 0, .pos = 2, .l_start = 5, .lifetime = 3, .level = 2},
		{.si = 0, .pos = 3, .l_start = 3, .lifetime = 1, .level = 1}, /* a control too */
		{.si = 1, .pos = 1, .l_start = 4, .lifetime = 2, .level = 1},
	};
	decision_set d = {.S = S, .ns = 2, .tr = tr, .control = control, .twin = twin, .L = 8,
	                  .ep = ep, .n_ep = 3, .rule = {.min_life = 1, .lo = 0, .hi = 1L << 30}};
	/* future only before l_start */
	assert_int_equal(decision_label(&d, 0, 2, 4), DECISION_FUTURE);
	assert_int_equal(decision_label(&d, 0, 2, 5), DECISION_OTHER);
	assert_int_equal(decision_label(&d, 0, 3, 2), DECISION_FUTURE);
	/* after l_start a non-informative never-sink... of a future text: no control */
	assert_int_equal(decision_label(&d, 0, 3, 3), DECISION_OTHER);
	assert_int_equal(decision_label(&d, 0, 1, 1), DECISION_CONTROL);
	assert_int_equal(decision_label(&d, 0, 4, 1), DECISION_TWIN);
	assert_int_equal(decision_label(&d, 1, 1, 3), DECISION_FUTURE);
	assert_int_equal(decision_label(&d, 1, 2, 3), DECISION_CONTROL);
	assert_int_equal(decision_label(&d, 1, 3, 3), DECISION_TWIN);
	assert_int_equal(decision_label(&d, 0, 5, 3), DECISION_CONTROL);
	/* lifetime: a:3 (token 9) is no future sink's text any more */
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

/* Wilson 95%: 80 of 100 gives 0.7112..0.8666 (Newcombe 1998, method 3);
 * all of n gives n / (n + z^2) .. 1; none, 0 .. z^2 / (n + z^2) */
static void test_wilson(void **st)
{
	double lo, hi, z = 1.959964;
	decision_wilson(0.8, 100, z, &lo, &hi);
	assert_true(fabs(lo - 0.71117) < 1e-5 && fabs(hi - 0.86663) < 1e-5);
	decision_wilson(1, 212, z, &lo, &hi);
	assert_true(fabs(lo - 212 / (212 + z * z)) < 1e-12 && hi == 1);
	decision_wilson(0, 50, z, &lo, &hi);
	assert_true(lo == 0 && fabs(hi - z * z / (50 + z * z)) < 1e-12);
}

/* the rule: the earliest layer from which on every measured layer leaves
 * chance; layers without a same-text comparison do not count */
static void test_rule(void **st)
{
	decision_row r[6] = {{.layer = 1}, {.layer = 2}, {.layer = 3}, {.layer = 4}, {.layer = 5}, {.layer = 6}};
	int have[6] = {1, 1, 1, 1, 1, 0}, leaves[6] = {1, 0, 1, 1, 1, 0};
	for (int i = 0; i < 6; i++)
		r[i].same = (decision_cmp){.have = have[i], .leaves = leaves[i]};
	assert_int_equal(decision_layer_of(r, 6), 3);
	r[4].same.leaves = 0; /* the last measured layer at chance: none */
	assert_int_equal(decision_layer_of(r, 6), 0);
	r[4].same.leaves = 1;
	r[1].same.have = 0; /* a gap without a measure does not break the run */
	assert_int_equal(decision_layer_of(r, 6), 1);
	assert_int_equal(decision_layer_of(r, 0), 0);
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
		cmocka_unit_test(test_wilson),
		cmocka_unit_test(test_rule),
		cmocka_unit_test(test_matrix),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
