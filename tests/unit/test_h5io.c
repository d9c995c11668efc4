/* test_h5io.c - HDF5 helpers, the trace contract, the sink rule and token
 * classes, against hand-derived values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/h5io.h"
#include "sinks/sinks.h"
#include "sinks/tokclass.h"
#include "io/trace.h"

static char dir[64];

static const char *tmp_path(const char *name)
{
	static char p[128];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return p;
}

static int setup(void **st)
{
	strcpy(dir, "/tmp/ssh5.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **st)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_roundtrip(void **st)
{
	ss_err e = {0};
	ss_h5 *f;
	const char *p = tmp_path("rt.h5");
	assert_int_equal(h5_create(&f, p, &e), 0);
	assert_int_equal(access(p, F_OK), -1); /* not there until commit */
	float x[6] = {1, 2, 3, 4, 5, 6.5f};
	int32_t ids[3] = {7, -8, 9};
	size_t d2[2] = {2, 3}, d1[1] = {3};
	const char *s[3] = {"a", "\xc3\xa9t\xc3\xa9", ""};
	long lay[2] = {3, 5};
	assert_int_equal(h5_write_f32(f, "/g/h/x", 2, d2, x, &e), 0);
	assert_int_equal(h5_write_i32(f, "/ids", 1, d1, ids, &e), 0);
	assert_int_equal(h5_write_strings(f, "/s", 3, s, &e), 0);
	assert_int_equal(h5_set_attr_int(f, "/", "n", 42, &e), 0);
	assert_int_equal(h5_set_attr_str(f, "/", "m", "model", &e), 0);
	assert_int_equal(h5_set_attr_ints(f, "/g/h/x", "layers", 2, lay, &e), 0);
	size_t d3[3] = {2, 2, 2};
	assert_int_equal(h5_create_f32(f, "/acts/r", 3, d3, &e), 0);
	float row[4] = {9, 8, 7, 6};
	assert_int_equal(h5_write_f32_rows(f, "/acts/r", 1, 1, row, &e), 0);
	assert_int_equal(h5_commit(f, &e), 0);
	assert_int_equal(access(p, F_OK), 0);

	assert_int_equal(h5_open(&f, p, &e), 0);
	assert_true(h5_exists(f, "/g/h/x"));
	assert_false(h5_exists(f, "/g/nope/x"));
	float *y;
	size_t dims[2];
	assert_int_equal(h5_read_f32(f, "/g/h/x", 2, (size_t[]){2, 0}, &y, dims, &e), 0);
	assert_memory_equal(x, y, sizeof x);
	assert_int_equal(dims[1], 3);
	free(y);
	assert_int_equal(h5_read_f32(f, "/g/h/x", 2, (size_t[]){2, 4}, &y, dims, &e), -1);
	assert_string_equal(e.msg, strcat(strcpy((char[256]){0}, p), ":/g/h/x: shape 2x3, expected 2x4"));
	int32_t *ii;
	assert_int_equal(h5_read_i32(f, "/ids", 1, NULL, &ii, NULL, &e), 0);
	assert_memory_equal(ii, ids, sizeof ids);
	free(ii);
	assert_int_equal(h5_read_i32(f, "/g/h/x", 2, NULL, &ii, NULL, &e), -1); /* float, not int */
	char **ss;
	size_t n;
	assert_int_equal(h5_read_strings(f, "/s", &n, &ss, &e), 0);
	assert_int_equal(n, 3);
	assert_string_equal(ss[1], "\xc3\xa9t\xc3\xa9");
	assert_string_equal(ss[2], "");
	h5_free_strings(ss, n);
	long v;
	char *m;
	assert_int_equal(h5_get_attr_int(f, "/", "n", &v, &e), 0);
	assert_int_equal(v, 42);
	assert_int_equal(h5_get_attr_str(f, "/", "m", &m, &e), 0);
	assert_string_equal(m, "model");
	free(m);
	assert_int_equal(h5_get_attr_int(f, "/", "zz", &v, &e), -1);
	assert_non_null(strstr(e.msg, ":/: missing attribute 'zz'"));
	assert_int_equal(h5_get_attr_int(f, "/", "m", &v, &e), -1); /* a string */
	long *lv;
	assert_int_equal(h5_get_attr_ints(f, "/g/h/x", "layers", &n, &lv, &e), 0);
	assert_int_equal(n, 2);
	assert_int_equal(lv[1], 5);
	free(lv);
	float r2[4];
	assert_int_equal(h5_read_f32_rows(f, "/acts/r", 1, 1, r2, &e), 0);
	assert_memory_equal(r2, row, sizeof row);
	assert_int_equal(h5_read_f32_rows(f, "/acts/r", 0, 1, r2, &e), 0);
	assert_true(r2[0] == 0); /* unwritten chunk reads as the fill value */
	assert_int_equal(h5_read_f32_rows(f, "/acts/r", 2, 1, r2, &e), -1);
	assert_int_equal(h5_read_f32(f, "/none", 1, NULL, &y, NULL, &e), -1);
	assert_non_null(strstr(e.msg, ":/none: missing dataset"));
	h5_close(f);
}

