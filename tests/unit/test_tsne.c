/* test_tsne.c - t-SNE pieces against hand-derived or independent values:
 * entropies of the calibrated rows, the exact gradient against central
 * finite differences of KL, the Barnes-Hut gradient against the exact one,
 * determinism across thread counts, and the input checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "analysis/neighbours.h"
#include "analysis/pca.h"
#include "analysis/tsne.h"

static uint64_t st = 12345;
static double unif(void)
{
	st = st * 6364136223846793005ULL + 1442695040888963407ULL;
	return (st >> 11) * (1.0 / 9007199254740992.0);
}
static double gauss(void)
{
	double u = unif() + 1e-12, v = unif();
	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

/* n points in d dims around c cluster centres */
static float *clusters(long n, long d, int c, double spread)
{
	float *X = malloc(n * d * sizeof *X);
	double *mu = malloc(c * d * sizeof *mu);
	for (long i = 0; i < c * d; i++)
		mu[i] = 10 * gauss();
	for (long i = 0; i < n; i++)
		for (long j = 0; j < d; j++)
			X[i * d + j] = (float)(mu[(i % c) * d + j] + spread * gauss());
	free(mu);
	return X;
}

static void test_perplexity(void **s)
{
	long n = 400, d = 12;
	int k = 90;
	float *X = clusters(n, d, 4, 1.0);
	int32_t *idx = malloc(n * k * sizeof *idx);
	float *d2 = malloc(n * k * sizeof *d2), *P = malloc(n * k * sizeof *P);
	ss_err e = {0};
	assert_int_equal(knn_vptree(X, n, d, k, 1, 2, idx, d2, &e), 0);
	/* the VP tree against brute force: the k-th distance of each row */
	for (long i = 0; i < n; i += 37) {
		double *all = malloc(n * sizeof *all);
		long m = 0;
		for (long j = 0; j < n; j++) {
			if (j == i)
				continue;
			double s2 = 0;
			for (long t = 0; t < d; t++) {
				double u = (double)X[i * d + t] - X[j * d + t];
				s2 += u * u;
			}
			all[m++] = s2;
		}
		for (int r = 0; r < k; r++) { /* partial selection */
			long b = r;
			for (long j = r + 1; j < m; j++)
				if (all[j] < all[b])
					b = j;
			double t = all[r];
			all[r] = all[b];
			all[b] = t;
			assert_true(fabs(all[r] - d2[i * k + r]) <= 1e-4 * (1 + all[r]));
		}
		free(all);
	}
	/* the BLAS scan finds the same neighbours */
	int32_t *idx2 = malloc(n * k * sizeof *idx2);
	float *d22 = malloc(n * k * sizeof *d22);
	assert_int_equal(knn_scan(X, n, d, k, 2, idx2, d22, &e), 0);
	long same = 0;
	for (long i = 0; i < n * k; i++) {
		same += idx[i] == idx2[i];
		assert_true(fabs(d2[i] - d22[i]) <= 1e-4 * (1 + d2[i]));
	}
	printf("# BLAS scan vs VP tree: %ld of %ld neighbour indices equal, distances within 1e-4\n",
	       same, n * k);
	assert_true(same >= n * k - n); /* exact ties may swap */
	free(idx2), free(d22);
	for (int t = 0; t < 3; t++) {
		double target = (double[]){5, 30, 60}[t];
		assert_int_equal(tsne_calibrate(d2, n, k, target, 2, P, NULL, &e), 0);
		double worst = 0;
		for (long i = 0; i < n; i++) {
			double H = 0, sum = 0;
			for (int m = 0; m < k; m++) {
				double p = P[i * k + m];
				sum += p;
				if (p > 0)
					H -= p * log(p);
			}
			assert_true(fabs(sum - 1) < 1e-5);
			double rel = fabs(exp(H) - target) / target;
			worst = rel > worst ? rel : worst;
		}
		printf("# perplexity %g: worst relative error %.2e (limit 1e-4)\n", target, worst);
		assert_true(worst < 1e-4);
	}
	free(X), free(idx), free(d2), free(P);
}

/* knn_guided against brute force in double: the k nearest of every row,
 * through a PCA that keeps the neighbourhoods (8 of 64 dims around 6-dim
 * structure: few exact distances measured) and one that does not (1 dim:
 * rows scanned again in full); the answer is the same exact one. */
