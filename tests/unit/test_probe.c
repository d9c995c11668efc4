/* test_probe.c - the formation probe (interv/probe.h) on planted MLP
 * inputs with the real stories260k model's MLP: the fit set, the PCA of
 * x[ls] (components, explained ratios), the mean projections of the future
 * sinks and the controls, x_par / x_perp and frac_par, all derived by hand
 * from the planted points; the gains and cosines to u are the model MLP's
 * outputs (dec_mlp, called here on the inputs the definition names) put
 * together as probe.h defines them; and the errors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "interv/probe.h"
#include "sinks/tokclass.h"
#include "stories.h"

#define NEAR(a, b, tol) assert_true(fabs((double)(a) - (double)(b)) < (tol))
enum { T = 9, LAYER = 2 };

/* Positions 1..8: x_j = 3 s_j e0 + t_j e1 + 2 e2 with (s, t) the four sign
 * pairs twice, balanced and uncorrelated: mean 2 e2, variances 9 * 8 / 7
 * along e0 and 8 / 7 along e1 (ratios 0.9, 0.1).  Odd positions are ","
 * (the controls: s = +1), 2 and 4 (s = -1) the future sinks. */
static const int S[T] = {0, 1, -1, 1, -1, 1, -1, 1, -1}, Tt[T] = {0, 1, 1, -1, -1, 1, 1, -1, -1};

static void setup_case(ss_trace *tr, float **x, float **h0, long D)
{
	ss_err e = {0};
	assert_int_equal(trace_alloc(tr, M.c.n_layers, T, M.c.n_heads, &e), 0);
	tr->meta.d_model = D;
	for (long j = 0; j < T; j++) {
		free(tr->text[j]);
		tr->text[j] = strdup(j == 0 ? "<s>" : j % 2 ? "," : "cat");
	}
	for (long l = 0; l <= tr->L; l++)
		for (long j = 0; j < T; j++) {
			tr->resid_norm[l * T + j] = 1;
			tr->resid_cos0[l * T + j] = j ? 0.1f : 1;
		}
	*x = calloc((size_t)(T * D), sizeof **x);
	*h0 = calloc((size_t)D, sizeof **h0);
	for (long j = 1; j < T; j++) {
		(*x)[j * D + 0] = (float)(3 * S[j]);
		(*x)[j * D + 1] = (float)Tt[j];
		(*x)[j * D + 2] = 2;
	}
	(*h0)[3] = 5;   /* u = e3 */
}

static double nrm(const float *y, long D)
{
	double s = 0;
	for (long q = 0; q < D; q++)
		s += (double)y[q] * y[q];
	return sqrt(s);
}

