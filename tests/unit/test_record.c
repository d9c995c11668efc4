/* test_record.c - what a recorded run stores and what it costs: the /acts
 * components and layers chosen (layer 0, the embeddings, only for resid;
 * rows in layer order) and the memory formula against hand-derived byte
 * counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "engine/record.h"

static void test_acts(void **st)
{
	ss_err e = {0};
	int on[SS_HOOK_N];
	assert_int_equal(rec_acts_parse("mlp_in,resid", on, &e), 0);
	assert_true(on[SS_HOOK_RESID] && on[SS_HOOK_MLP_IN] && !on[SS_HOOK_ATTN_OUT] && !on[SS_HOOK_MLP_OUT]);
	assert_int_equal(rec_acts_parse("all", on, &e), 0);
	assert_true(on[0] && on[1] && on[2] && on[3]);
	assert_int_equal(rec_acts_parse("resid,foo", on, &e), -1);
	assert_int_equal(e.status, SS_EXIT_USAGE);

	/* layers 0, 2, 3 of L = 4: resid stores 3 (rows 0, 1, 2), mlp_in 2 (rows 0, 1) */
	unsigned char layers[5] = {1, 0, 1, 1, 0};
	int want[SS_HOOK_N] = {0};
	want[SS_HOOK_RESID] = want[SS_HOOK_MLP_IN] = 1;
	ss_rec_acts a;
	assert_int_equal(rec_acts_plan(&a, want, layers, 4, &e), 0);
	assert_int_equal(a.n_on, 2);
	assert_int_equal(a.n_sel[SS_HOOK_RESID], 3);
	assert_int_equal(a.n_sel[SS_HOOK_MLP_IN], 2);
	assert_int_equal(a.n_sel[SS_HOOK_ATTN_OUT], 0);
	assert_true(a.mask[SS_HOOK_RESID][0] && !a.mask[SS_HOOK_MLP_IN][0]);
	assert_int_equal(a.index[SS_HOOK_RESID][3], 2);
	assert_int_equal(a.index[SS_HOOK_MLP_IN][3], 1);

	/* memory: T = 10, L = 4, D = 8, H = 2; stats 4 T (4 L + 2 + L H) =
	 * 4*10*26 = 1040 bytes; one layer of each of 2 components 2*4*10*8 =
	 * 640; the image adds the stats again and (3 + 2) layers of 4*10*8 */
	ss_config c = {.dim = 8, .hidden = 16, .n_layers = 4, .n_heads = 2, .n_kv_heads = 2,
	               .head_dim = 4, .vocab = 32};
	double fwd = fwd_memory_estimate(&c, 10, 1, 0);
	assert_true(rec_memory(&c, &a, 10, 1, 0) == fwd + 1040 + 640);
	assert_true(rec_memory(&c, &a, 10, 1, 1) == fwd + 1040 + 640 + 1040 + 5 * 320);
	rec_acts_free(&a);

	/* only layer 0: mlp_in has none */
	unsigned char only0[5] = {1, 0, 0, 0, 0};
	assert_int_equal(rec_acts_plan(&a, want, only0, 4, &e), -1);
	assert_int_equal(e.status, SS_EXIT_USAGE);
	assert_string_equal(e.msg, "no layer of mlp_in selected (layer 0 exists only for resid)");
	rec_acts_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_acts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
