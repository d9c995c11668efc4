/* test_episodes.c - the episode table (io/episodes.h): the writer's exact
 * text, the reader's round trip of it (with and without the level column),
 * optional columns, the column rules' errors, and /sinks in HDF5. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/episodes.h"

static char path[64];

static const char *write_tmp(const char *text)
{
	strcpy(path, "/tmp/ssep.XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	size_t n = strlen(text);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	close(fd);
	return path;
}

static const ss_episode E1 = {.pos = 7, .token = 11, .primary = 0, .l_start = 3, .l_end = 5,
                              .lifetime = 3, .peak_norm = 12.5, .norm_ratio = 4.25,
                              .cos0 = 0.975, .score = 0.125, .score_start = 0.0625,
                              .mlp_norm_start = 20.0000004, .level = 2};

static void test_write_read(void **st)
{
	char *buf;
	size_t len;
	FILE *m = open_memstream(&buf, &len);
	episodes_put_header(m, 1);
	ss_episode p0 = {.pos = 0, .token = 1, .primary = 1, .l_start = 1, .l_end = 4,
	                 .lifetime = 4, .cos0 = 1};
	episodes_put_row(m, "a.h5", "<s>", &p0, 1);
	episodes_put_row(m, "a.h5", "x\ty", &E1, 1);
	fclose(m);
	/* %.6g for numbers, the tab of the text escaped, level last */
	assert_string_equal(buf,
		"trace\tpos\ttoken\ttext\tkind\tl_start\tl_end\tlifetime\tpeak_norm\tnorm_ratio\tcos0\t"
		"score\tscore_start\tmlp_norm_start\tlevel\n"
		"a.h5\t0\t1\t<s>\tprimary\t1\t4\t4\t0\t0\t1\t0\t0\t0\t0\n"
		"a.h5\t7\t11\tx\\ty\tsecondary\t3\t5\t3\t12.5\t4.25\t0.975\t0.125\t0.0625\t20\t2\n");
	const char *p = write_tmp(buf);
	free(buf);
	ss_eptab t = {0};
	ss_err e = {0};
	assert_int_equal(eptab_read(&t, p, EP_ALL | EP_BIT(EP_LEVEL), &e), 0);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.cols, EP_ALL | EP_BIT(EP_LEVEL));
	assert_int_equal(t.ep[0].primary, 1);
	const ss_episode *q = &t.ep[1];
	assert_string_equal(t.trace[1], "a.h5");
	assert_string_equal(t.text[1], "x\ty");
	assert_int_equal(t.line[1], 3);
	assert_int_equal(q->pos, 7);
	assert_int_equal(q->token, 11);
	assert_int_equal(q->primary, 0);
	assert_int_equal(q->l_start, 3);
	assert_int_equal(q->l_end, 5);
	assert_int_equal(q->lifetime, 3);
	assert_int_equal(q->level, 2);
	assert_true(q->peak_norm == 12.5 && q->norm_ratio == 4.25 && q->cos0 == 0.975);
	assert_true(q->score == 0.125 && q->score_start == 0.0625 && q->mlp_norm_start == 20);
	/* a second table appends; the columns present are those of both */
	const char *p2 = write_tmp("pos\tl_start\n5\t2\n");
	char keep[64];
	strcpy(keep, p);
	assert_int_equal(eptab_read(&t, p2, EP_BIT(EP_POS), &e), 0);
	assert_int_equal(t.n, 3);
	assert_int_equal(t.cols, EP_BIT(EP_POS) | EP_BIT(EP_L_START));
	/* absent columns: empty texts, zero numbers, secondary */
	assert_string_equal(t.trace[2], "");
	assert_int_equal(t.ep[2].pos, 5);
	assert_int_equal(t.ep[2].l_start, 2);
	assert_int_equal(t.ep[2].lifetime, 0);
	assert_int_equal(t.ep[2].primary, 0);
	eptab_free(&t);
	unlink(keep);
	unlink(p2);
}

