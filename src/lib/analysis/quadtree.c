/* quadtree.c - the Barnes-Hut quadtree; see quadtree.h. */
#include "analysis/quadtree.h"

#include <stdlib.h>
#include <string.h>

void qt_free(qtree *t)
{
	free(t->code);
	free(t->code2);
	free(t->perm);
	free(t->perm2);
	free(t->ys);
	free(t->nodes);
	free(t->leaves);
}

int qt_alloc(qtree *t, long n, ss_err *e)
{
	memset(t, 0, sizeof *t);
	t->n = n;
	t->cap = 2 * n + 16;
	t->code = ss_malloc(n, sizeof *t->code, "quadtree codes", e);
	t->code2 = ss_malloc(n, sizeof *t->code2, "quadtree codes", e);
	t->perm = ss_malloc(n, sizeof *t->perm, "quadtree order", e);
	t->perm2 = ss_malloc(n, sizeof *t->perm2, "quadtree order", e);
	t->ys = ss_malloc(2 * (size_t)n, sizeof *t->ys, "quadtree points", e);
	t->nodes = ss_malloc(t->cap, sizeof *t->nodes, "quadtree nodes", e);
	t->leaves = ss_malloc(n, sizeof *t->leaves, "quadtree leaves", e);
	if (!t->code || !t->code2 || !t->perm || !t->perm2 || !t->ys || !t->nodes || !t->leaves) {
		qt_free(t);
		return -1;
	}
	return 0;
}

static uint32_t spread16(uint32_t x)
{
	x &= 0xffff;
	x = (x | (x << 8)) & 0x00ff00ff;
	x = (x | (x << 4)) & 0x0f0f0f0f;
	x = (x | (x << 2)) & 0x33333333;
	x = (x | (x << 1)) & 0x55555555;
	return x;
}

static int qt_node(qtree *t)
{
	if (t->nn == t->cap) {
		long c = t->cap * 2;
		qnode *p = realloc(t->nodes, c * sizeof *p);
		if (!p)
			return -1;
		t->nodes = p;
		t->cap = c;
	}
	return (int)t->nn++;
}

/* fill node id for Morton range [lo, hi) at level (0 = root) */
static int qt_fill(qtree *t, int id, long lo, long hi, int level, double w)
{
	qnode *nd = &t->nodes[id];
	nd->lo = (int32_t)lo;
	nd->hi = (int32_t)hi;
	nd->count = (int32_t)(hi - lo);
	nd->w2 = (float)(w * w);
	nd->child = -1;
	nd->nchild = 0;
	if (level >= QT_BITS && hi - lo > QT_LEAF) {
		/* coincident points below the finest cell: halve the range until
		 * every leaf holds at most QT_LEAF points */
		int c0 = qt_node(t), c1 = qt_node(t);
		if (c0 < 0 || c1 < 0)
			return -1;
		long mid = lo + (hi - lo) / 2;
		if (qt_fill(t, c0, lo, mid, level, w) < 0 || qt_fill(t, c1, mid, hi, level, w) < 0)
			return -1;
		nd = &t->nodes[id];
		nd->child = c0;
		nd->nchild = 2;
		qnode *a = &t->nodes[c0], *b = &t->nodes[c1];
		nd->cx = (float)(((double)a->cx * a->count + (double)b->cx * b->count) / (hi - lo));
		nd->cy = (float)(((double)a->cy * a->count + (double)b->cy * b->count) / (hi - lo));
		return 0;
	}
	if (hi - lo <= QT_LEAF) {
		double sx = 0, sy = 0;
		for (long s = lo; s < hi; s++) {
			sx += t->ys[2 * s];
			sy += t->ys[2 * s + 1];
		}
		nd->cx = (float)(sx / (hi - lo));
		nd->cy = (float)(sy / (hi - lo));
		t->leaves[t->nleaf++] = id;
		return 0;
	}
	int shift = 2 * (QT_BITS - 1 - level);
	long b[5];
	b[0] = lo;
	long s = lo;
	for (int q = 0; q < 4; q++) {
		while (s < hi && ((t->code[s] >> shift) & 3) == (uint32_t)q)
			s++;
		b[q + 1] = s;
	}
	int nc = 0;
	for (int q = 0; q < 4; q++)
		nc += b[q + 1] > b[q];
	int first = -1;
	for (int q = 0; q < nc; q++) {
		int c = qt_node(t);
		if (c < 0)
			return -1;
		if (q == 0)
			first = c;
	}
	nd = &t->nodes[id];
	nd->child = first;
	nd->nchild = nc;
	int c = first;
	double sx = 0, sy = 0;
	for (int q = 0; q < 4; q++) {
		if (b[q + 1] == b[q])
			continue;
		if (qt_fill(t, c, b[q], b[q + 1], level + 1, w / 2) < 0)
			return -1;
		qnode *ch = &t->nodes[c];
		sx += (double)ch->cx * ch->count;
		sy += (double)ch->cy * ch->count;
		c++;
	}
	nd = &t->nodes[id];
	nd->cx = (float)(sx / (hi - lo));
	nd->cy = (float)(sy / (hi - lo));
	return 0;
}

