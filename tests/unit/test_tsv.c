/* test_tsv.c - TSV reading and writing: escaping round trip, repeated
 * headers (cat of several tables), and each malformed-input error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/tsv.h"

static char path[64];

static const char *write_tmp(const char *text, size_t n)
{
	strcpy(path, "/tmp/sstsv.XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	close(fd);
	return path;
}

static void test_escape_roundtrip(void **st)
{
	/* control bytes, and bytes that are not UTF-8 (a stray byte, a truncated, an
	 * overlong and a surrogate sequence) before a 4-byte character */
	const char raw[] = "a\tb\nc\\d\re\x01" "f\xc3\xa9" "\xff" "\xe2\x82" "\xc0\xaf" "\xed\xa0\x80"
	                   "\xf0\x9f\x98\x80";
	char *buf;
	size_t len;
	FILE *m = open_memstream(&buf, &len);
	fputs("x\ty\n", m);
	tsv_put_escaped(m, raw, sizeof raw - 1);
	fputc('\t', m);
	tsv_put_double(m, 0.1234567891);
	fputc('\n', m);
	fclose(m);
	assert_non_null(strstr(buf, "a\\tb\\nc\\\\d\\re\\x01f\xc3\xa9\\xff\\xe2\\x82\\xc0\\xaf\\xed\\xa0\\x80"
	                            "\xf0\x9f\x98\x80\t0.123457\n"));
	const char *p = write_tmp(buf, len);
	free(buf);
	ss_tsv *t;
	ss_err e = {0};
	assert_int_equal(tsv_open(&t, p, &e), 0);
	assert_int_equal(tsv_ncols(t), 2);
	assert_int_equal(tsv_next(t, &e), 1);
	size_t n;
	const char *f = tsv_field(t, 0, &n);
	assert_int_equal(n, sizeof raw - 1);
	assert_memory_equal(f, raw, n);
	double d;
	assert_int_equal(tsv_double(t, 1, &d, &e), 0);
	assert_true(d == 0.123457);
	assert_int_equal(tsv_next(t, &e), 0);
	tsv_close(t);
	unlink(p);
}

static void test_cat_and_errors(void **st)
{
	ss_err e = {0};
	ss_tsv *t;
	const char two[] = "a\tb\n1\t2\na\tb\n3\t4\n";
	const char *p = write_tmp(two, sizeof two - 1);
	assert_int_equal(tsv_open(&t, p, &e), 0);
	long v, sum = 0;
	int rows = 0, r;
	while ((r = tsv_next(t, &e)) == 1) {
		assert_int_equal(tsv_long(t, 1, &v, &e), 0);
		sum += v;
		rows++;
	}
	assert_int_equal(r, 0);
	assert_int_equal(rows, 2); /* the repeated header is skipped */
	assert_int_equal(sum, 6);
	int idx[2];
	const char *need[2] = {"a", "zz"};
	assert_int_equal(tsv_require(t, need, idx, 2, &e), -1);
	assert_non_null(strstr(e.msg, "missing column 'zz'"));
	tsv_close(t);
	unlink(p);

	const char bad[] = "a\tb\n1\t2\t3\n";
	p = write_tmp(bad, sizeof bad - 1);
	assert_int_equal(tsv_open(&t, p, &e), 0);
	assert_int_equal(tsv_next(t, &e), -1);
	assert_non_null(strstr(e.msg, ":2:"));
	tsv_close(t);
	unlink(p);

	const char notnum[] = "a\tb\nx\t2\n";
	p = write_tmp(notnum, sizeof notnum - 1);
	assert_int_equal(tsv_open(&t, p, &e), 0);
	assert_int_equal(tsv_next(t, &e), 1);
	assert_int_equal(tsv_long(t, 0, &v, &e), -1);
	assert_non_null(strstr(e.msg, "not an integer"));
	assert_int_equal(tsv_double(t, 0, &(double){0}, &e), -1);
	tsv_close(t);
	unlink(p);

	p = write_tmp("", 0);
	assert_int_equal(tsv_open(&t, p, &e), -1);
	assert_non_null(strstr(e.msg, "empty input"));
	unlink(p);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_escape_roundtrip),
		cmocka_unit_test(test_cat_and_errors),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