static void test_abandon_and_bad_files(void **st)
{
	ss_err e = {0};
	ss_h5 *f;
	const char *p = tmp_path("ab.h5");
	assert_int_equal(h5_create(&f, p, &e), 0);
	h5_close(f); /* abandoned: nothing is left */
	char cmd[256];
	snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -c ab.h5", dir);
	FILE *pp = popen(cmd, "r");
	int c = -1;
	assert_int_equal(fscanf(pp, "%d", &c), 1);
	pclose(pp);
	assert_int_equal(c, 0);

	const char *q = tmp_path("junk.h5");
	FILE *fp = fopen(q, "w");
	fputs("this is not HDF5\n", fp);
	fclose(fp);
	assert_int_equal(h5_open(&f, q, &e), -1);
	assert_non_null(strstr(e.msg, "not an HDF5 file"));
	fp = fopen(q, "w");
	fclose(fp);
	assert_int_equal(h5_open(&f, q, &e), -1);
	assert_non_null(strstr(e.msg, "empty"));
	assert_int_equal(h5_open(&f, tmp_path("missing.h5"), &e), -1);
	assert_non_null(strstr(e.msg, "No such file"));
}

/* A small trace with hand-set values: T=5, L=3, H=2. */
static void small_trace(ss_trace *tr)
{
	ss_err e = {0};
	assert_int_equal(trace_alloc(tr, 3, 5, 2, &e), 0);
	tr->meta.d_model = 8;
	tr->meta.n_kv_heads = 1;
	tr->meta.head_dim = 4;
	const char *txt[5] = {"<s>", " ", "cat", ",", "42"};
	for (long j = 0; j < 5; j++) {
		tr->ids[j] = (int32_t)(100 + j);
		free(tr->text[j]);
		tr->text[j] = strdup(txt[j]);
	}
	for (long l = 0; l <= 3; l++)
		for (long j = 0; j < 5; j++) {
			tr->resid_norm[l * 5 + j] = 1.0f + (float)j * 0.1f;
			tr->resid_cos0[l * 5 + j] = j ? 0.1f : 1.0f;
		}
	/* position 3 is a sink at layers 2-3: norm 10 vs median 1.2, cos 0.99 */
	for (long l = 2; l <= 3; l++) {
		tr->resid_norm[l * 5 + 3] = 10;
		tr->resid_cos0[l * 5 + 3] = 0.99f;
	}
	/* position 1: high cosine but ordinary norm (not a sink) */
	tr->resid_cos0[2 * 5 + 1] = 0.99f;
	for (long l = 0; l < 3; l++)
		for (long j = 0; j < 5; j++) {
			tr->mlp_out_norm[l * 5 + j] = (float)(l + 1) * 10 + (float)j;
			tr->attn_out_norm[l * 5 + j] = 1;
			for (long k = 0; k < 2; k++)
				tr->recv[(l * 2 + k) * 5 + j] = 0.01f * (float)(k + 1) * (float)(l + 1);
		}
}