static void test_probe(void **st)
{
	long D = M.c.dim;
	ss_trace tr;
	float *x, *h0;
	setup_case(&tr, &x, &h0, D);
	ss_err e = {0};
	ss_dec d;
	ss_dec_opts dop = {.threads = 1};
	assert_int_equal(dec_create(&d, &M, T, &dop, &e), 0);
	ss_sink_params sp;
	sink_params_default(&sp);
	ss_swap_target tg[3] = {{2, LAYER, 1, 0}, {4, LAYER, 2, 0}, {6, LAYER + 1, 1, 0}};
	double alpha[2] = {-1, 2};
	ss_probe p;
	int rc = probe_run(&d, &tr, LAYER, x, h0, tg, 3, 2, alpha, 2, 0, &sp, SS_TC_DEFAULT, &p, &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
	assert_int_equal(p.n_fit, 8);
	assert_int_equal(p.n_sinks, 2);
	assert_int_equal(p.n_controls, 4);
	for (long q = 0; q < D; q++) {
		NEAR(p.pcs[q], q == 0, 1e-9);
		NEAR(p.pcs[D + q], q == 1, 1e-9);
	}
	NEAR(p.comp[0].var_ratio, 0.9, 1e-9);
	NEAR(p.comp[1].var_ratio, 0.1, 1e-9);
	/* (x - mean).pc: 3 s along e0, t along e1; sinks s = -1, controls +1,
	 * t balanced in both */
	NEAR(p.comp[0].proj_sinks, -3, 1e-9);
	NEAR(p.comp[0].proj_controls, 3, 1e-9);
	NEAR(p.comp[1].proj_sinks, 0, 1e-9);
	NEAR(p.comp[1].proj_controls, 0, 1e-9);
	/* the MLP on mean + alpha sigma pc_i against the MLP on the mean */
	float *in = calloc((size_t)(6 * D), sizeof *in), *y = calloc((size_t)(6 * D), sizeof *y);
	double sig[2] = {sqrt(72.0 / 7), sqrt(8.0 / 7)};
	for (int r = 0; r < 5; r++) {
		in[r * D + 2] = 2;
		if (r)
			in[r * D + (r - 1) / 2] = (float)(alpha[(r - 1) % 2] * sig[(r - 1) / 2]);
	}
	assert_int_equal(dec_mlp(&d, LAYER, in, 5, y, &e), 0);
	for (int i = 0; i < 2; i++)
		for (int a = 0; a < 2; a++) {
			const float *r = y + (1 + i * 2 + a) * D;
			NEAR(p.comp[i].gain[a], nrm(r, D) / nrm(y, D), 1e-6);
			/* cos_u: the cosine to u = e3 of the response, the MLP's change
			 * from the mean's output */
			float dr[D];
			for (int q = 0; q < D; q++)
				dr[q] = r[q] - y[q];
			NEAR(p.comp[i].cos_u[a], dr[3] / nrm(dr, D), 1e-6);
		}
	/* sink 2: x = -3 e0 + e1 + 2 e2; x_par = -3 e0 + e1 (frac 10 / 14),
	 * x_perp = 2 e2 */
	assert_int_equal(p.sink[0].pos, 2);
	assert_int_equal(p.sink[1].pos, 4);
	NEAR(p.sink[0].frac_par, 10.0 / 14, 1e-7);
	NEAR(p.sink[1].frac_par, 10.0 / 14, 1e-7);
	memset(in, 0, sizeof(float) * (size_t)(3 * D));
	in[0] = -3, in[1] = 1, in[2] = 2;
	in[D + 0] = -3, in[D + 1] = 1;
	in[2 * D + 2] = 2;
	assert_int_equal(dec_mlp(&d, LAYER, in, 3, y, &e), 0);
	for (int w = 0; w < 3; w++) {
		NEAR(p.sink[0].norm[w], nrm(y + w * D, D), 1e-5);
		NEAR(p.sink[0].cos_u[w], y[w * D + 3] / nrm(y + w * D, D), 1e-6);
	}
	probe_free(&p);

	/* no future sink at layer 4; no control (no "," left); h0 = 0 */
	assert_int_equal(probe_run(&d, &tr, 4, x, h0, tg, 3, 2, alpha, 2, 0, &sp, SS_TC_DEFAULT, &p, &e), -1);
	assert_non_null(strstr(e.msg, "no secondary episode starts at layer 4"));
	for (long j = 1; j < T; j += 2) {
		free(tr.text[j]);
		tr.text[j] = strdup("dog");
	}
	assert_int_equal(probe_run(&d, &tr, LAYER, x, h0, tg, 3, 2, alpha, 2, 0, &sp, SS_TC_DEFAULT, &p, &e), -1);
	assert_non_null(strstr(e.msg, "empty control set"));
	h0[3] = 0;
	assert_int_equal(probe_run(&d, &tr, LAYER, x, h0, tg, 3, 2, alpha, 2, 0, &sp, SS_TC_DEFAULT, &p, &e), -1);
	assert_non_null(strstr(e.msg, "is zero: no primary sink direction"));
	free(in);
	free(y);
	free(x);
	free(h0);
	dec_free(&d);
	trace_free(&tr);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_probe),
	};
	return cmocka_run_group_tests(t, setup, teardown);
}