static void test_guided(void **s)
{
	long n = 700, d = 64, lat = 6;
	int k = 40;
	float *X = malloc(n * d * sizeof *X);
	double *B = malloc(lat * d * sizeof *B);
	for (long i = 0; i < lat * d; i++)
		B[i] = gauss();
	for (long i = 0; i < n; i++) {
		double z[6];
		for (long t = 0; t < lat; t++)
			z[t] = (i % 5) * 3.0 + gauss();
		for (long j = 0; j < d; j++) {
			double v = 0.05 * gauss();
			for (long t = 0; t < lat; t++)
				v += z[t] * B[t * d + j];
			X[i * d + j] = (float)v;
		}
	}
	/* reference: every row's distances in double, the k smallest by selection */
	int32_t *ri = malloc(n * k * sizeof *ri);
	double *rd = malloc(n * k * sizeof *rd), *all = malloc(n * sizeof *all);
	for (long i = 0; i < n; i++) {
		for (long j = 0; j < n; j++) {
			double s2 = 0;
			for (long t = 0; t < d; t++) {
				double u = (double)X[i * d + t] - X[j * d + t];
				s2 += u * u;
			}
			all[j] = j == i ? INFINITY : s2;
		}
		for (int r = 0; r < k; r++) {
			long b = 0;
			for (long j = 1; j < n; j++)
				if (all[j] < all[b])
					b = j;
			ri[i * k + r] = (int32_t)b;
			rd[i * k + r] = all[b];
			all[b] = INFINITY;
		}
	}
	int dims[2] = {8, 1};
	for (int c = 0; c < 2; c++) {
		int p = dims[c];
		ss_pca pca;
		ss_err e = {0};
		float *Z = malloc(n * p * sizeof *Z);
		int32_t *idx = malloc(n * k * sizeof *idx);
		float *d2 = malloc(n * k * sizeof *d2);
		assert_int_equal(pca_fit(X, n, d, p, &pca, &e), 0);
		assert_int_equal(pca_project(&pca, X, n, Z, &e), 0);
		long full = -1, measured = -1;
		assert_int_equal(knn_guided(X, d, Z, p, n, k, 2, idx, d2, &full, &measured, &e), 0);
		long same = 0;
		for (long i = 0; i < n; i++)
			for (int r = 0; r < k; r++) {
				same += idx[i * k + r] == ri[i * k + r];
				assert_true(fabs(d2[i * k + r] - rd[i * k + r]) <= 1e-5 * rd[i * k + r]);
			}
		printf("# guided by %d of %ld dims: %ld of %ld neighbours as brute force, %ld rows "
		       "scanned in full, %.1f exact distances per row\n",
		       p, d, same, n * k, full, (double)measured / n);
		assert_int_equal(same, n * k);
		if (p == 8) {
			assert_int_equal(full, 0);
			assert_true(measured < 4L * k * n);
		} else {
			assert_true(full > 0);
		}
		pca_free(&pca);
		free(Z), free(idx), free(d2);
	}
	free(X), free(B), free(ri), free(rd), free(all);
}

static void make_P(long n, long d, ss_csr *P)
{
	float *X = clusters(n, d, 3, 1.0);
	ss_tsne_params p;
	tsne_params_default(&p);
	p.perplexity = n > 100 ? 20 : 5;
	ss_err e = {0};
	assert_int_equal(tsne_affinities(X, n, d, &p, P, NULL, &e), 0);
	free(X);
}

static void test_gradient_fd(void **s)
{
	long n = 40;
	ss_csr P;
	make_P(n, 5, &P);
	float *Y = malloc(2 * n * sizeof *Y), *g = malloc(2 * n * sizeof *g);
	for (long i = 0; i < 2 * n; i++)
		Y[i] = (float)(2 * gauss());
	ss_err e = {0};
	assert_int_equal(tsne_gradient(&P, Y, n, 0, 1, 1, g, NULL, &e), 0);
	double num = 0, den = 0;
	for (long i = 0; i < 2 * n; i++) {
		float y0 = Y[i];
		float h = 1e-2f;
		Y[i] = y0 + h;
		double kp = tsne_kl(&P, Y, n, 1, 0);
		Y[i] = y0 - h;
		double km = tsne_kl(&P, Y, n, 1, 0);
		Y[i] = y0;
		double fd = (kp - km) / (2 * (double)h);
		num += (fd - g[i]) * (fd - g[i]);
		den += fd * fd;
	}
	double rel = sqrt(num / den);
	printf("# exact gradient vs central differences of KL: relative error %.2e (limit 1e-3)\n",
	       rel);
	assert_true(rel < 1e-3);
	csr_free(&P);
	free(Y), free(g);
}

