/* tsne.c - t-SNE with Barnes-Hut; see tsne.h for the formulas. */
#include "analysis/tsne.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/par.h"
#include "analysis/pca.h"
#include "util/progress.h"
#include "util/rng.h"

void tsne_params_default(ss_tsne_params *p)
{
	memset(p, 0, sizeof *p);
	p->perplexity = 30;
	p->theta = 0.5;
	p->max_iter = 1000;
	p->exag_iter = 250;
	p->exaggeration = 12;
	p->momentum_early = 0.5;
	p->momentum_late = 0.8;
	p->pca_dims = 50;
	p->init = SS_TSNE_INIT_PCA;
	p->seed = 1;
	p->threads = 1;
	p->kl_exact_max = 10000;
}

void csr_free(ss_csr *m)
{
	if (!m)
		return;
	free(m->rowptr);
	free(m->col);
	free(m->val);
	memset(m, 0, sizeof *m);
}

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

/* ---------------------------------------------------------------- VP tree */

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

typedef struct heap {
	int k, n;
	double *d;
	int32_t *i;
} heap;

/* Put (d, i) in place of the root of the max-heap h and sift it down. */
static void heap_sift(heap *h, double d, int32_t i)
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

static void heap_push(heap *h, double d, int32_t i)
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

int tsne_knn(const float *X, long n, long d, int k, uint64_t seed, int threads, int32_t *idx,
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

/* ------------------------------------------------------- kNN by BLAS scan */

#define KB 512 /* query rows per block */

typedef struct scan_ctx {
	const float *X;
	long n, d, r0;
	int k;
	const float *D;   /* [KB * n] -2 x.y */
	const double *sq; /* [n] */
	int32_t *idx;
	float *dist2;
} scan_ctx;

static int cmp_nb(double da, int32_t ia, double db, int32_t ib)
{
	return da < db || (da == db && ia < ib);
}

static void scan_chunk(void *c, long lo, long hi, int tid)
{
	scan_ctx *x = c;
	int k = x->k;
	double *hd = malloc(k * sizeof *hd);
	int32_t *hi_ = malloc(k * sizeof *hi_);
	if (!hd || !hi_) {
		free(hd);
		free(hi_);
		return; /* rows stay marked -1; the caller reports it */
	}
	for (long r = lo; r < hi; r++) {
		long i = x->r0 + r;
		const float *row = x->D + (size_t)r * x->n;
		heap h = {k, 0, hd, hi_};
		for (long j = 0; j < x->n; j++) {
			if (j == i)
				continue;
			double d2 = row[j] + x->sq[i] + x->sq[j];
			if (h.n < k || d2 < h.d[0])
				heap_push(&h, d2, (int32_t)j);
		}
		/* exact distances of the kept ones, sorted by (distance, index) */
		int32_t *oi = x->idx + (size_t)i * k;
		float *od = x->dist2 + (size_t)i * k;
		double ex[512];
		double *exd = k <= 512 ? ex : malloc(k * sizeof *exd);
		if (!exd) {
			oi[0] = -1;
			continue;
		}
		for (int m = 0; m < k; m++) {
			oi[m] = h.i[m];
			exd[m] = sqdist(x->X + (size_t)i * x->d, x->X + (size_t)h.i[m] * x->d, x->d);
		}
		for (int m = 1; m < k; m++) {
			double dv = exd[m];
			int32_t iv = oi[m];
			int t = m;
			while (t > 0 && cmp_nb(dv, iv, exd[t - 1], oi[t - 1])) {
				exd[t] = exd[t - 1];
				oi[t] = oi[t - 1];
				t--;
			}
			exd[t] = dv;
			oi[t] = iv;
		}
		for (int m = 0; m < k; m++)
			od[m] = (float)exd[m];
		if (exd != ex)
			free(exd);
	}
	free(hd);
	free(hi_);
}

int tsne_knn_blas(const float *X, long n, long d, int k, int threads, int32_t *idx, float *dist2,
                  ss_err *e)
{
	if (k < 1 || k > n - 1)
		return ss_err_set(e, "%d neighbours asked among %ld points", k, n);
	double *sq = ss_malloc(n, sizeof *sq, "row norms", e);
	float *D = ss_malloc((size_t)KB * n, sizeof *D, "distance block", e);
	if (!sq || !D) {
		free(sq);
		free(D);
		return -1;
	}
	for (long i = 0; i < n; i++) {
		double s = 0;
		for (long j = 0; j < d; j++)
			s += (double)X[(size_t)i * d + j] * X[(size_t)i * d + j];
		sq[i] = s;
	}
	for (size_t i = 0; i < (size_t)n * k; i++)
		idx[i] = 0;
	for (long r0 = 0; r0 < n; r0 += KB) {
		long b = n - r0 < KB ? n - r0 : KB;
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)b, (int)n, (int)d, -2.0f,
		            X + (size_t)r0 * d, (int)d, X, (int)d, 0.0f, D, (int)n);
		scan_ctx c = {X, n, d, r0, k, D, sq, idx, dist2};
		ss_par_for(threads, b, scan_chunk, &c);
	}
	free(sq);
	free(D);
	for (long i = 0; i < n; i++)
		if (idx[(size_t)i * k] < 0)
			return ss_err_set(e, "out of memory in the neighbour search");
	return 0;
}