int qt_build(qtree *t, const float *Y, ss_err *e)
{
	long n = t->n;
	double x0 = Y[0], x1 = Y[0], y0 = Y[1], y1 = Y[1];
	for (long i = 1; i < n; i++) {
		double x = Y[2 * i], y = Y[2 * i + 1];
		x0 = x < x0 ? x : x0;
		x1 = x > x1 ? x : x1;
		y0 = y < y0 ? y : y0;
		y1 = y > y1 ? y : y1;
	}
	double w = x1 - x0 > y1 - y0 ? x1 - x0 : y1 - y0;
	w = w > 0 ? w * (1 + 1e-6) : 1e-6;
	double sc = 65536.0 / w;
	for (long i = 0; i < n; i++) {
		double qx = (Y[2 * i] - x0) * sc, qy = (Y[2 * i + 1] - y0) * sc;
		uint32_t ix = qx >= 65535 ? 65535 : (uint32_t)qx;
		uint32_t iy = qy >= 65535 ? 65535 : (uint32_t)qy;
		t->code2[i] = (spread16(iy) << 1) | spread16(ix);
		t->perm2[i] = (int32_t)i;
	}
	/* LSD radix sort, 4 passes of 8 bits; stable, so ties keep index order */
	uint32_t *ca = t->code2, *cb = t->code;
	int32_t *pa = t->perm2, *pb = t->perm;
	for (int pass = 0; pass < 4; pass++) {
		long cnt[257] = {0};
		int sh = 8 * pass;
		for (long i = 0; i < n; i++)
			cnt[((ca[i] >> sh) & 255) + 1]++;
		for (int b = 0; b < 256; b++)
			cnt[b + 1] += cnt[b];
		for (long i = 0; i < n; i++) {
			long o = cnt[(ca[i] >> sh) & 255]++;
			cb[o] = ca[i];
			pb[o] = pa[i];
		}
		uint32_t *tc = ca;
		ca = cb;
		cb = tc;
		int32_t *tp = pa;
		pa = pb;
		pb = tp;
	}
	/* after 4 passes the sorted data is back in code2/perm2: swap names */
	if (ca != t->code) {
		t->code2 = t->code;
		t->code = ca;
		t->perm2 = t->perm;
		t->perm = pa;
	}
	for (long s = 0; s < n; s++) {
		t->ys[2 * s] = Y[2 * (size_t)t->perm[s]];
		t->ys[2 * s + 1] = Y[2 * (size_t)t->perm[s] + 1];
	}
	t->nn = 0;
	t->nleaf = 0;
	int root = qt_node(t);
	if (root < 0 || qt_fill(t, root, 0, n, 0, w) < 0)
		return ss_err_set(e, "out of memory building the quadtree");
	return 0;
}
