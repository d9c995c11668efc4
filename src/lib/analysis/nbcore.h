/* nbcore.h - private to analysis/: the squared distance and the bounded
 * max-heap that the neighbour searches (vptree.c, nbscan.c) and the dense
 * affinities (affinity.c) share.  Not part of the library's API. */
#ifndef SS_NBCORE_H
#define SS_NBCORE_H

#include <stdint.h>

/* squared distance in 8 f32 lanes, summed in double */
static inline double sqdist(const float *a, const float *b, long d)
{
	float acc[8] = {0};
	long j = 0;
	for (; j + 8 <= d; j += 8)
		for (int l = 0; l < 8; l++) {
			float t = a[j + l] - b[j + l];
			acc[l] += t * t;
		}
	double s = 0;
	for (int l = 0; l < 8; l++)
		s += acc[l];
	for (; j < d; j++) {
		double t = (double)a[j] - b[j];
		s += t * t;
	}
	return s;
}

typedef struct heap {
	int k, n;
	double *d;
	int32_t *i;
} heap;

/* Put (d, i) in place of the root of the max-heap h and sift it down. */
static inline void heap_sift(heap *h, double d, int32_t i)
{
	long c = 0;
	for (;;) {
		long l = 2 * c + 1, r = l + 1, m = c;
		double md = d;
		if (l < h->n && h->d[l] > md) {
			m = l;
			md = h->d[l];
		}
		if (r < h->n && h->d[r] > md)
			m = r;
		if (m == c)
			break;
		h->d[c] = h->d[m];
		h->i[c] = h->i[m];
		c = m;
	}
	h->d[c] = d;
	h->i[c] = i;
}

static inline void heap_push(heap *h, double d, int32_t i)
{
	if (h->n < h->k) {
		long c = h->n++;
		while (c > 0) {
			long p = (c - 1) / 2;
			if (h->d[p] >= d)
				break;
			h->d[c] = h->d[p];
			h->i[c] = h->i[p];
			c = p;
		}
		h->d[c] = d;
		h->i[c] = i;
		return;
	}
	if (d < h->d[0])
		heap_sift(h, d, i);
}

#endif