/* ------------------------------------------------------------ calibration */

typedef struct cal_ctx {
	const float *dist2;
	int k;
	double perplexity;
	float *P;
	double *perp;
} cal_ctx;

static void cal_chunk(void *c, long lo, long hi, int tid)
{
	cal_ctx *x = c;
	int k = x->k;
	double target = log(x->perplexity);
	double *p = malloc(k * sizeof *p);
	if (!p)
		return; /* caller checks for NaN-free output below */
	for (long i = lo; i < hi; i++) {
		const float *d2 = x->dist2 + (size_t)i * k;
		double dmin = d2[0];
		for (int m = 1; m < k; m++)
			if (d2[m] < dmin)
				dmin = d2[m];
		/* distances shifted by their minimum: the normalised distribution
		 * and its entropy are unchanged, and exp never underflows to 0 */
		double beta = 1, bmin = -DBL_MAX, bmax = DBL_MAX, H = 0, sum = 1;
		double scale = 0;
		for (int m = 0; m < k; m++)
			scale += d2[m] - dmin;
		scale /= k;
		if (scale > 0)
			beta = 1 / scale;
		for (int it = 0; it < 200; it++) {
			sum = 0;
			double sdp = 0;
			for (int m = 0; m < k; m++) {
				double dd = d2[m] - dmin;
				p[m] = exp(-beta * dd);
				sum += p[m];
				sdp += dd * p[m];
			}
			H = log(sum) + beta * sdp / sum;
			double diff = H - target;
			if (fabs(diff) <= 1e-5)
				break;
			if (diff > 0) {
				bmin = beta;
				beta = bmax == DBL_MAX ? beta * 2 : (beta + bmax) / 2;
			} else {
				bmax = beta;
				beta = bmin == -DBL_MAX ? beta / 2 : (beta + bmin) / 2;
			}
		}
		for (int m = 0; m < k; m++)
			x->P[(size_t)i * k + m] = (float)(p[m] / sum);
		if (x->perp)
			x->perp[i] = exp(H);
	}
	free(p);
}

int tsne_calibrate(const float *dist2, long n, int k, double perplexity, int threads, float *P,
                   double *perp, ss_err *e)
{
	if (!(perplexity > 0) || perplexity >= k + 1)
		return ss_err_set(e, "perplexity %g needs more than %d neighbours", perplexity, k);
	for (size_t i = 0; i < (size_t)n * k; i++)
		P[i] = NAN;
	cal_ctx c = {dist2, k, perplexity, P, perp};
	ss_par_for(threads, n, cal_chunk, &c);
	for (size_t i = 0; i < (size_t)n * k; i++)
		if (!isfinite(P[i]))
			return ss_err_set(e, "perplexity calibration failed at row %zu", i / k + 1);
	return 0;
}

/* -------------------------------------------------------- symmetrisation */

