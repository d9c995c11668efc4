/* pcatool - test tool: PCA (pca.h) or separability (knn.h) of a TSV matrix
 * on stdin (no header, tab-separated), printed as text for a comparison
 * with numpy / scikit-learn.
 *   usage: pcatool pca K          prints "var V" per component, "total T",
 *                                 "comp ..." rows, then "proj ..." rows
 *          pcatool sep K          first column = integer label; prints
 *                                 "knn_acc A", "knn_bal B", "silhouette S" */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/knn.h"
#include "analysis/pca.h"

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int k = atoi(argv[2]), sep = !strcmp(argv[1], "sep");
	size_t cap = 1 << 16, nv = 0;
	long n = 0, d = -1;
	float *X = malloc(cap * sizeof *X);
	int *lab = NULL;
	char line[1 << 16];
	while (fgets(line, sizeof line, stdin)) {
		long c = 0;
		lab = realloc(lab, (n + 1) * sizeof *lab);
		for (char *p = strtok(line, "\t\n"); p; p = strtok(NULL, "\t\n"), c++) {
			if (sep && c == 0) {
				lab[n] = atoi(p);
				continue;
			}
			if (nv == cap)
				X = realloc(X, (cap *= 2) * sizeof *X);
			X[nv++] = strtof(p, NULL);
		}
		if (d < 0)
			d = c - sep;
		n++;
	}
	ss_err e = {0};
	if (sep) {
		ss_sep s;
		if (sep_measure(X, n, d, lab, k, &s, &e) < 0) {
			fprintf(stderr, "pcatool: %s\n", e.msg);
			return 1;
		}
		printf("knn_acc %.10g\nknn_bal %.10g\nsilhouette %.10g\n", s.knn_acc, s.knn_bal,
		       s.silhouette);
		free(X);
		free(lab);
		return 0;
	}
	ss_pca p;
	if (pca_fit(X, n, d, k, &p, &e) < 0) {
		fprintf(stderr, "pcatool: %s\n", e.msg);
		return 1;
	}
	for (int i = 0; i < k; i++)
		printf("var %.12g\n", p.var[i]);
	printf("total %.12g\n", p.total_var);
	for (int i = 0; i < k; i++) {
		printf("comp");
		for (long j = 0; j < d; j++)
			printf(" %.12g", p.comp[(size_t)i * d + j]);
		putchar('\n');
	}
	double *Y = malloc((size_t)n * k * sizeof *Y);
	pca_project_f64(&p, X, n, Y, &e);
	for (long i = 0; i < n; i++) {
		printf("proj");
		for (int j = 0; j < k; j++)
			printf(" %.12g", Y[(size_t)i * k + j]);
		putchar('\n');
	}
	free(Y);
	pca_free(&p);
	free(X);
	free(lab);
	return 0;
}