static void test_gradient_bh(void **s)
{
	long n = 2000;
	ss_csr P;
	make_P(n, 10, &P);
	float *Y = malloc(2 * n * sizeof *Y), *ge = malloc(2 * n * sizeof *ge),
	      *gb = malloc(2 * n * sizeof *gb);
	for (long i = 0; i < n; i++) { /* a spread-out layout like a late iterate */
		Y[2 * i] = (float)(10 * (i % 3) + 3 * gauss());
		Y[2 * i + 1] = (float)(3 * gauss());
	}
	ss_err e = {0};
	double Ze, Zb;
	assert_int_equal(tsne_gradient(&P, Y, n, 0, 1, 2, ge, &Ze, &e), 0);
	double thetas[] = {0.2, 0.5, 0.8}, lim[] = {3e-3, 2e-2, 5e-2};
	for (int t = 0; t < 3; t++) {
		assert_int_equal(tsne_gradient(&P, Y, n, thetas[t], 1, 2, gb, &Zb, &e), 0);
		double num = 0, den = 0;
		for (long i = 0; i < 2 * n; i++) {
			num += (double)(gb[i] - ge[i]) * (gb[i] - ge[i]);
			den += (double)ge[i] * ge[i];
		}
		double rel = sqrt(num / den), zrel = fabs(Zb - Ze) / Ze;
		printf("# theta %.1f, N %ld: BH gradient relative error %.2e (limit %.0e), "
		       "Z relative error %.2e\n", thetas[t], n, rel, lim[t], zrel);
		assert_true(rel < lim[t]);
		assert_true(zrel < lim[t]);
	}
	csr_free(&P);
	free(Y), free(ge), free(gb);
}

static void test_deterministic(void **s)
{
	long n = 600, d = 20;
	float *X = clusters(n, d, 3, 1.0);
	float *Y1 = malloc(2 * n * sizeof *Y1), *Y2 = malloc(2 * n * sizeof *Y2);
	ss_tsne_params p;
	tsne_params_default(&p);
	p.max_iter = 300;
	p.threads = 1;
	ss_err e = {0};
	ss_tsne_info i1, i2;
	assert_int_equal(tsne_run(X, n, d, &p, Y1, &i1, &e), 0);
	p.threads = 2;
	assert_int_equal(tsne_run(X, n, d, &p, Y2, &i2, &e), 0);
	assert_memory_equal(Y1, Y2, 2 * n * sizeof *Y1);
	assert_true(i1.kl == i2.kl);
	p.init = SS_TSNE_INIT_RANDOM;
	p.seed = 7;
	assert_int_equal(tsne_run(X, n, d, &p, Y1, &i1, &e), 0);
	p.threads = 1;
	assert_int_equal(tsne_run(X, n, d, &p, Y2, &i2, &e), 0);
	assert_memory_equal(Y1, Y2, 2 * n * sizeof *Y1);
	free(X), free(Y1), free(Y2);
}

static void test_exact_mode(void **s)
{
	long n = 300, d = 8;
	float *X = clusters(n, d, 3, 0.5);
	float *Y = malloc(2 * n * sizeof *Y);
	ss_tsne_params p;
	tsne_params_default(&p);
	p.exact = 1;
	p.perplexity = 20;
	ss_err e = {0};
	ss_tsne_info in;
	assert_int_equal(tsne_run(X, n, d, &p, Y, &in, &e), 0);
	assert_true(in.kl_exact && in.kl > 0 && in.kl < 2);
	/* the three planted clusters: every point nearer its own centroid */
	double c[3][2] = {{0}};
	for (long i = 0; i < n; i++)
		c[i % 3][0] += Y[2 * i] / (n / 3.0), c[i % 3][1] += Y[2 * i + 1] / (n / 3.0);
	long bad = 0;
	for (long i = 0; i < n; i++) {
		int best = 0;
		double bd = 1e300;
		for (int k = 0; k < 3; k++) {
			double dx = Y[2 * i] - c[k][0], dy = Y[2 * i + 1] - c[k][1];
			if (dx * dx + dy * dy < bd)
				bd = dx * dx + dy * dy, best = k;
		}
		bad += best != i % 3;
	}
	assert_int_equal(bad, 0);
	free(X), free(Y);
}

static void test_bad_input(void **s)
{
	long n = 50, d = 4;
	float *X = clusters(n, d, 2, 1.0);
	float *Y = malloc(2 * n * sizeof *Y);
	ss_tsne_params p;
	tsne_params_default(&p);
	ss_err e = {0};
	assert_int_equal(tsne_run(X, n, d, &p, Y, NULL, &e), -1);
	assert_non_null(strstr(e.msg, "too few for perplexity 30"));
	p.perplexity = 5;
	X[7 * d + 2] = NAN;
	assert_int_equal(tsne_run(X, n, d, &p, Y, NULL, &e), -1);
	assert_string_equal(e.msg, "row 8: non-finite value in column 3");
	free(X), free(Y);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_perplexity),
		cmocka_unit_test(test_guided),
		cmocka_unit_test(test_gradient_fd),
		cmocka_unit_test(test_gradient_bh),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_exact_mode),
		cmocka_unit_test(test_bad_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