int tsne_symmetrize(long n, int k, const int32_t *idx, const float *Pc, ss_csr *out, ss_err *e)
{
	memset(out, 0, sizeof *out);
	long *cnt = ss_calloc(n + 1, sizeof *cnt, "affinity rows", e);
	if (!cnt)
		return -1;
	for (long i = 0; i < n; i++)
		for (int m = 0; m < k; m++) {
			cnt[i + 1]++;
			cnt[idx[(size_t)i * k + m] + 1]++;
		}
	for (long i = 0; i < n; i++)
		cnt[i + 1] += cnt[i];
	size_t tot = cnt[n];
	if (tot >= 0xffffffffu) {
		free(cnt);
		return ss_err_set(e, "%ld points x %d neighbours: too many affinities", n, k);
	}
	/* pack (col, slot) pairs: col in the high half so sorting a row sorts columns */
	int64_t *ent = ss_malloc(tot, sizeof *ent, "affinity entries", e);
	float *ev = ss_malloc(tot, sizeof *ev, "affinity values", e);
	long *fill = ss_malloc(n, sizeof *fill, "affinity fill", e);
	if (!ent || !ev || !fill) {
		free(cnt);
		free(ent);
		free(ev);
		free(fill);
		return -1;
	}
	memcpy(fill, cnt, n * sizeof *fill);
	for (long i = 0; i < n; i++)
		for (int m = 0; m < k; m++) {
			int32_t j = idx[(size_t)i * k + m];
			float v = Pc[(size_t)i * k + m];
			size_t a = fill[i]++, b = fill[j]++;
			ent[a] = ((int64_t)j << 32) | (uint32_t)a;
			ev[a] = v;
			ent[b] = ((int64_t)i << 32) | (uint32_t)b;
			ev[b] = v;
		}
	free(fill);
	/* sort each row by (column, slot) and merge duplicates */
	long *rp = ss_malloc(n + 1, sizeof *rp, "affinity row pointers", e);
	int32_t *col = ss_malloc(tot, sizeof *col, "affinity columns", e);
	float *val = ss_malloc(tot, sizeof *val, "affinity values", e);
	if (!rp || !col || !val) {
		free(cnt), free(ent), free(ev), free(rp), free(col), free(val);
		return -1;
	}
	size_t w = 0;
	double sum = 0;
	for (long i = 0; i < n; i++) {
		rp[i] = (long)w;
		size_t a = cnt[i], b = cnt[i + 1];
		/* insertion sort is fine for ~2k entries per row, and stable */
		for (size_t s = a + 1; s < b; s++) {
			int64_t key = ent[s];
			size_t t = s;
			while (t > a && ent[t - 1] > key) {
				ent[t] = ent[t - 1];
				t--;
			}
			ent[t] = key;
		}
		for (size_t s = a; s < b;) {
			int32_t j = (int32_t)(ent[s] >> 32);
			double v = 0;
			while (s < b && (int32_t)(ent[s] >> 32) == j) {
				v += ev[(uint32_t)ent[s] & 0xffffffffu];
				s++;
			}
			col[w] = j;
			val[w] = (float)v;
			sum += v;
			w++;
		}
	}
	rp[n] = (long)w;
	free(cnt);
	free(ent);
	free(ev);
	if (sum <= 0)
		sum = 1;
	for (size_t s = 0; s < w; s++)
		val[s] = (float)(val[s] / sum);
	out->n = n;
	out->rowptr = rp;
	out->col = col;
	out->val = val;
	return 0;
}

/* ------------------------------------------------------------- quadtree */

#define QT_LEAF 8   /* points per leaf bucket */
#define QT_BITS 16  /* levels */

typedef struct qnode {
	float cx, cy;   /* centre of mass */
	float w2;       /* squared cell width */
	int32_t count;
	int32_t child;  /* first child (children contiguous) or -1 for a leaf */
	int32_t nchild;
	int32_t lo, hi; /* range in Morton order */
} qnode;

typedef struct qtree {
	long n;
	uint32_t *code, *code2;
	int32_t *perm, *perm2; /* Morton order -> point */
	float *ys;             /* positions in Morton order [2n] */
	qnode *nodes;
	long nn, cap;
	int32_t *leaves;       /* leaf nodes in Morton order */
	long nleaf;
} qtree;

static void qt_free(qtree *t)
{
	free(t->code);
	free(t->code2);
	free(t->perm);
	free(t->perm2);
	free(t->ys);
	free(t->nodes);
	free(t->leaves);
}