static void test_trace_roundtrip(void **st)
{
	ss_err e = {0};
	ss_trace tr, back;
	small_trace(&tr);
	ss_h5 *f;
	const char *p = tmp_path("tr.h5");
	assert_int_equal(h5_create(&f, p, &e), 0);
	assert_int_equal(trace_write_h5(f, &tr, &e), 0);
	long layers[2] = {1, 3};
	assert_int_equal(trace_acts_create(f, "mlp_in", layers, 2, 5, 4, &e), 0);
	float x[20];
	for (int i = 0; i < 20; i++)
		x[i] = (float)i;
	assert_int_equal(trace_acts_write(f, "mlp_in", 1, x, &e), 0);
	assert_int_equal(h5_commit(f, &e), 0);
	assert_int_equal(trace_read(p, &back, &e), 0);
	assert_string_equal(back.name, "tr.h5");
	assert_int_equal(back.L, 3);
	assert_int_equal(back.T, 5);
	assert_int_equal(back.H, 2);
	assert_string_equal(back.text[4], "42");
	assert_memory_equal(back.recv, tr.recv, 3 * 2 * 5 * sizeof(float));
	assert_memory_equal(back.resid_norm, tr.resid_norm, 4 * 5 * sizeof(float));
	/* our writer's stats are contiguous f32: read without a copy, yet
	 * writable (copy on write) and the file stays as it was */
	assert_int_equal(back.borrowed, 31);
	back.recv[0] = 12345;
	ss_trace again;
	assert_int_equal(trace_read(p, &again, &e), 0);
	assert_true(again.recv[0] == tr.recv[0]);
	trace_free(&again);
	back.recv[0] = tr.recv[0];
	/* the sink rule's own tests are in test_sinks.c; here the controls of
	 * the trace read back: "," at pos 3 is a sink at tau_norm 2 */
	ss_sink_params sp;
	sink_params_default(&sp);
	sp.tau_norm = 2;
	unsigned char ctl[5];
	assert_int_equal(tokclass_controls(&back, &sp, SS_TC_DEFAULT, ctl, &e), 0);
	unsigned char want[5] = {0, 1, 0, 0, 1};
	assert_memory_equal(ctl, want, 5);

	ss_h5 *g;
	float *a;
	long T, d;
	assert_int_equal(h5_open(&g, p, &e), 0);
	assert_int_equal(trace_acts_read(g, "mlp_in", 3, &a, &T, &d, &e), 0);
	assert_int_equal(T, 5);
	assert_int_equal(d, 4);
	assert_true(a[19] == 19);
	free(a);
	assert_int_equal(trace_acts_read(g, "mlp_in", 2, &a, &T, &d, &e), -1);
	assert_non_null(strstr(e.msg, ":/acts/mlp_in: layer 2 not stored (stored: 1,3)"));
	assert_int_equal(trace_acts_read(g, "resid", 2, &a, &T, &d, &e), -1);
	h5_close(g);
	trace_free(&back);

	/* Unknown version, NaN, wrong shape. */
	assert_int_equal(h5_create(&f, p, &e), 0);
	assert_int_equal(trace_write_h5(f, &tr, &e), 0);
	assert_int_equal(h5_set_attr_int(f, "/", "sinkscope_format", 2, &e), 0);
	assert_int_equal(h5_commit(f, &e), 0);
	assert_int_equal(trace_read(p, &back, &e), -1);
	assert_non_null(strstr(e.msg, ":/: sinkscope_format 2, this program reads 1"));

	tr.resid_norm[2 * 5 + 4] = NAN;
	assert_int_equal(h5_create(&f, p, &e), 0);
	assert_int_equal(trace_write_h5(f, &tr, &e), 0);
	assert_int_equal(h5_commit(f, &e), 0);
	assert_int_equal(trace_read(p, &back, &e), -1);
	assert_non_null(strstr(e.msg, ":/stats/resid_norm: non-finite value at [2][4]"));
	tr.resid_norm[2 * 5 + 4] = 1;

	/* n_layers says 2 but the stats have 3 layers */
	assert_int_equal(h5_create(&f, p, &e), 0);
	assert_int_equal(trace_write_h5(f, &tr, &e), 0);
	assert_int_equal(h5_set_attr_int(f, "/", "n_layers", 2, &e), 0);
	assert_int_equal(h5_commit(f, &e), 0);
	assert_int_equal(trace_read(p, &back, &e), -1);
	assert_non_null(strstr(e.msg, ":/stats/resid_norm: shape 4x5, expected 3x5"));
	trace_free(&tr);
}

static void test_tokclass(void **st)
{
	assert_true(tokclass_is_noninformative(" ", SS_TC_DEFAULT));
	assert_true(tokclass_is_noninformative("\n\n", SS_TC_DEFAULT));
	assert_true(tokclass_is_noninformative("\xe2\x96\x81", SS_TC_SPACE)); /* U+2581 */
	assert_true(tokclass_is_noninformative("\xef\xbc\x8c", SS_TC_PUNCT)); /* fullwidth comma */
	assert_true(tokclass_is_noninformative("+=", SS_TC_PUNCT));
	assert_true(tokclass_is_noninformative("\xd9\xa3", SS_TC_DIGIT)); /* Arabic-Indic 3 */
	assert_false(tokclass_is_noninformative("12", SS_TC_SPACE | SS_TC_PUNCT));
	assert_false(tokclass_is_noninformative(" a", SS_TC_DEFAULT));
	assert_false(tokclass_is_noninformative("", SS_TC_DEFAULT));
	assert_false(tokclass_is_noninformative("\xff", SS_TC_DEFAULT));
	unsigned m;
	ss_err e = {0};
	assert_int_equal(tokclass_parse("space,digit", &m, &e), 0);
	assert_int_equal(m, SS_TC_SPACE | SS_TC_DIGIT);
	assert_int_equal(tokclass_parse("all", &m, &e), 0);
	assert_int_equal(m, SS_TC_DEFAULT);
	assert_int_equal(tokclass_parse("space,words", &m, &e), -1);
	assert_int_equal(e.status, 2);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_abandon_and_bad_files),
		cmocka_unit_test(test_trace_roundtrip),
		cmocka_unit_test(test_tokclass),
	};
	return cmocka_run_group_tests(t, setup, teardown);
}
