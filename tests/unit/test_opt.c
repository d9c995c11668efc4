/* test_opt.c - option parsing, YAML config precedence, layer lists, sizes,
 * the command line re-quoted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "util/opt.h"

static double tau;
static long minlife;
static const char *name;
static int flag;
static const ss_opt opts[] = {
	{"tau-cos", 't', SS_OPT_DOUBLE, &tau, "X", "cosine threshold", NULL},
	{"min-lifetime", 0, SS_OPT_INT, &minlife, "N", "minimum lifetime", NULL},
	{"name", 'n', SS_OPT_STRING, &name, "S", "a name", NULL},
	{"summary", 's', SS_OPT_FLAG, &flag, NULL, "summary", NULL},
	{0},
};
static const ss_prog prog = {"sinkdetect", "[options] [FILE ...]", "test", opts};

static void reset(void) { tau = 0.95; minlife = 1; name = "x"; flag = 0; }

static char *write_tmp(const char *text)
{
	static char path[64];
	strcpy(path, "/tmp/ssopt.XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void test_argv(void **st)
{
	reset();
	char *argv[] = {"p", "-t", "0.5", "--min-lifetime=3", "-s", "a.h5", NULL};
	ss_err e = {0};
	int i = ss_opt_parse(&prog, 6, argv, &e);
	assert_int_equal(i, 5);
	assert_true(tau == 0.5);
	assert_int_equal(minlife, 3);
	assert_int_equal(flag, 1);
}

static void test_config_then_argv(void **st)
{
	reset();
	char *p = write_tmp("other:\n  foo: 1\nsinkdetect:\n  tau-cos: 0.8\n  min-lifetime: 4\n  name: hello\n");
	char *argv[] = {"p", "--config", p, "--tau-cos", "0.7", NULL};
	ss_err e = {0};
	int i = ss_opt_parse(&prog, 5, argv, &e);
	assert_int_equal(i, 5);
	assert_true(tau == 0.7);   /* command line overrides the file */
	assert_int_equal(minlife, 4);
	assert_string_equal(name, "hello");
	unlink(p);
	ss_opt_free();
}

static void test_config_unknown_key(void **st)
{
	reset();
	char *p = write_tmp("sinkdetect:\n  tau-coss: 0.8\n");
	char *argv[] = {"p", "--config", p, NULL};
	ss_err e = {0};
	assert_int_equal(ss_opt_parse(&prog, 3, argv, &e), SS_OPT_ERR);
	assert_non_null(strstr(e.msg, ":2: sinkdetect: unknown option 'tau-coss'"));
	unlink(p);
}

static void test_bad_values(void **st)
{
	reset();
	char *argv[] = {"p", "-t", "abc", NULL};
	ss_err e = {0};
	assert_int_equal(ss_opt_parse(&prog, 3, argv, &e), SS_OPT_ERR);
	assert_int_equal(e.status, SS_EXIT_USAGE);
	char *argv2[] = {"p", "--bogus", NULL};
	assert_int_equal(ss_opt_parse(&prog, 2, argv2, &e), SS_OPT_ERR);
	assert_non_null(strstr(e.msg, "unknown option '--bogus'"));
	char *argv3[] = {"p", "-t", NULL};
	assert_int_equal(ss_opt_parse(&prog, 2, argv3, &e), SS_OPT_ERR);
	assert_non_null(strstr(e.msg, "needs an argument"));
}

static void test_layers(void **st)
{
	unsigned char m[11];
	ss_err e = {0};
	assert_int_equal(ss_parse_layers("1-3,7,9-10", 10, m, "--layers", &e), 0);
	unsigned char want[11] = {0, 1, 1, 1, 0, 0, 0, 1, 0, 1, 1};
	assert_memory_equal(m, want, 11);
	assert_int_equal(ss_parse_layers("0-3", 10, m, "--layers", &e), -1);
	assert_int_equal(ss_parse_layers("5-11", 10, m, "--layers", &e), -1);
	assert_int_equal(ss_parse_layers("3,", 10, m, "--layers", &e), 0);
	assert_int_equal(ss_parse_layers("x", 10, m, "--layers", &e), -1);
	assert_int_equal(ss_parse_layers("all", 10, m, "--layers", &e), 0);
	assert_int_equal(m[0] + m[1] + m[10], 2);
}