static int qt_alloc(qtree *t, long n, ss_err *e)
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

static int qt_build(qtree *t, const float *Y, ss_err *e)
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

/* ------------------------------------------------------------- gradient */

typedef struct grad_ctx {
	const ss_csr *P;
	const float *Y;
	long n;
	double theta2, exag;
	const qtree *t;
	double *rep;  /* [2n] sum_j w^2 (y_i - y_j) */
	double *zrow; /* [n] sum_j w_ij */
	float *grad;
} grad_ctx;

/* Repulsion for the points of one leaf at a time: the leaf's points share
 * one traversal, and a cell stands for its points when w^2 < theta^2 d2
 * with d2 the squared distance from its centre of mass to the leaf's
 * bounding box (so the criterion holds for every point of the leaf).  The
 * lanes are always QT_LEAF wide (missing points repeat the first one and
 * are discarded) so that the compiler vectorises them; per-traversal sums
 * are f32 (a few hundred terms), stored in double. */
static void rep_group_chunk(void *c, long lo, long hi, int tid)
{
	grad_ctx *x = c;
	const qtree *t = x->t;
	const qnode *nodes = t->nodes;
	const float *ys = t->ys;
	float th2 = (float)x->theta2;
	int32_t stack[256];
	for (long g = lo; g < hi; g++) {
		const qnode *leaf = &nodes[t->leaves[g]];
		int m0 = leaf->lo, np = leaf->hi - leaf->lo;
		float px[QT_LEAF], py[QT_LEAF], fx[QT_LEAF] = {0}, fy[QT_LEAF] = {0}, z[QT_LEAF] = {0};
		int32_t self[QT_LEAF];
		float bx0 = ys[2 * m0], bx1 = bx0, by0 = ys[2 * m0 + 1], by1 = by0;
		for (int a = 0; a < QT_LEAF; a++) {
			int m = a < np ? m0 + a : m0;
			px[a] = ys[2 * m];
			py[a] = ys[2 * m + 1];
			self[a] = m;
			bx0 = px[a] < bx0 ? px[a] : bx0;
			bx1 = px[a] > bx1 ? px[a] : bx1;
			by0 = py[a] < by0 ? py[a] : by0;
			by1 = py[a] > by1 ? py[a] : by1;
		}
		int sp = 0;
		stack[sp++] = 0;
		while (sp > 0) {
			const qnode *nd = &nodes[stack[--sp]];
			float cx = nd->cx, cy = nd->cy;
			float ex = cx < bx0 ? bx0 - cx : cx > bx1 ? cx - bx1 : 0;
			float ey = cy < by0 ? by0 - cy : cy > by1 ? cy - by1 : 0;
			if (nd->w2 < th2 * (ex * ex + ey * ey)) {
				float cnt = (float)nd->count;
				for (int a = 0; a < QT_LEAF; a++) {
					float dx = px[a] - cx, dy = py[a] - cy;
					float q = 1.0f / (1.0f + dx * dx + dy * dy);
					float cq = cnt * q;
					z[a] += cq;
					fx[a] += cq * q * dx;
					fy[a] += cq * q * dy;
				}
			} else if (nd->child < 0) {
				for (int32_t m = nd->lo; m < nd->hi; m++) {
					float mx = ys[2 * m], my = ys[2 * m + 1];
					for (int a = 0; a < QT_LEAF; a++) {
						float dx = px[a] - mx, dy = py[a] - my;
						float q = 1.0f / (1.0f + dx * dx + dy * dy);
						z[a] += self[a] == m ? 0.0f : q;
						fx[a] += q * q * dx;
						fy[a] += q * q * dy;
					}
				}
			} else {
				for (int ch = nd->nchild - 1; ch >= 0; ch--)
					stack[sp++] = nd->child + ch;
			}
		}
		for (int a = 0; a < np; a++) {
			int32_t i = t->perm[m0 + a];
			x->rep[2 * (size_t)i] = fx[a];
			x->rep[2 * (size_t)i + 1] = fy[a];
			x->zrow[i] = z[a];
		}
	}
}

