/* test_kvcache.c - KV cache storage in f32 and bf16 (rounding by hand). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/kvcache.h"

static void test_kv(void **st)
{
	ss_err e = {0};
	for (int dt = 0; dt < 2; dt++) {
		ss_kvcache kv;
		assert_int_equal(kv_init(&kv, 2, 3, 2, 2, dt, &e), 0);
		float k[8] = {1, 2, 3, 4, 5, 6, 7, 1.00390625f}, v[8] = {-1, -2, -3, -4, 0.5f, 0.25f, 8, 9};
		kv_put(&kv, 2, 1, 2, k, v);
		float kb[12], vb[12], *kp, *vp, r[4], s[4];
		kv_get(&kv, 2, 2, r, s);
		assert_true(r[0] == 5 && s[1] == 0.25f);
		/* 1 + 2^-8 is a tie in bf16: rounds to even (1.0); exact in f32 */
		assert_true(r[3] == (dt ? 1.0f : 1.00390625f));
		kv_layer_f32(&kv, 2, 3, kb, vb, &kp, &vp);
		assert_true(kp[4] == 1 && vp[7] == -4 && kp[8] == 5);
		kv_free(&kv);
	}
	assert_true(kv_bytes(24, 2048, 128, SS_KV_BF16) == 24.0 * 2048 * 128 * 2 * 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kv),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