/* layer lists from 0 (actdump's --layers: 0 = the embeddings) */
static void test_layers_from0(void **st)
{
	unsigned char m[6];
	ss_err e = {0};
	assert_int_equal(ss_parse_layers_from("0,2-3", 0, 5, m, "--layers", &e), 0);
	unsigned char want[6] = {1, 0, 1, 1, 0, 0};
	assert_memory_equal(m, want, 6);
	assert_int_equal(ss_parse_layers_from("all", 0, 5, m, "--layers", &e), 0);
	assert_int_equal(m[0] + m[1] + m[2] + m[3] + m[4] + m[5], 6);
	assert_int_equal(ss_parse_layers_from("2-6", 0, 5, m, "--layers", &e), -1);
	assert_int_equal(e.status, SS_EXIT_USAGE);
	assert_string_equal(e.msg, "--layers: layer range 2-6 outside 0-5");
	assert_int_equal(ss_parse_layers_from("", 0, 5, m, "--layers", &e), -1);
	assert_string_equal(e.msg, "--layers: empty layer list");
	/* one layer prints as one number, a reversed range says so */
	assert_int_equal(ss_parse_layers_from("-3", 0, 5, m, "--layers", &e), -1);
	assert_string_equal(e.msg, "--layers: layer -3 outside 0-5");
	assert_int_equal(ss_parse_layers_from("5-2", 0, 5, m, "--layers", &e), -1);
	assert_string_equal(e.msg, "--layers: layer range 5-2 is reversed (write 2-5)");
}

/* sizes in the unit that fits, three significant digits */
static void test_format_size(void **st)
{
	char b[32];
	assert_string_equal(ss_format_size(0, b, sizeof b), "0 B");
	assert_string_equal(ss_format_size(512, b, sizeof b), "512 B");
	assert_string_equal(ss_format_size(1023, b, sizeof b), "1023 B");
	assert_string_equal(ss_format_size(1024, b, sizeof b), "1 KiB");
	assert_string_equal(ss_format_size(1.5 * 1048576, b, sizeof b), "1.5 MiB");
	assert_string_equal(ss_format_size(1000.0 * 1024, b, sizeof b), "1000 KiB");
	assert_string_equal(ss_format_size(2.3456 * 1073741824.0, b, sizeof b), "2.35 GiB");
	assert_string_equal(ss_format_size(90.0 * 1073741824.0, b, sizeof b), "90 GiB");
	assert_string_equal(ss_format_range(3, 3, b, sizeof b), "3");
	assert_string_equal(ss_format_range(-3, -3, b, sizeof b), "-3");
	assert_string_equal(ss_format_range(5, 2, b, sizeof b), "5-2");
}

static void test_size(void **st)
{
	double v = 0;
	assert_int_equal(ss_parse_size("512M", &v), 0);
	assert_true(v == 512.0 * 1048576);
	assert_int_equal(ss_parse_size("1.5G", &v), 0);
	assert_true(v == 1.5 * 1073741824.0);
	assert_int_equal(ss_parse_size("2KiB", &v), 0);
	assert_true(v == 2048);
	assert_int_equal(ss_parse_size("3tb", &v), 0);
	assert_true(v == 3 * 1099511627776.0);
	assert_int_equal(ss_parse_size("1000000", &v), 0);
	assert_true(v == 1e6);
	assert_int_equal(ss_parse_size("0", &v), -1);
	assert_int_equal(ss_parse_size("-1G", &v), -1);
	assert_int_equal(ss_parse_size("3Q", &v), -1);
	assert_int_equal(ss_parse_size("1GG", &v), -1);
	assert_int_equal(ss_parse_size("", &v), -1);
}

/* words with blanks, quotes or shell characters come back single-quoted,
 * a quote inside as '\'' (what sh reads back to the same word) */
static void test_cmdline(void **st)
{
	ss_err e = {0};
	char *argv[] = {"actdump", "-m", "a b", "it's", "", "x*y", "plain"};
	char *s = ss_command_line(7, argv, &e);
	assert_non_null(s);
	assert_string_equal(s, "actdump -m 'a b' 'it'\\''s' '' 'x*y' plain");
	free(s);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_argv),
		cmocka_unit_test(test_config_then_argv),
		cmocka_unit_test(test_config_unknown_key),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_layers),
		cmocka_unit_test(test_layers_from0),
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_format_size),
		cmocka_unit_test(test_cmdline),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