static void rep_exact_chunk(void *c, long lo, long hi, int tid)
{
	grad_ctx *x = c;
	const float *Y = x->Y;
	for (long i = lo; i < hi; i++) {
		double fx = 0, fy = 0, z = 0;
		float px = Y[2 * i], py = Y[2 * i + 1];
		for (long j = 0; j < x->n; j++) {
			if (j == i)
				continue;
			double dx = px - Y[2 * j], dy = py - Y[2 * j + 1];
			double q = 1 / (1 + dx * dx + dy * dy);
			z += q;
			fx += q * q * dx;
			fy += q * q * dy;
		}
		x->rep[2 * i] = fx;
		x->rep[2 * i + 1] = fy;
		x->zrow[i] = z;
	}
}

/* Attractive forces and the gradient.  Rows are taken 8 entries at a time
 * (positions gathered into lanes, then one vectorised block), f32 lanes
 * summed in double at the end of the row. */
static void attr_chunk(void *c, long lo, long hi, int tid)
{
	grad_ctx *x = c;
	const ss_csr *P = x->P;
	const float *Y = x->Y;
	double Z = x->theta2; /* reused: holds Z in this pass */
	for (long i = lo; i < hi; i++) {
		float px = Y[2 * i], py = Y[2 * i + 1];
		float ax8[8] = {0}, ay8[8] = {0}, yx[8], yy[8], pv[8];
		long s = P->rowptr[i], e = P->rowptr[i + 1];
		for (; s + 8 <= e; s += 8) {
			for (int a = 0; a < 8; a++) {
				int32_t j = P->col[s + a];
				yx[a] = Y[2 * (size_t)j];
				yy[a] = Y[2 * (size_t)j + 1];
				pv[a] = P->val[s + a];
			}
			for (int a = 0; a < 8; a++) {
				float dx = px - yx[a], dy = py - yy[a];
				float q = pv[a] / (1.0f + dx * dx + dy * dy);
				ax8[a] += q * dx;
				ay8[a] += q * dy;
			}
		}
		double ax = 0, ay = 0;
		for (; s < e; s++) {
			int32_t j = P->col[s];
			float dx = px - Y[2 * (size_t)j], dy = py - Y[2 * (size_t)j + 1];
			float q = P->val[s] / (1.0f + dx * dx + dy * dy);
			ax += q * dx;
			ay += q * dy;
		}
		for (int a = 0; a < 8; a++) {
			ax += ax8[a];
			ay += ay8[a];
		}
		x->grad[2 * i] = (float)(4 * (x->exag * ax - x->rep[2 * i] / Z));
		x->grad[2 * i + 1] = (float)(4 * (x->exag * ay - x->rep[2 * i + 1] / Z));
	}
}

/* workspace shared by successive gradient evaluations */
typedef struct gwork {
	qtree t;
	double *rep, *zrow;
	int have_tree;
} gwork;

static int gwork_init(gwork *w, long n, double theta, ss_err *e)
{
	memset(w, 0, sizeof *w);
	w->rep = ss_malloc(2 * (size_t)n, sizeof *w->rep, "repulsive forces", e);
	w->zrow = ss_malloc(n, sizeof *w->zrow, "normaliser terms", e);
	if (!w->rep || !w->zrow)
		return -1;
	if (theta > 0) {
		if (qt_alloc(&w->t, n, e) < 0)
			return -1;
		w->have_tree = 1;
	}
	return 0;
}

static void gwork_free(gwork *w)
{
	free(w->rep);
	free(w->zrow);
	if (w->have_tree)
		qt_free(&w->t);
}

static int gradient(gwork *w, const ss_csr *P, const float *Y, long n, double theta, double exag,
                    int threads, float *grad, double *Zout, ss_err *e)
{
	grad_ctx c = {P, Y, n, theta * theta, exag, &w->t, w->rep, w->zrow, grad};
	if (theta > 0) {
		if (qt_build(&w->t, Y, e) < 0)
			return -1;
		ss_par_for(threads, w->t.nleaf, rep_group_chunk, &c);
	} else {
		ss_par_for(threads, n, rep_exact_chunk, &c);
	}
	double Z = 0;
	for (long i = 0; i < n; i++)
		Z += w->zrow[i];
	if (!(Z > 0))
		Z = DBL_MIN;
	c.theta2 = Z;
	ss_par_for(threads, n, attr_chunk, &c);
	if (Zout)
		*Zout = Z;
	return 0;
}

