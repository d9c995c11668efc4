/* test_attn_sel.c - which keys a query sees (attention.h: attn_keys, the
 * one home of causal, sliding window and a cache policy's kept set)
 * against masks derived by hand, and attention under a selection and
 * under a measurement (attn_run_sel) with a binding window against a
 * naive double-precision softmax over the hand-built mask.  Tolerances as
 * test_kernels: outputs 2e-6, recv 1e-6 relative; the lost masses 1e-6.
 * Every test once per instruction set this CPU has. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine/attention.h"
#include "engine/kernels.h"
#include "util/cpu.h"
#include "util/pool.h"

/* the keys attn_keys shows query i (row 0 of sel), as "j,j,...", against want */
static void keys_are(long window, long lo, long nk, const long *kept, long n_kept, long i, const char *want)
{
	ss_attn_sel z = {&lo, &nk, kept, n_kept};
	long l, k0, k1;
	attn_keys(window, nk >= 0 ? &z : NULL, 0, i, &l, &k0, &k1);
	char got[512] = "";
	size_t o = 0;
	for (long k = k0; k < k1; k++)
		o += (size_t)snprintf(got + o, sizeof got - o, "%s%ld", o ? "," : "", kept[k]);
	for (long j = l; j <= i; j++)
		o += (size_t)snprintf(got + o, sizeof got - o, "%s%ld", o ? "," : "", j);
	if (strcmp(got, want))
		fail_msg("window %ld, lo %ld, %ld kept, query %ld: keys %s, want %s", window, lo, nk, i, got, want);
}

static void test_keys(void **st)
{
	static const long sinks[] = {0, 1, 2, 3}, heavy[] = {2, 5, 6}, mid[] = {0, 1, 6};
	/* causal only, and a window of 3 */
	keys_are(0, 0, -1, NULL, 0, 4, "0,1,2,3,4");
	keys_are(3, 0, -1, NULL, 0, 4, "2,3,4");
	keys_are(3, 0, -1, NULL, 0, 1, "0,1");      /* the window reaches before key 0 */
	keys_are(5, 0, -1, NULL, 0, 4, "0,1,2,3,4");   /* i - j < 5 for every key */
	/* streaming with 2 sinks and a budget of 5: query 9 keeps 0, 1 and 7..9 */
	keys_are(0, 7, 2, sinks, 4, 9, "0,1,7,8,9");
	keys_are(9, 7, 2, sinks, 4, 9, "1,7,8,9");   /* the window (keys 1..9) hides sink 0 */
	keys_are(5, 7, 2, sinks, 4, 9, "7,8,9");     /* keys 5..9: both sinks hidden */
	keys_are(2, 7, 2, sinks, 4, 9, "8,9");       /* the window starts after the policy's */
	keys_are(0, 7, 4, sinks, 4, 9, "0,1,2,3,7,8,9");
	keys_are(8, 7, 4, sinks, 4, 9, "2,3,7,8,9");
	/* heavy: kept 2, 5, 6 besides the keys 8..10 */
	keys_are(0, 8, 3, heavy, 3, 10, "2,5,6,8,9,10");
	keys_are(5, 8, 3, heavy, 3, 10, "6,8,9,10");
	keys_are(4, 8, 3, heavy, 3, 10, "8,9,10");
	keys_are(4, 8, 1, heavy, 3, 10, "8,9,10");   /* only the first kept key counts: hidden */
	keys_are(9, 8, 1, heavy, 3, 10, "2,8,9,10");
	keys_are(6, 8, 2, mid, 3, 10, "8,9,10");     /* counted 0, 1: both below the window (5..) */
	keys_are(6, 8, 3, mid, 3, 10, "6,8,9,10");
	/* a query the policy shows everything (lo 0) */
	keys_are(4, 0, 0, heavy, 3, 10, "7,8,9,10");
	keys_are(0, 0, 0, heavy, 3, 3, "0,1,2,3");
}

/* The mask of query i, built here from the definitions (not attn_keys):
 * j <= i, i - j < W (W 0: none), and j >= lo or j among the first nk kept. */
static int visible(long W, const long *lo, const long *nk, const long *kept, long i, long j)
{
	if (j > i || (W > 0 && i - j >= W))
		return 0;
	if (!lo || j >= lo[i])
		return 1;
	for (long k = 0; k < nk[i]; k++)
		if (kept[k] == j)
			return 1;
	return 0;
}

/* softmax attention of query p, head h, over the keys of mask m [T] */
static void naive(long hd, long kvd, long kvh, const float *q, long p, const float *K, const float *V,
                  const int *m, double *out, double *probs)
{
	double mx = -INFINITY, sum = 0;
	for (long j = 0; j <= p; j++) {
		probs[j] = -INFINITY;
		if (!m[j])
			continue;
		double s = 0;
		for (long k = 0; k < hd; k++)
			s += (double)q[k] * K[j * kvd + kvh * hd + k];
		probs[j] = s / sqrt((double)hd);
		mx = fmax(mx, probs[j]);
	}
	for (long j = 0; j <= p; j++)
		sum += (probs[j] = m[j] ? exp(probs[j] - mx) : 0.0);
	for (long k = 0; k < hd; k++)
		out[k] = 0;
	for (long j = 0; j <= p; j++) {
		probs[j] /= sum;
		for (long k = 0; k < hd; k++)
			out[k] += probs[j] * V[j * kvd + kvh * hd + k];
	}
}

/* T queries (t0 = 0, blocks of 8) under a window W and a selection of
 * budget B (kept: the first ns keys as sinks, or a heavy-like list),
 * selected and measured, against the naive softmax over the masks */
