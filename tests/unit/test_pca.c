/* test_pca.c - PCA (analysis/pca.h) on data whose covariance is derived by
 * hand: both solvers (n >= d: the covariance's eigenpairs; n < d: the thin
 * SVD), the mean, the variances with denominator n - 1, the total variance,
 * the sign rule, projections, a rotated plane, and the errors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "analysis/pca.h"

#define NEAR(a, b, tol) assert_true(fabs((double)(a) - (double)(b)) < (tol))

/* n = 4 >= d = 3: rows (5,5,5) + (+-3,0,0) and (5,5,5) + (0,+-1,0): mean
 * (5,5,5); Xc^T Xc = diag(18, 2, 0), over n - 1 = 3: variances 6 and 2/3
 * along e1 and e2, total 20/3. */
static void test_eig(void **st)
{
	float X[4 * 3] = {8, 5, 5, 2, 5, 5, 5, 6, 5, 5, 4, 5};
	ss_pca p;
	ss_err e = {0};
	assert_int_equal(pca_fit(X, 4, 3, 2, &p, &e), 0);
	for (int j = 0; j < 3; j++)
		NEAR(p.mean[j], 5, 1e-12);
	NEAR(p.var[0], 6, 1e-9);
	NEAR(p.var[1], 2.0 / 3, 1e-9);
	NEAR(p.total_var, 20.0 / 3, 1e-9);
	NEAR(pca_ratio(&p, 0), 0.9, 1e-9);
	double want[2][3] = {{1, 0, 0}, {0, 1, 0}};   /* largest entry positive */
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			NEAR(p.comp[i * 3 + j], want[i][j], 1e-9);
	/* (8,5,5) projects to (3, 0), (5,4,5) to (0, -1) */
	float Y[4 * 2];
	assert_int_equal(pca_project(&p, X, 4, Y, &e), 0);
	NEAR(Y[0], 3, 1e-6);
	NEAR(Y[1], 0, 1e-6);
	NEAR(Y[6], 0, 1e-6);
	NEAR(Y[7], -1, 1e-6);
	pca_free(&p);
}

/* n = 3 < d = 5 (the SVD path): rows (2,1,0,0,0), (-2,1,0,0,0),
 * (0,-2,0,0,0) + 1: mean 1 in every column; Xc^T Xc = diag(8, 6, 0, 0, 0),
 * over 2: variances 4 and 3 along e1 and e2, total 7. */
static void test_svd(void **st)
{
	float X[3 * 5];
	float r[3][2] = {{2, 1}, {-2, 1}, {0, -2}};
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 5; j++)
			X[i * 5 + j] = 1 + (j < 2 ? r[i][j] : 0);
	ss_pca p;
	ss_err e = {0};
	assert_int_equal(pca_fit(X, 3, 5, 2, &p, &e), 0);
	NEAR(p.var[0], 4, 1e-9);
	NEAR(p.var[1], 3, 1e-9);
	NEAR(p.total_var, 7, 1e-9);
	for (int j = 0; j < 5; j++) {
		NEAR(p.mean[j], 1, 1e-12);
		NEAR(p.comp[j], j == 0, 1e-9);
		NEAR(p.comp[5 + j], j == 1, 1e-9);
	}
	double Y[3 * 2];
	assert_int_equal(pca_project_f64(&p, X, 3, Y, &e), 0);
	NEAR(Y[4], 0, 1e-9);
	NEAR(Y[5], -2, 1e-9);
	pca_free(&p);
}

/* Points t (cos 30, sin 30) + s (-sin 30, cos 30) for t = +-2, s = +-1 (a
 * rectangle turned by 30 degrees): variances 16/3 and 4/3 along the turned
 * axes, the second's sign by its largest entry (cos 30 > sin 30). */
static void test_rotated(void **st)
{
	double c = cos(M_PI / 6), s = sin(M_PI / 6);
	float X[4 * 2];
	int k = 0;
	for (int a = -1; a <= 1; a += 2)
		for (int b = -1; b <= 1; b += 2) {
			X[k++] = (float)(2 * a * c - b * s);
			X[k++] = (float)(2 * a * s + b * c);
		}
	ss_pca p;
	ss_err e = {0};
	assert_int_equal(pca_fit(X, 4, 2, 2, &p, &e), 0);
	NEAR(p.var[0], 16.0 / 3, 1e-6);
	NEAR(p.var[1], 4.0 / 3, 1e-6);
	NEAR(p.comp[0], c, 1e-6);
	NEAR(p.comp[1], s, 1e-6);
	NEAR(p.comp[2], -s, 1e-6);
	NEAR(p.comp[3], c, 1e-6);
	pca_free(&p);
}

static void test_errors(void **st)
{
	float X[3 * 2] = {1, 2, 3, 4, 5, 6};
	ss_pca p;
	ss_err e = {0};
	assert_int_equal(pca_fit(X, 3, 2, 3, &p, &e), -1);   /* k > min(n, d) */
	assert_int_equal(pca_fit(X, 1, 2, 1, &p, &e), -1);   /* one row */
	X[3] = NAN;
	assert_int_equal(pca_fit(X, 3, 2, 1, &p, &e), -1);
	assert_non_null(strstr(e.msg, "row 2: non-finite value in column 2"));   /* 1-based */
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_eig),
		cmocka_unit_test(test_svd),
		cmocka_unit_test(test_rotated),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