int tsne_gradient(const ss_csr *P, const float *Y, long n, double theta, double exag, int threads,
                  float *grad, double *Z, ss_err *e)
{
	gwork w;
	int rc = gwork_init(&w, n, theta, e);
	if (rc == 0)
		rc = gradient(&w, P, Y, n, theta, exag, threads, grad, Z, e);
	gwork_free(&w);
	return rc;
}

/* ------------------------------------------------------------------- KL */

typedef struct kl_ctx {
	const ss_csr *P;
	const float *Y;
	long n;
	double *row;
	double Z;
} kl_ctx;

static void zrow_chunk(void *c, long lo, long hi, int tid)
{
	kl_ctx *x = c;
	const float *Y = x->Y;
	for (long i = lo; i < hi; i++) {
		double z = 0;
		float px = Y[2 * i], py = Y[2 * i + 1];
		for (long j = 0; j < x->n; j++) {
			float dx = px - Y[2 * j], dy = py - Y[2 * j + 1];
			z += 1.0f / (1.0f + dx * dx + dy * dy);
		}
		x->row[i] = z - 1; /* j = i contributes 1 */
	}
}

static void klrow_chunk(void *c, long lo, long hi, int tid)
{
	kl_ctx *x = c;
	const ss_csr *P = x->P;
	const float *Y = x->Y;
	for (long i = lo; i < hi; i++) {
		double s = 0;
		for (long k = P->rowptr[i]; k < P->rowptr[i + 1]; k++) {
			int32_t j = P->col[k];
			double p = P->val[k];
			if (p <= 0)
				continue;
			double dx = (double)Y[2 * i] - Y[2 * (size_t)j];
			double dy = (double)Y[2 * i + 1] - Y[2 * (size_t)j + 1];
			double q = 1 / (1 + dx * dx + dy * dy) / x->Z;
			s += p * log(p / (q > DBL_MIN ? q : DBL_MIN));
		}
		x->row[i] = s;
	}
}

double tsne_kl(const ss_csr *P, const float *Y, long n, int threads, double Zest)
{
	double *row = malloc(n * sizeof *row);
	if (!row)
		return NAN;
	kl_ctx c = {P, Y, n, row, Zest};
	if (!(Zest > 0)) {
		ss_par_for(threads, n, zrow_chunk, &c);
		double Z = 0;
		for (long i = 0; i < n; i++)
			Z += row[i];
		c.Z = Z;
	}
	ss_par_for(threads, n, klrow_chunk, &c);
	double kl = 0;
	for (long i = 0; i < n; i++)
		kl += row[i];
	free(row);
	return kl;
}

/* ---------------------------------------------------------- optimisation */

