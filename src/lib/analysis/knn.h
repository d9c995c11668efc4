/* knn.h - separability of labelled groups: leave-one-out k-NN accuracy and
 * the silhouette coefficient (Rousseeuw 1987), Euclidean distances.
 *
 * Distances come from the f64 distance scan of neighbours.h (blocked dgemm:
 * |x|^2 + |y|^2 - 2 x.y).
 * Labels are small non-negative integers; rows with label < 0 are ignored.
 */
#ifndef SS_KNN_H
#define SS_KNN_H

#include "util/err.h"

typedef struct ss_sep {
	long n;           /* labelled rows used */
	int nclass;       /* distinct labels among them */
	double knn_acc;   /* fraction of rows whose k nearest other rows vote their label */
	double knn_bal;   /* the same, averaged per class (balanced accuracy) */
	double silhouette; /* mean over rows of (b - a) / max(a, b) */
} ss_sep;

/* k-NN vote: the label with most of the k nearest other rows; a tie goes
 * to the smallest label (scikit-learn's rule).  Silhouette: a = mean
 * distance to the other rows of the same label, b = smallest mean distance
 * to the rows of another label; rows alone in their label score 0
 * (scikit-learn's silhouette_score).  Needs at least 2 labels and k < n. */
int sep_measure(const float *X, long n, long d, const int *label, int k, ss_sep *out, ss_err *e);

#endif