static void sel_case(long W, long B, int heavy, int threads)
{
	enum { T = 61, H = 4, HKV = 2, HD = 8 };
	long qd = H * HD, kvd = HKV * HD, lo[T], nk[T], kept[8], nkept;
	if (heavy) {
		static const long hk[] = {3, 11, 12, 20, 27, 33};
		memcpy(kept, hk, sizeof hk);
		nkept = 6;
	} else {
		for (long j = 0; j < 4; j++)
			kept[j] = j;
		nkept = 4;
	}
	/* every query i > B sees B cached keys: nk of the kept below lo, the rest lo..i */
	for (long i = 0; i < T; i++) {
		lo[i] = nk[i] = 0;
		if (i <= B)
			continue;
		long c = nkept < B / 2 ? nkept : B / 2;
		lo[i] = i - (B - c) + 1;
		while (c > 0 && kept[c - 1] >= lo[i])
			c--;
		nk[i] = c;
	}
	static float q[T * H * HD], q0[T * H * HD], K[T * HKV * HD], V[T * HKV * HD];
	unsigned s = 4242;
	for (long i = 0; i < T * qd; i++)
		q0[i] = q[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / (float)(1u << 24) * 4 - 2;
	for (long i = 0; i < T * kvd; i++) {
		K[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / (float)(1u << 24) * 4 - 2;
		V[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / (float)(1u << 24) * 2 - 1;
	}
	ss_config c = {.n_heads = H, .n_kv_heads = HKV, .head_dim = HD};
	ss_err e = {0};
	ss_pool *pool;
	ss_attn *a;
	assert_int_equal(pool_create(&pool, threads, &e), 0);
	assert_int_equal(attn_create(&a, &c, T, threads, 8, &e), 0);
	attn_set_layer(a, W);
	ss_attn_sel z = {lo, nk, kept, nkept};
	static double rs[H * T], rn[H * T], pr[T], pw[T];
	static int m[T], mw[T];
	double out[HD], lost[3] = {0, 0, 0}, want[3] = {0, 0, 0};
	unsigned char cls[T];
	for (long j = 0; j < T; j++)
		cls[j] = j == 0 ? 1 : (j == 3 || j == 20) ? 2 : 0;
	memset(rs, 0, sizeof rs);
	memset(rn, 0, sizeof rn);
	/* in two calls, as the forward pass makes them */
	assert_int_equal(attn_run_sel(a, pool, q, 0, 29, K, V, &z, NULL, rs, T, &e), 0);
	ss_attn_sel z2 = {lo + 29, nk + 29, kept, nkept};
	assert_int_equal(attn_run_sel(a, pool, q + 29 * qd, 29, T - 29, K, V, &z2, NULL, rs, T, &e), 0);
	for (long i = 0; i < T; i++) {
		for (long j = 0; j < T; j++) {
			m[j] = visible(W, lo, nk, kept, i, j);
			mw[j] = visible(W, NULL, NULL, NULL, i, j);
		}
		for (long h = 0; h < H; h++) {
			naive(HD, kvd, h / (H / HKV), q0 + i * qd + h * HD, i, K, V, m, out, pr);
			for (long k = 0; k < HD; k++)
				if (fabs(q[i * qd + h * HD + k] - out[k]) > 2e-6)
					fail_msg("W %ld B %ld: query %ld head %ld output %ld: %.9g, want %.9g", W, B, i, h, k,
					         (double)q[i * qd + h * HD + k], out[k]);
			for (long j = 0; j <= i; j++)
				rn[h * T + j] += pr[j];
			/* what the selection hides of the windowed (unselected) row */
			naive(HD, kvd, h / (H / HKV), q0 + i * qd + h * HD, i, K, V, mw, out, pw);
			for (long j = 0; j <= i; j++)
				if (mw[j] && !m[j])
					want[cls[j]] += pw[j];
		}
	}
	for (long x = 0; x < H * T; x++)
		if (fabs(rs[x] - rn[x]) > 1e-6 * fmax(1, rn[x]))
			fail_msg("W %ld B %ld: recv of head %ld key %ld: %.9g, want %.9g", W, B, x / T, x % T, rs[x], rn[x]);
	/* the measurement: an unselected call that sums what z hides */
	memcpy(q, q0, sizeof q);
	ss_attn_meas me = {1, &z, cls, lost};
	assert_int_equal(attn_run_sel(a, pool, q, 0, T, K, V, NULL, &me, NULL, T, &e), 0);
	for (int k = 0; k < 3; k++)
		if (fabs(lost[k] - want[k]) > 1e-6 * fmax(1, want[k]))
			fail_msg("W %ld B %ld: lost mass of class %d: %.9g, want %.9g", W, B, k, lost[k], want[k]);
	if (W == 0 || W > 8)
		assert_true(want[0] > 0);   /* the case hides something (a window of 5 hides all it would) */
	attn_free(a);
	pool_free(pool);
}

static void test_selected(void **st)
{
	sel_case(0, 12, 0, 1);    /* no window: the policy alone */
	sel_case(9, 12, 0, 2);    /* window 9 < budget: the window hides the sinks and more */
	sel_case(14, 12, 0, 1);   /* window 14 > budget: sinks hidden from query 14 on */
	sel_case(20, 16, 1, 2);   /* heavy-like kept keys, some inside the window */
	sel_case(5, 30, 1, 1);    /* the window binds before the budget does */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_selected),
	};
	int rc = 0;
	ss_err e = {0};
	for (int l = 0; l <= (int)ss_cpu_best(); l++) {
		if (ss_cpu_force((ss_isa)l, &e) < 0)
			return 1;
		char name[64];
		snprintf(name, sizeof name, "attention selections (%s)", ss_isa_name((ss_isa)l));
		rc |= _cmocka_run_group_tests(name, tests, sizeof tests / sizeof tests[0], NULL, NULL);
	}
	return rc;
}
