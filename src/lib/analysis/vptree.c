/* vptree.c - k nearest neighbours by a vantage-point tree; see neighbours.h. */
#include "analysis/neighbours.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "analysis/nbcore.h"
#include "util/par.h"
#include "util/rng.h"

typedef struct vpnode {
	int32_t item;   /* vantage point (row index) */
	float radius;   /* median distance to the points below */
	int32_t in, out; /* children (node indices) or -1 */
} vpnode;

typedef struct vptree {
	const float *X;
	long d;
	int32_t *items;
	float *tmp;
	vpnode *nodes;
	long nn;
	uint64_t rng;
} vptree;

static void swap_item(vptree *t, long a, long b)
{
	int32_t i = t->items[a];
	t->items[a] = t->items[b];
	t->items[b] = i;
	float f = t->tmp[a];
	t->tmp[a] = t->tmp[b];
	t->tmp[b] = f;
}

/* reorder items[lo, hi) so that position m holds the m-th smallest tmp */
static void select_nth(vptree *t, long lo, long hi, long m)
{
	hi--;
	while (hi > lo) {
		long mid = lo + (hi - lo) / 2;
		/* median of three as pivot */
		if (t->tmp[mid] < t->tmp[lo])
			swap_item(t, mid, lo);
		if (t->tmp[hi] < t->tmp[lo])
			swap_item(t, hi, lo);
		if (t->tmp[hi] < t->tmp[mid])
			swap_item(t, hi, mid);
		float piv = t->tmp[mid];
		long i = lo, j = hi;
		while (i <= j) {
			while (t->tmp[i] < piv)
				i++;
			while (t->tmp[j] > piv)
				j--;
			if (i <= j) {
				swap_item(t, i, j);
				i++;
				j--;
			}
		}
		if (m <= j)
			hi = j;
		else if (m >= i)
			lo = i;
		else
			return;
	}
}

static int32_t vp_build(vptree *t, long lo, long hi)
{
	if (hi <= lo)
		return -1;
	int32_t id = (int32_t)t->nn++;
	long r = lo + (long)(ss_rng_next(&t->rng) % (uint64_t)(hi - lo));
	swap_item(t, lo, r);
	int32_t vp = t->items[lo];
	t->nodes[id].item = vp;
	t->nodes[id].radius = 0;
	t->nodes[id].in = t->nodes[id].out = -1;
	if (hi - lo > 1) {
		const float *x = t->X + (size_t)vp * t->d;
		for (long i = lo + 1; i < hi; i++)
			t->tmp[i] = (float)sqrt(sqdist(x, t->X + (size_t)t->items[i] * t->d, t->d));
		long med = (lo + 1 + hi) / 2;
		select_nth(t, lo + 1, hi, med);
		t->nodes[id].radius = t->tmp[med];
		int32_t a = vp_build(t, lo + 1, med);
		int32_t b = vp_build(t, med, hi);
		t->nodes[id].in = a;
		t->nodes[id].out = b;
	}
	return id;
}
static void vp_search(const vptree *t, int32_t node, const float *q, int32_t self, heap *h,
                      double *tau)
{
	while (node >= 0) {
		const vpnode *nd = &t->nodes[node];
		double dist = sqrt(sqdist(q, t->X + (size_t)nd->item * t->d, t->d));
		if (nd->item != self && dist < *tau) {
			heap_push(h, dist, nd->item);
			if (h->n == h->k)
				*tau = h->d[0];
		}
		if (nd->in < 0 && nd->out < 0)
			return;
		if (dist < nd->radius) {
			if (dist - *tau <= nd->radius)
				vp_search(t, nd->in, q, self, h, tau);
			if (dist + *tau >= nd->radius)
				node = nd->out;
			else
				return;
		} else {
			if (dist + *tau >= nd->radius)
				vp_search(t, nd->out, q, self, h, tau);
			if (dist - *tau <= nd->radius)
				node = nd->in;
			else
				return;
		}
	}
}

typedef struct knn_ctx {
	const vptree *t;
	long n;
	int k;
	int32_t *idx;
	float *dist2;
	int fail;
} knn_ctx;

static void knn_chunk(void *c, long lo, long hi, int tid)
{
	knn_ctx *x = c;
	int k = x->k;
	double *hd = malloc(k * sizeof *hd);
	int32_t *hi_ = malloc(k * sizeof *hi_);
	if (!hd || !hi_) {
		x->fail = 1;
		free(hd);
		free(hi_);
		return;
	}
	for (long i = lo; i < hi; i++) {
		heap h = {k, 0, hd, hi_};
		double tau = DBL_MAX;
		vp_search(x->t, 0, x->t->X + (size_t)i * x->t->d, (int32_t)i, &h, &tau);
		/* heap sort: pop the largest to the end */
		int32_t *oi = x->idx + (size_t)i * k;
		float *od = x->dist2 + (size_t)i * k;
		while (h.n > 0) {
			int last = h.n - 1;
			oi[last] = h.i[0];
			od[last] = (float)(h.d[0] * h.d[0]);
			h.n--;
			if (h.n > 0)   /* the last element, sifted down from the root */
				heap_sift(&h, h.d[last], h.i[last]);
		}
	}
	free(hd);
	free(hi_);
}

int knn_vptree(const float *X, long n, long d, int k, uint64_t seed, int threads, int32_t *idx,
               float *dist2, ss_err *e)
{
	if (k < 1 || k > n - 1)
		return ss_err_set(e, "%d neighbours asked among %ld points", k, n);
	vptree t = {X, d, NULL, NULL, NULL, 0, seed ^ 0x5851f42d4c957f2dULL};
	t.items = ss_malloc(n, sizeof *t.items, "VP-tree items", e);
	t.tmp = ss_malloc(n, sizeof *t.tmp, "VP-tree distances", e);
	t.nodes = ss_malloc(n, sizeof *t.nodes, "VP-tree nodes", e);
	int rc = -1;
	if (!t.items || !t.tmp || !t.nodes)
		goto done;
	for (long i = 0; i < n; i++)
		t.items[i] = (int32_t)i;
	vp_build(&t, 0, n);
	knn_ctx c = {&t, n, k, idx, dist2, 0};
	ss_par_for(threads, n, knn_chunk, &c);
	if (c.fail) {
		ss_err_set(e, "out of memory in the neighbour search");
		goto done;
	}
	rc = 0;
done:
	free(t.items);
	free(t.tmp);
	free(t.nodes);
	return rc;
}