static void test_primary_column(void **st)
{
	ss_eptab t = {0};
	ss_err e = {0};
	const char *p = write_tmp("pos\tprimary\tl_start\n0\t1\t1\n4\t0\t2\n");
	assert_int_equal(eptab_read(&t, p, 0, &e), 0);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.ep[0].primary, 1);
	assert_int_equal(t.ep[1].primary, 0);
	eptab_free(&t);
	unlink(p);
}

/* each bad row: -1, the message, and the table keeps the earlier rows */
static void bad(const char *text, unsigned need, const char *msg)
{
	ss_eptab t = {0};
	ss_err e = {0};
	const char *good = write_tmp("pos\tl_start\n1\t2\n");
	char g[64];
	strcpy(g, good);
	assert_int_equal(eptab_read(&t, g, 0, &e), 0);
	const char *p = write_tmp(text);
	assert_int_equal(eptab_read(&t, p, need, &e), -1);
	if (!strstr(e.msg, msg))
		fail_msg("'%s' does not contain '%s'", e.msg, msg);
	assert_int_equal(t.n, 1);
	eptab_free(&t);
	unlink(p);
	unlink(g);
}

static void test_errors(void **st)
{
	bad("pos\tkind\n1\tprimary\n", EP_BIT(EP_L_START), ": missing column 'l_start'");
	bad("pos\tkind\n1\tprimary\n2\ttertiary\n", 0,
	    ":3: column 'kind': expected primary or secondary, got 'tertiary'");
	bad("pos\tprimary\n1\t2\n", 0, ":2: column 'primary': expected 0 or 1, got 2");
	bad("pos\tl_start\tlifetime\n1\t0\t4\n", 0,
	    ":2: l_start 0, lifetime 4: must be positive layer numbers");
	bad("pos\tl_start\n1\t-3\n", 0, ":2: l_start -3: must be a positive layer number");
	bad("pos\tl_start\n1\tx\n", 0, ":2: column 'l_start': not an integer: 'x'");
	bad("pos\tl_start\n-1\t3\n", 0, ":2: column 'pos': -1 is not a position");
	bad("pos\ttoken\n1\t2147483648\n", 0, ":2: column 'token': 2147483648 is not a token id");
	bad("pos\tlevel\n1\t-1\n", 0, ":2: column 'level': -1: expected 0 (no level)");
	bad("pos\tmlp_norm_start\n1\t-2\n", 0, ":2: column 'mlp_norm_start': -2 is not a norm");
	bad("pos\tscore\n1\tnan\n", 0, ":2: column 'score': not a finite number: 'nan'");
	bad("pos\tscore\n1\n", 0, ":2: 1 fields, the header has 2");
}

static void test_h5_roundtrip(void **st)
{
	ss_err e = {0};
	ss_h5 *f;
	char p[] = "/tmp/ssep5.XXXXXX";
	int fd = mkstemp(p);
	close(fd);
	ss_episode in[2] = {E1, E1};
	in[1].pos = 9;
	in[1].primary = 1;
	assert_int_equal(h5_create(&f, p, &e), 0);
	assert_int_equal(episodes_write_h5(f, in, 2, &e), 0);
	assert_int_equal(h5_commit(f, &e), 0);
	assert_int_equal(h5_open(&f, p, &e), 0);
	ss_episode *out;
	size_t n;
	assert_int_equal(episodes_read_h5(f, &out, &n, &e), 0);
	h5_close(f);
	assert_int_equal(n, 2);
	assert_int_equal(out[1].pos, 9);
	assert_int_equal(out[1].primary, 1);
	assert_int_equal(out[0].lifetime, 3);
	/* float32 storage: 20.0000004 comes back as the nearest float, 20 */
	assert_true(out[0].mlp_norm_start == 20.0f && out[0].cos0 == (double)0.975f);
	assert_int_equal(out[0].level, 0); /* the level is not part of /sinks */
	free(out);
	unlink(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_read),
		cmocka_unit_test(test_primary_column),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_h5_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
