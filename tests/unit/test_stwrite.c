/* test_stwrite.c - the safetensors writer, read back by the loader (st.h):
 * dtypes, shapes, offsets, rounding (hand-derived bf16/f16 values), errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/st.h"
#include "io/stwrite.h"

static char dir[] = "/tmp/ss_stw.XXXXXX";

static void test_roundtrip(void **state)
{
	(void)state;
	ss_err e = {0};
	stw *w = stw_new(&e);
	assert_non_null(w);
	float a[6] = {1, -2.5f, 0.1f, 65504, 1e-8f, 3.14159265f};
	long s23[2] = {2, 3}, s6[1] = {6};
	assert_int_equal(stw_add(w, "a.f32", ST_F32, 2, s23, a, &e), 0);
	assert_int_equal(stw_add(w, "b.bf16", ST_BF16, 1, s6, a, &e), 0);
	assert_int_equal(stw_add(w, "c.f16", ST_F16, 1, s6, a, &e), 0);
	assert_int_equal(stw_add(w, "a.f32", ST_F32, 1, s6, a, &e), -1); /* twice */
	assert_non_null(strstr(e.msg, "added twice"));
	char path[64];
	snprintf(path, sizeof path, "%s/m.safetensors", dir);
	assert_int_equal(stw_write(w, path, &e), 0);
	stw_free(w);
	st_set s;
	assert_int_equal(st_open_file(&s, path, &e), 0);
	assert_int_equal((int)s.n, 3);
	const st_tensor *t = st_find(&s, "a.f32");
	assert_non_null(t);
	assert_int_equal(t->dtype, ST_F32);
	assert_int_equal(t->rank, 2);
	assert_int_equal(t->shape[0], 2);
	assert_int_equal(t->shape[1], 3);
	float o[6];
	st_to_f32(o, t, 0, 6);
	assert_memory_equal(o, a, sizeof a);
	/* bf16: 8 significant bits, round to nearest even */
	st_to_f32(o, st_find(&s, "b.bf16"), 0, 6);
	assert_true(o[0] == 1 && o[1] == -2.5f);
	assert_true(o[2] == 0.10009765625f);  /* 0x3dcd */
	assert_true(o[3] == 65536.0f);         /* 65504 = 1.999 * 2^15 rounds up */
	assert_true(o[5] == 3.140625f);        /* 0x4049 */
	/* f16: 11 significant bits; 1e-8 underflows to 0 */
	st_to_f32(o, st_find(&s, "c.f16"), 0, 6);
	assert_true(o[0] == 1 && o[1] == -2.5f && o[3] == 65504);
	assert_true(o[2] == 0.0999755859375f); /* 0x2e66 */
	assert_true(o[4] == 0);
	assert_true(o[5] == 3.140625f);        /* 0x4248 */
	assert_true(stw_round(ST_BF16, 0.1f) == 0.10009765625f);
	assert_true(stw_round(ST_F16, 0.1f) == 0.0999755859375f);
	assert_true(stw_round(ST_F32, 0.1f) == 0.1f);
	st_close(&s);
	unlink(path);
}

static void test_bad(void **state)
{
	(void)state;
	ss_err e = {0};
	stw *w = stw_new(&e);
	float a[1] = {0};
	long s0[1] = {0};
	assert_int_equal(stw_add(w, "x", ST_F32, 1, s0, a, &e), -1);
	assert_int_equal(stw_add(w, "x", ST_F32, 0, s0, a, &e), -1);
	long s1[1] = {1};
	assert_int_equal(stw_add(w, "x", ST_F32, 1, s1, a, &e), 0);
	assert_int_equal(stw_write(w, "/nonexistent-dir/m.safetensors", &e), -1);
	assert_non_null(strstr(e.msg, "/nonexistent-dir"));
	stw_free(w);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_bad),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(dir);
	return rc;
}