int tsne_optimise(const ss_csr *P, const ss_tsne_params *p, float *Y, ss_tsne_info *info,
                  ss_err *e)
{
	long n = P->n;
	double theta = p->exact ? 0 : p->theta;
	double lr = p->learning_rate > 0 ? p->learning_rate : n / p->exaggeration / 4;
	if (p->learning_rate <= 0 && lr < 50)
		lr = 50;
	float *grad = ss_malloc(2 * (size_t)n, sizeof *grad, "gradient", e);
	float *upd = ss_calloc(2 * (size_t)n, sizeof *upd, "updates", e);
	float *gains = ss_malloc(2 * (size_t)n, sizeof *gains, "gains", e);
	gwork w;
	int rc = -1;
	if (!grad || !upd || !gains || gwork_init(&w, n, theta, e) < 0)
		goto done0;
	for (size_t i = 0; i < 2 * (size_t)n; i++)
		gains[i] = 1;
	for (long it = 0; it < p->max_iter; it++) {
		int early = it < p->exag_iter;
		double exag = early ? p->exaggeration : 1;
		float mom = (float)(early ? p->momentum_early : p->momentum_late);
		double Z;
		if (gradient(&w, P, Y, n, theta, exag, p->threads, grad, &Z, e) < 0)
			goto done;
		double mx = 0, my = 0;
		for (size_t i = 0; i < 2 * (size_t)n; i++) {
			float g = grad[i];
			if ((g > 0) != (upd[i] > 0))
				gains[i] += 0.2f;
			else
				gains[i] *= 0.8f;
			if (gains[i] < 0.01f)
				gains[i] = 0.01f;
			upd[i] = mom * upd[i] - (float)lr * gains[i] * g;
			Y[i] += upd[i];
		}
		for (long i = 0; i < n; i++) {
			mx += Y[2 * i];
			my += Y[2 * i + 1];
		}
		mx /= n;
		my /= n;
		for (long i = 0; i < n; i++) {
			Y[2 * i] -= (float)mx;
			Y[2 * i + 1] -= (float)my;
		}
		if (!isfinite(Y[0]) || !isfinite(Y[1])) {
			ss_err_set(e, "t-SNE diverged at iteration %ld (learning rate %g)", it + 1, lr);
			goto done;
		}
		if (p->progress && (it % 10 == 9 || it + 1 == p->max_iter))
			p->progress(p->progress_ctx, "optimise", it + 1, p->max_iter);
	}
	if (info) {
		info->iters = p->max_iter;
		info->learning_rate = lr;
	}
	rc = 0;
done:
	gwork_free(&w);
done0:
	free(grad);
	free(upd);
	free(gains);
	return rc;
}

/* ------------------------------------------------------------ affinities */

typedef struct dense_ctx {
	const float *X;
	long n, d;
	int32_t *idx;
	float *dist2;
} dense_ctx;

static void dense_chunk(void *c, long lo, long hi, int tid)
{
	dense_ctx *x = c;
	long k = x->n - 1;
	for (long i = lo; i < hi; i++) {
		long m = 0;
		for (long j = 0; j < x->n; j++) {
			if (j == i)
				continue;
			x->idx[i * k + m] = (int32_t)j;
			x->dist2[i * k + m] = (float)sqdist(x->X + i * x->d, x->X + j * x->d, x->d);
			m++;
		}
	}
}

int tsne_affinities(const float *X, long n, long d, const ss_tsne_params *p, ss_csr *P,
                    ss_tsne_info *info, ss_err *e)
{
	long k = p->exact ? n - 1 : (long)floor(3 * p->perplexity + 1);
	if (k > n - 1)
		k = n - 1;
	int32_t *idx = ss_malloc((size_t)n * k, sizeof *idx, "neighbour indices", e);
	float *d2 = ss_malloc((size_t)n * k, sizeof *d2, "neighbour distances", e);
	float *Pc = ss_malloc((size_t)n * k, sizeof *Pc, "conditional affinities", e);
	double *perp = ss_malloc(n, sizeof *perp, "perplexities", e);
	int rc = -1;
	if (!idx || !d2 || !Pc || !perp)
		goto done;
	double t0 = ss_now();
	if (p->exact) {
		dense_ctx c = {X, n, d, idx, d2};
		ss_par_for(p->threads, n, dense_chunk, &c);
	} else if (p->knn_method == SS_TSNE_KNN_BLAS || (p->knn_method == SS_TSNE_KNN_AUTO && d > 10)) {
		if (tsne_knn_blas(X, n, d, (int)k, p->threads, idx, d2, e) < 0)
			goto done;
	} else if (tsne_knn(X, n, d, (int)k, p->seed, p->threads, idx, d2, e) < 0) {
		goto done;
	}
	double t1 = ss_now();
	if (tsne_calibrate(d2, n, (int)k, p->perplexity, p->threads, Pc, perp, e) < 0)
		goto done;
	if (tsne_symmetrize(n, (int)k, idx, Pc, P, e) < 0)
		goto done;
	if (info) {
		info->t_knn = t1 - t0;
		info->t_affinity = ss_now() - t1;
		info->perp_min = info->perp_max = perp[0];
		for (long i = 1; i < n; i++) {
			info->perp_min = perp[i] < info->perp_min ? perp[i] : info->perp_min;
			info->perp_max = perp[i] > info->perp_max ? perp[i] : info->perp_max;
		}
	}
	rc = 0;
done:
	free(idx);
	free(d2);
	free(Pc);
	free(perp);
	return rc;
}

