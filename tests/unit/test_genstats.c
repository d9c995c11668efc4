/* test_genstats.c - statistics recorded during generation (genstats.h)
 * against a prefill of the final sequence (fwd_prefill, the path a trace
 * took before), on the real stories260k model: a 10-token prompt and 30
 * sampled tokens, 1 and 2 threads, plain and resident weights.  The two
 * differ only in the order of f32 sums (one query at a time against the
 * cache, or blocks of queries), so the tolerances are those of f32
 * rounding carried through 5 layers:
 *   norms    |a - b| <= 1e-5 |b|        cosines, recv   |a - b| <= 1e-5
 * and a recorder that missed a position or a layer (zeros), counted a
 * query twice or normalised by the wrong count fails by orders more. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine/gen.h"
#include "engine/genstats.h"
#include "stories.h"

static double worst(const float *a, const float *b, size_t n, int rel)
{
	double w = 0;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - b[i]) / (rel ? fmax(fabs((double)b[i]), 1e-30) : 1.0);
		w = d > w ? d : w;
	}
	return w;
}

static void compare(int threads, int resident)
{
	const ss_config *c = &M.c;
	long L = c->n_layers, H = c->n_heads, P = 10, N = 30;
	ss_err e = {0};
	ss_dec d;
	ss_genstats g;
	ss_dec_opts dop = {.threads = threads, .resident = resident};
	ss_gen_opts o = {.max_new = N, .temperature = 1, .top_p = 0.95, .seed = 3};
	int32_t *ids;
	long n, nn;
	assert_int_equal(dec_create(&d, &M, P + N, &dop, &e), 0);
	assert_int_equal(gst_init(&g, c, P + N, &e), 0);
	dec_record(&d, &g);
	int rc = gen_run(&d, expect, P, &o, &ids, &n, &nn, &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
	assert_int_equal(n, P + N);
	assert_int_equal(g.n, n);
	long T = n;
	size_t nr = (size_t)(L + 1) * T, nl = (size_t)L * T, nv = (size_t)L * H * T;
	ss_stats a = {.resid_norm = malloc(nr * 4), .resid_cos0 = malloc(nr * 4),
	              .attn_out_norm = malloc(nl * 4), .mlp_out_norm = malloc(nl * 4), .recv = malloc(nv * 4)};
	ss_stats b = {.resid_norm = malloc(nr * 4), .resid_cos0 = malloc(nr * 4),
	              .attn_out_norm = malloc(nl * 4), .mlp_out_norm = malloc(nl * 4), .recv = malloc(nv * 4)};
	assert_int_equal(gst_fill(&g, T, &a, &e), 0);
	assert_int_not_equal(gst_fill(&g, T + 1, &a, &e), 0);   /* beyond what was recorded */
	ss_fwd *f;
	ss_fwd_opts fo = {.threads = threads};
	assert_int_equal(fwd_create(&f, &M, &fo, T, &e), 0);
	assert_int_equal(fwd_prefill(f, ids, T, &b, NULL, &e), 0);
	double wn = worst(a.resid_norm, b.resid_norm, nr, 1), wc = worst(a.resid_cos0, b.resid_cos0, nr, 0),
	       wa = worst(a.attn_out_norm, b.attn_out_norm, nl, 1),
	       wm = worst(a.mlp_out_norm, b.mlp_out_norm, nl, 1), wr = worst(a.recv, b.recv, nv, 0);
	print_message("# %d threads%s: resid_norm %.2g, cos0 %.2g, attn_out %.2g, mlp_out %.2g, recv %.2g\n",
	              threads, resident ? ", resident" : "", wn, wc, wa, wm, wr);
	assert_true(wn <= 1e-5 && wc <= 1e-5 && wa <= 1e-5 && wm <= 1e-5 && wr <= 1e-5);
	/* the comparison is not vacuous: recv of the first key is a mean over T
	 * queries, the last key's the last query's own attention */
	assert_true(b.recv[0] > 0.01 && b.recv[T - 1] > 0);
	fwd_free(f);
	float *arr[] = {a.resid_norm, a.resid_cos0, a.attn_out_norm, a.mlp_out_norm, a.recv,
	                b.resid_norm, b.resid_cos0, b.attn_out_norm, b.mlp_out_norm, b.recv};
	for (int i = 0; i < 10; i++)
		free(arr[i]);
	free(ids);
	dec_free(&d);
	gst_free(&g);
}

static void test_against_prefill(void **st)
{
	compare(1, 0);
	compare(2, 0);
	compare(2, 1);
}

/* A second prefill through the same dec starts the recording afresh. */
static void test_restart(void **st)
{
	ss_err e = {0};
	ss_dec d;
	ss_genstats g;
	ss_dec_opts dop = {.threads = 1};
	assert_int_equal(dec_create(&d, &M, 16, &dop, &e), 0);
	assert_int_equal(gst_init(&g, &M.c, 16, &e), 0);
	dec_record(&d, &g);
	assert_int_equal(dec_prefill(&d, expect, 12, NULL, NULL, &e), 0);
	assert_int_equal(g.n, 12);
	double r0 = gst_recv_sum(&g, 1)[0];
	assert_int_equal(dec_prefill(&d, expect, 6, NULL, NULL, &e), 0);
	assert_int_equal(g.n, 6);
	assert_true(gst_recv_sum(&g, 1)[0] < r0);   /* 6 queries' sums, not 18 */
	assert_int_equal(gst_recv_sum(&g, 1)[7], 0);
	dec_free(&d);
	gst_free(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_against_prefill),
		cmocka_unit_test(test_restart),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
