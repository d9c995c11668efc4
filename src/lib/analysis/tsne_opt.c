/* tsne_opt.c - t-SNE's optimiser: the gradient (Barnes-Hut or exact
 * repulsion, attraction along P), the KL divergence and the descent with
 * momentum and gains; see tsne.h for the formulas. */
#include "analysis/tsne_opt.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/quadtree.h"
#include "util/par.h"

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