/* ------------------------------------------------------------------ run */

int tsne_run(const float *X, long n, long d, const ss_tsne_params *p, float *Y,
             ss_tsne_info *info, ss_err *e)
{
	ss_tsne_info dummy;
	if (!info)
		info = &dummy;
	memset(info, 0, sizeof *info);
	if (!(p->perplexity > 0))
		return ss_err_set(e, "perplexity %g: must be positive", p->perplexity);
	if ((double)n <= 3 * p->perplexity)
		return ss_err_set(e, "%ld points: too few for perplexity %g (need more than %g)", n,
		                  p->perplexity, 3 * p->perplexity);
	for (long i = 0; i < n; i++)
		for (long j = 0; j < d; j++)
			if (!isfinite(X[(size_t)i * d + j]))
				return ss_err_set(e, "row %ld: non-finite value in column %ld", i + 1, j + 1);
	double t0 = ss_now();
	int rc = -1;
	float *R = NULL;
	const float *Xin = X;
	long din = d;
	ss_pca pca = {0};
	ss_csr P = {0};
	int npc = p->pca_dims > 0 && p->pca_dims < d ? p->pca_dims : 0;
	if (npc > n)
		npc = (int)n;
	/* the PCA also provides the initial layout */
	int kfit = npc ? npc : (p->init == SS_TSNE_INIT_PCA ? 2 : 0);
	if (kfit > d)
		kfit = (int)d;
	info->pca_ratio = 1;
	if (kfit) {
		if (pca_fit(X, n, d, kfit, &pca, e) < 0)
			goto done;
		R = ss_malloc((size_t)n * kfit, sizeof *R, "PCA projection", e);
		if (!R || pca_project(&pca, X, n, R, e) < 0)
			goto done;
		if (npc) {
			Xin = R;
			din = npc;
			double s = 0;
			for (int i = 0; i < npc; i++)
				s += pca_ratio(&pca, i);
			info->pca_ratio = s;
		}
	}
	info->dims = (int)din;
	info->t_pca = ss_now() - t0;
	if (tsne_affinities(Xin, n, din, p, &P, info, e) < 0)
		goto done;
	if (p->init == SS_TSNE_INIT_PCA && kfit >= 2) {
		/* scikit-learn: the first two components, scaled to std 1e-4 in x */
		double m = 0, v = 0;
		for (long i = 0; i < n; i++)
			m += R[(size_t)i * kfit];
		m /= n;
		for (long i = 0; i < n; i++) {
			double t = R[(size_t)i * kfit] - m;
			v += t * t;
		}
		double sd = sqrt(v / n);
		double sc = sd > 0 ? 1e-4 / sd : 1;
		for (long i = 0; i < n; i++) {
			Y[2 * i] = (float)(R[(size_t)i * kfit] * sc);
			Y[2 * i + 1] = (float)(R[(size_t)i * kfit + 1] * sc);
		}
	} else {
		uint64_t s = p->seed;
		for (long i = 0; i < 2 * n; i++) {
			/* u1 from [0, 1) here, not (0, 1) as in ss_rng_gauss: each seed keeps its layout */
			double u1 = ss_rng_unif(&s), u2 = ss_rng_unif(&s);
			Y[i] = (float)(1e-4 * ss_box_muller(u1, u2));
		}
	}
	double t1 = ss_now();
	if (tsne_optimise(&P, p, Y, info, e) < 0)
		goto done;
	double t2 = ss_now();
	info->t_optimise = t2 - t1;
	if (n <= p->kl_exact_max || p->exact) {
		info->kl = tsne_kl(&P, Y, n, p->threads, 0);
		info->kl_exact = 1;
	} else {
		double Z;
		float *g = ss_malloc(2 * (size_t)n, sizeof *g, "gradient", e);
		if (!g || tsne_gradient(&P, Y, n, p->theta, 1, p->threads, g, &Z, e) < 0) {
			free(g);
			goto done;
		}
		free(g);
		info->kl = tsne_kl(&P, Y, n, p->threads, Z);
	}
	info->t_kl = ss_now() - t2;
	rc = 0;
done:
	free(R);
	pca_free(&pca);
	csr_free(&P);
	return rc;
}
