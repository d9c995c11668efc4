/* attention.c - blocked causal attention; see attention.h.
 *
 * Each work item is one query block of nb positions against one KV head:
 * R = g * nb rows (the g heads of the group stacked), keys klo..qe-1 taken
 * in tiles of kt keys so that a tile of scores (R x kt floats) stays in L2.
 * Per tile, flash-attention style with an online softmax:
 *   S = scale * Qg K^T, then per row m' = max(m, max of its visible
 *   scores), P~ = exp(S - m') in place (masked keys 0), l = l a + sum P~
 *   and O = O a + P~ V with a = exp(m - m'); the shift m' is kept per row
 *   and tile.
 * At the end O / l is the output and recv's column sums take the exact
 * probabilities A = P~ exp(m' - m) / l with the row's final max m and sum
 * l (every factor <= 1: nothing overflows).  The scores of the block are
 * kept tile by tile, rows kt floats apart (rows T floats apart put whole
 * tiles into a few cache sets), so they reach memory once and come back
 * once.  The two products are register-blocked AVX2 kernels (6 rows x 16
 * columns) fused with the scaling and the rescaling, on keys and values
 * packed once per call into panels of 16 (keys [16 keys][hd], values
 * [T][16 columns]) that every block shares; portable C does the same
 * without AVX2.  Tiles start at a multiple of 16 keys.  Calls with a few
 * queries (decoding, re-runs: fewer than PACK_MIN rows per block) skip the
 * packing and use two sgemm calls per block instead (block_few).  Calls
 * under a key selection or a measurement (attention.h) take block_sel: the
 * block's kept keys gathered and its windows in place, two sgemm calls for
 * the scores and two for the output, the exact softmax of each row over the
 * keys it sees. */
#include "engine/attention.h"
#include "engine/kernels.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#define KTILE 256   /* keys per tile: 32 x 7 rows x 256 floats = 224 KiB */
#define PACK_MIN 24   /* rows (queries x group) from which keys are packed */
#define MR 6        /* rows per kernel call */
#define NP 16       /* keys per packed panel */

typedef struct attn_thread {
	float *qg, *og;   /* [g * qblock, hd] */
	float *s;         /* [ntile, g * qblock, kt] P~ of the current block */
	float *sl;        /* [g * qblock, kt] the scores of one tile (in L2) */
	float *csum;      /* [g, maxT] */
	float *mx, *al;   /* [g * qblock] row max; rescale factor of the tile */
	float *mu;        /* [g * qblock, ntile] shifts */
	double *l;        /* [g * qblock] softmax denominators */
	double *acc;      /* [H, maxT] */
	/* selections (block_sel), grown by sel_buffers */
	float *gk, *gv;   /* [kcap, hd] gathered keys and values */
	float *ss;        /* [g * qblock, kcap + maxT] scores */
	float *gcs;       /* [g, kcap + maxT] column sums */
	double *cum;      /* [3, maxT + 1] a row's probabilities summed by class */
	double *lost;     /* [mcap * 3] */
} attn_thread;

struct ss_attn {
	long H, Hkv, g, hd, qdim, kvdim, maxT, qb, window, kt, ntile;
	long hdp, np;     /* hd rounded up to NP; key panels (maxT rounded up) */
	int nth;
	float scale;
	float softcap;    /* scores -> softcap tanh(scores / softcap); 0: none */
	attn_thread *th;
	float *kp;        /* [Hkv, np, hd, NP] keys: kp[h][j/16][d][j%16] */
	float *vp;        /* [Hkv, hdp / NP, np * NP, NP] values: [h][c/16][j][c%16] */
	/* the current run */
	float *q;
	const float *kc, *vc;
	long t0, n;
	double *recv_sum;
	long ld;
	const ss_attn_sel *sel;
	const ss_attn_meas *meas;
	long kcap;        /* kept keys the selection buffers hold (-1: none yet) */
	int mcap;         /* measured selections lost[] holds */
};

/* tiles of a block: its keys start up to NP - 1 early (at a panel) */
static long ntiles(long maxT, long kt)
{
	return (maxT + NP - 1 + kt - 1) / kt;
}

double attn_memory_estimate(const ss_config *c, long maxT, int nth, long qblock)
{
	double g = (double)(c->n_heads / c->n_kv_heads), rows = g * (double)qblock, hd = (double)c->head_dim;
	double hdp = (double)((c->head_dim + NP - 1) / NP * NP), tp = (double)((maxT + NP - 1) / NP * NP);
	double per = 4.0 * (rows * (hd + hdp) + rows * (double)((ntiles(maxT, KTILE) + 1) * KTILE) +
	                    g * (double)(maxT + NP) + rows * (2.0 + (double)ntiles(maxT, KTILE))) +
	             8.0 * (rows + (double)c->n_heads * (double)maxT);
	return per * (nth < 1 ? 1 : nth) + 4.0 * (double)c->n_kv_heads * tp * (hd + hdp);
}

static void thread_free(attn_thread *p)
{
	free(p->qg);
	free(p->og);
	free(p->s);
	free(p->sl);
	free(p->csum);
	free(p->mx);
	free(p->al);
	free(p->mu);
	free(p->l);
	free(p->acc);
	free(p->gk);
	free(p->gv);
	free(p->ss);
	free(p->gcs);
	free(p->cum);
	free(p->lost);
	memset(p, 0, sizeof *p);
}

static int thread_alloc(ss_attn *a, attn_thread *p, ss_err *e)
{
	size_t rows = (size_t)(a->g * a->qb);
	if (!(p->qg = ss_malloc(rows * (size_t)a->hd, 4, "attention queries", e)) ||
	    !(p->og = ss_malloc(rows * (size_t)a->hdp, 4, "attention output", e)) ||
	    !(p->s = ss_malloc_big(rows * (size_t)(a->ntile * a->kt), 4, "attention scores", e)) ||
	    !(p->sl = ss_malloc(rows * (size_t)a->kt, 4, "attention scores", e)) ||
	    !(p->csum = ss_malloc((size_t)(a->g * (a->maxT + NP)), 4, "attention sums", e)) ||
	    !(p->mx = ss_malloc(rows, 4, "attention sums", e)) ||
	    !(p->al = ss_malloc(rows, 4, "attention sums", e)) ||
	    !(p->mu = ss_malloc(rows * (size_t)a->ntile, 4, "attention sums", e)) ||
	    !(p->l = ss_malloc(rows, 8, "attention sums", e)) ||
	    !(p->acc = ss_malloc((size_t)(a->H * a->maxT), 8, "attention received", e)))
		return -1;
	return 0;
}

void attn_free(ss_attn *a)
{
	if (!a)
		return;
	for (int t = 0; a->th && t < a->nth; t++)
		thread_free(&a->th[t]);
	free(a->th);
	free(a->kp);
	free(a->vp);
	free(a);
}

int attn_create(ss_attn **out, const ss_config *c, long maxT, int nth, long qblock, ss_err *e)
{
	ss_attn *a = ss_calloc(1, sizeof *a, "attention", e);
	if (!a)
		return -1;
	a->H = c->n_heads;
	a->Hkv = c->n_kv_heads;
	a->g = a->H / a->Hkv;
	a->hd = c->head_dim;
	a->qdim = a->H * a->hd;
	a->kvdim = a->Hkv * a->hd;
	a->maxT = maxT;
	a->qb = qblock < maxT ? qblock : maxT;
	a->window = c->sliding_window;
	a->kt = KTILE;
	a->ntile = ntiles(maxT, a->kt);
	a->nth = nth < 1 ? 1 : nth;
	a->scale = (float)(c->attn_scale > 0 ? c->attn_scale : 1.0 / sqrt((double)a->hd));
	a->softcap = (float)c->attn_softcap;
	a->kcap = -1;
	a->hdp = (a->hd + NP - 1) / NP * NP;
	a->np = (maxT + NP - 1) / NP;
	a->th = ss_calloc((size_t)a->nth, sizeof *a->th, "attention", e);
	if (!a->th ||
	    !(a->kp = ss_malloc_big((size_t)(a->Hkv * a->np * a->hd * NP), 4, "attention keys", e)) ||
	    !(a->vp = ss_malloc_big((size_t)(a->Hkv * a->np * a->hdp * NP), 4, "attention values", e)))
		goto fail;
	for (int t = 0; t < a->nth; t++)
		if (thread_alloc(a, &a->th[t], e) < 0)
			goto fail;
	*out = a;
	return 0;
fail:
	attn_free(a);
	return -1;
}

void attn_set_layer(ss_attn *a, long window)
{
	a->window = window;
}

int attn_set_key_tile(ss_attn *a, long kt, ss_err *e)
{
	if (kt < NP || kt % NP)
		return ss_err_set(e, "attention key tile %ld: must be a positive multiple of %d", kt, NP);
	a->kt = kt;
	a->ntile = ntiles(a->maxT, kt);
	a->kcap = -1;
	a->mcap = 0;
	for (int t = 0; t < a->nth; t++) {
		thread_free(&a->th[t]);
		if (thread_alloc(a, &a->th[t], e) < 0)
			return -1;
	}
	return 0;
}

/* ---- kernels ----------------------------------------------------------- */

/* keys and values of panels [p0, p1) of every KV head into a->kp, a->vp
 * (zeros beyond the keys given and beyond hd) */
static void pack_task(void *ctx, int tid, int nth)
{
	ss_attn *a = ctx;
	long keys = a->t0 + a->n, hd = a->hd, p0 = 0, lo, hi;
	if (a->window && a->t0 - a->window + 1 > 0)   /* the first block's first key */
		p0 = (a->t0 - a->window + 1) / NP;
	long np = (keys + NP - 1) / NP - p0;
	pool_share(a->Hkv * np, 1, tid, nth, &lo, &hi);
	for (long it = lo; it < hi; it++) {
		long h = it / np, pn = p0 + it % np;
		float *kd = a->kp + (h * a->np + pn) * hd * NP;
		for (long i = 0; i < NP; i++) {
			long j = pn * NP + i;
			const float *k = a->kc + j * a->kvdim + h * hd, *v = a->vc + j * a->kvdim + h * hd;
			for (long d = 0; d < hd; d++)
				kd[d * NP + i] = j < keys ? k[d] : 0.0f;
			for (long c = 0; c < a->hdp; c++)
				a->vp[((h * (a->hdp / NP) + c / NP) * a->np * NP + j) * NP + c % NP] =
				        j < keys && c < hd ? v[c] : 0.0f;
		}
	}
}

#ifdef __AVX2__
/* s[i][0..15] = scale * sum_d q[i][d] kp[d][0..15] for rows i < nr */
static inline __attribute__((always_inline)) void qk_avx(const int nr, const float *q, long hd,
                                                         const float *kp, float *s, long lds, float scale)
{
	__m256 c0[MR], c1[MR];
#pragma GCC unroll 6
	for (int i = 0; i < nr; i++)
		c0[i] = c1[i] = _mm256_setzero_ps();
#pragma GCC unroll 4   /* not unrolled, the loop ran at 2/3 of the speed */
	for (long d = 0; d < hd; d++) {
		__m256 b0 = _mm256_loadu_ps(kp + d * NP), b1 = _mm256_loadu_ps(kp + d * NP + 8);
#pragma GCC unroll 6
		for (int i = 0; i < nr; i++) {
			__m256 x = _mm256_broadcast_ss(q + i * hd + d);
			c0[i] = _mm256_fmadd_ps(x, b0, c0[i]);
			c1[i] = _mm256_fmadd_ps(x, b1, c1[i]);
		}
	}
	__m256 sc = _mm256_set1_ps(scale);
#pragma GCC unroll 6
	for (int i = 0; i < nr; i++) {
		_mm256_storeu_ps(s + i * lds, _mm256_mul_ps(c0[i], sc));
		_mm256_storeu_ps(s + i * lds + 8, _mm256_mul_ps(c1[i], sc));
	}
}

/* o[i][0..15] = al[i] o[i][..] + sum_{j<w} p[i][j] v[j][0..15] for rows i < nr */
static inline __attribute__((always_inline)) void pv_avx(const int nr, const float *p, long ldp, const float *v,
                                                         long w, float *o, long ldo, const float *al)
{
	__m256 c0[MR], c1[MR];
#pragma GCC unroll 6
	for (int i = 0; i < nr; i++) {
		__m256 f = _mm256_set1_ps(al[i]);
		c0[i] = _mm256_mul_ps(_mm256_loadu_ps(o + i * ldo), f);
		c1[i] = _mm256_mul_ps(_mm256_loadu_ps(o + i * ldo + 8), f);
	}
#pragma GCC unroll 4
	for (long j = 0; j < w; j++) {
		__m256 b0 = _mm256_loadu_ps(v + j * NP), b1 = _mm256_loadu_ps(v + j * NP + 8);
#pragma GCC unroll 6
		for (int i = 0; i < nr; i++) {
			__m256 x = _mm256_broadcast_ss(p + i * ldp + j);
			c0[i] = _mm256_fmadd_ps(x, b0, c0[i]);
			c1[i] = _mm256_fmadd_ps(x, b1, c1[i]);
		}
	}
#pragma GCC unroll 6
	for (int i = 0; i < nr; i++) {
		_mm256_storeu_ps(o + i * ldo, c0[i]);
		_mm256_storeu_ps(o + i * ldo + 8, c1[i]);
	}
}
#endif

/* the same in portable C, any number of rows and columns */
static void qk_c(int nr, const float *q, long hd, const float *kp, float *s, long lds, float scale)
{
	for (int i = 0; i < nr; i++)
		for (int c = 0; c < NP; c++) {
			float acc = 0;
			for (long d = 0; d < hd; d++)
				acc += q[i * hd + d] * kp[d * NP + c];
			s[i * lds + c] = acc * scale;
		}
}

static void pv_c(int nr, const float *p, long ldp, const float *v, long w, float *o, long ldo, const float *al)
{
	for (int i = 0; i < nr; i++)
		for (int c = 0; c < NP; c++) {
			float acc = o[i * ldo + c] * al[i];
			for (long j = 0; j < w; j++)
				acc += p[i * ldp + j] * v[j * NP + c];
			o[i * ldo + c] = acc;
		}
}

/* S rows x0.. (nr of them) against one panel of NP keys */
static void qk(int nr, const float *q, long hd, const float *kp, float *s, long lds, float scale)
{
#ifdef __AVX2__
	switch (nr) {
	case 6: qk_avx(6, q, hd, kp, s, lds, scale); return;
	case 5: qk_avx(5, q, hd, kp, s, lds, scale); return;
	case 4: qk_avx(4, q, hd, kp, s, lds, scale); return;
	case 3: qk_avx(3, q, hd, kp, s, lds, scale); return;
	case 2: qk_avx(2, q, hd, kp, s, lds, scale); return;
	case 1: qk_avx(1, q, hd, kp, s, lds, scale); return;
	}
#endif
	qk_c(nr, q, hd, kp, s, lds, scale);
}

/* O rows (nr of them) = O al + P V over one panel of NP columns */
static void pv(int nr, const float *p, long ldp, const float *v, long w, float *o, long ldo, const float *al)
{
#ifdef __AVX2__
	switch (nr) {
	case 6: pv_avx(6, p, ldp, v, w, o, ldo, al); return;
	case 5: pv_avx(5, p, ldp, v, w, o, ldo, al); return;
	case 4: pv_avx(4, p, ldp, v, w, o, ldo, al); return;
	case 3: pv_avx(3, p, ldp, v, w, o, ldo, al); return;
	case 2: pv_avx(2, p, ldp, v, w, o, ldo, al); return;
	case 1: pv_avx(1, p, ldp, v, w, o, ldo, al); return;
	}
#endif
	pv_c(nr, p, ldp, v, w, o, ldo, al);
}

/* ---- one work item ----------------------------------------------------- */

/* the queries of rows r0..r0+nb-1 for the g heads of KV head kvh, stacked
 * head by head into p->qg */
static void gather_q(const ss_attn *a, attn_thread *p, long r0, long nb, long kvh)
{
	long g = a->g, hd = a->hd;
	for (long r = 0; r < g; r++)
		for (long i = 0; i < nb; i++)
			memcpy(p->qg + (r * nb + i) * hd, a->q + (r0 + i) * a->qdim + (kvh * g + r) * hd,
			       (size_t)hd * 4);
}

/* the block's column sums p->csum [g, nk] (keys k0..k0+nk-1) into p->acc */
static void add_csum(const ss_attn *a, attn_thread *p, long kvh, long k0, long nk)
{
	for (long r = 0; r < a->g; r++) {
		double *acc = p->acc + (kvh * a->g + r) * a->maxT + k0;
		const float *cs = p->csum + r * nk;
		for (long j = 0; j < nk; j++)
			acc[j] += cs[j];
	}
}

/* the output rows p->og (ldo floats apart) times scale[x] back into q */
static void put_out(const ss_attn *a, const attn_thread *p, long r0, long nb, long kvh, long ldo,
                    const float *scale)
{
	long g = a->g, hd = a->hd;
	for (long r = 0; r < g; r++)
		for (long i = 0; i < nb; i++) {
			long x = r * nb + i;
			float *o = a->q + (r0 + i) * a->qdim + (kvh * g + r) * hd;
			const float *src = p->og + x * ldo;
			for (long k = 0; k < hd; k++)
				o[k] = src[k] * scale[x];
		}
}

/* keys 0..top-1 of a tile (from key k0) seen by some row of x0..x0+nr-1 */
static long tile_top(long x0, int nr, long nb, long qs, long k0, long w)
{
	long top = 0;
	for (int i = 0; i < nr; i++) {
		long v = qs + (x0 + i) % nb + 1 - k0;
		top = v > top ? v : top;
	}
	return top < w ? top : w;
}

/* One query block (rows r0..r1-1 of q) against KV head kvh. */
static void block(ss_attn *a, attn_thread *p, long r0, long r1, long kvh)
{
	long g = a->g, hd = a->hd, hdp = a->hdp, nb = r1 - r0, R = g * nb, kt = a->kt;
	long qs = a->t0 + r0, qe = a->t0 + r1;          /* absolute positions */
	long klo = a->window && qs - a->window + 1 > 0 ? qs - a->window + 1 : 0;
	long kb = klo / NP * NP, nk = qe - kb;          /* keys kb..qe-1, tiles from kb */
	long nt = (nk + kt - 1) / kt;
	const float *kp = a->kp + (kvh * a->np + kb / NP) * hd * NP;
	const float *vp = a->vp + (kvh * (hdp / NP) * a->np * NP + kb) * NP;
	gather_q(a, p, r0, nb, kvh);
	for (long x = 0; x < R; x++) {
		p->mx[x] = -INFINITY;
		p->l[x] = 0;
	}
	memset(p->og, 0, sizeof(float) * (size_t)(R * hdp));
	for (long t = 0; t < nt; t++) {
		long c0 = t * kt, c1 = c0 + kt < nk ? c0 + kt : nk, w = c1 - c0;
		float *st = p->s + t * R * kt, *sl = p->sl;
		/* S = scale Qg K^T into the L2 tile (stores into the block's
		 * buffer itself waited on memory at T >= 8192), four panels of keys (16 KiB at hd 64) against
		 * each group of rows in turn; the keys after a group's last
		 * position are masked for all of it: not computed */
		for (long j0 = 0; j0 < w; j0 += 4 * NP)
			for (long x0 = 0; x0 < R; x0 += MR) {
				int nr = R - x0 < MR ? (int)(R - x0) : MR;
				long top = tile_top(x0, nr, nb, qs, kb + c0, w);
				for (long j = j0; j < j0 + 4 * NP && j < top; j += NP)
					qk(nr, p->qg + x0 * hd, hd, kp + (c0 + j) * hd, sl + x0 * kt + j, kt, a->scale);
			}
		/* the online softmax, P~ into the block's buffer */
		for (long x = 0; x < R; x++) {
			float *row = st + x * kt, *sr = sl + x * kt;
			long pos = qs + x % nb;
			/* visible keys of this row within the tile, relative to the tile */
			long vlo = (a->window && pos - a->window + 1 > klo ? pos - a->window + 1 : klo) - kb - c0;
			long vhi = pos + 1 - kb - c0;
			vlo = vlo < 0 ? 0 : vlo;
			vhi = vhi > w ? w : vhi;
			if (vhi <= vlo) {
				memset(row, 0, sizeof(float) * (size_t)w);
				p->mu[x * a->ntile + t] = -INFINITY;
				p->al[x] = 1;
				continue;
			}
			if (vlo > 0)
				memset(row, 0, sizeof(float) * (size_t)vlo);
			if (vhi < w)
				memset(row + vhi, 0, sizeof(float) * (size_t)(w - vhi));
			if (a->softcap > 0)
				k_softcap(sr + vlo, vhi - vlo, a->softcap);
			float m = k_max(sr + vlo, vhi - vlo), mo = p->mx[x];
			m = m > mo ? m : mo;
			double sum = k_exp_shift_to(row + vlo, sr + vlo, vhi - vlo, m);
			float al = mo == -INFINITY ? 0.0f : expf(mo - m);
			p->l[x] = p->l[x] * (double)al + sum;
			p->al[x] = al;
			p->mx[x] = m;
			p->mu[x * a->ntile + t] = m;
		}
		/* O = O a + P~ V, a panel of 16 value columns (16 KiB) against each
		 * group of rows in turn, over the keys some row of the group sees */
		for (long c = 0; c < hdp; c += NP)
			for (long x0 = 0; x0 < R; x0 += MR) {
				int nr = R - x0 < MR ? (int)(R - x0) : MR;
				long top = tile_top(x0, nr, nb, qs, kb + c0, w);
				pv(nr, st + x0 * kt, kt, vp + (c * a->np + c0) * NP, top, p->og + x0 * hdp + c, hdp,
				   p->al + x0);
			}
	}
	/* the output: O / l */
	for (long x = 0; x < R; x++)
		p->al[x] = (float)(1.0 / p->l[x]);
	put_out(a, p, r0, nb, kvh, hdp, p->al);
	if (!a->recv_sum)
		return;
	/* recv: column sums of the exact probabilities, float over the block */
	memset(p->csum, 0, sizeof(float) * (size_t)(g * nk));
	for (long t = 0; t < nt; t++) {
		long c0 = t * kt, c1 = c0 + kt < nk ? c0 + kt : nk, w = c1 - c0;
		for (long x = 0; x < R; x++) {
			float mu = p->mu[x * a->ntile + t];
			if (mu == -INFINITY)
				continue;
			float f = (float)((double)expf(mu - p->mx[x]) / p->l[x]);
			k_axpy(p->csum + (x / nb) * nk + c0, p->s + (t * R + x) * kt, w, f);
		}
	}
	add_csum(a, p, kvh, kb, nk);
}

/* A few queries (decoding, re-runs): packing all the keys would cost more
 * than the products, so the block's rows (rows r0..r1-1 of q) against KV
 * head kvh go through two sgemm calls over the keys in place, with the
 * same exact softmax (max, exp, masked keys 0) and column sums. */
static void block_few(ss_attn *a, attn_thread *p, long r0, long r1, long kvh)
{
	long g = a->g, hd = a->hd, nb = r1 - r0, R = g * nb;
	long qs = a->t0 + r0, qe = a->t0 + r1;
	long klo = a->window && qs - a->window + 1 > 0 ? qs - a->window + 1 : 0, nk = qe - klo;
	gather_q(a, p, r0, nb, kvh);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)R, (int)nk, (int)hd, a->scale, p->qg, (int)hd,
	            a->kc + klo * a->kvdim + kvh * hd, (int)a->kvdim, 0.0f, p->s, (int)nk);
	if (a->recv_sum)
		memset(p->csum, 0, sizeof(float) * (size_t)(g * nk));
	for (long x = 0; x < R; x++) {
		float *row = p->s + x * nk;
		long pos = qs + x % nb;
		long jlo = a->window && pos - a->window + 1 > klo ? pos - a->window + 1 : klo, jhi = pos + 1;
		float *v = row + (jlo - klo);
		if (a->softcap > 0)
			k_softcap(v, jhi - jlo, a->softcap);
		float mx = k_max(v, jhi - jlo);
		float inv = (float)(1.0 / k_exp_shift_to(v, v, jhi - jlo, mx));
		p->mx[x] = inv;
		memset(row, 0, sizeof(float) * (size_t)(jlo - klo));
		memset(row + (jhi - klo), 0, sizeof(float) * (size_t)(qe - jhi));
		if (a->recv_sum)
			k_axpy(p->csum + (x / nb) * nk + (jlo - klo), v, jhi - jlo, inv);
	}
	if (a->recv_sum)
		add_csum(a, p, kvh, klo, nk);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)R, (int)hd, (int)nk, 1.0f, p->s, (int)nk,
	            a->vc + klo * a->kvdim + kvh * hd, (int)a->kvdim, 0.0f, p->og, (int)hd);
	put_out(a, p, r0, nb, kvh, hd, p->mx);
}

/* The probabilities of one unselected row (p over keys 0..pos, row[j] *
 * inv) that each measured selection hides, by key class, into p->lost.
 * Hidden keys of selection z: those below lo but the first nk kept. */
static void measure_row(const ss_attn *a, attn_thread *p, const float *row, float inv, long pos, long r)
{
	const ss_attn_meas *m = a->meas;
	double *cum = p->cum, c[3] = {0, 0, 0};
	long M = a->maxT + 1;
	for (long j = 0; j <= pos; j++) {
		cum[j] = c[0];
		cum[M + j] = c[1];
		cum[2 * M + j] = c[2];
		c[m->cls[j]] += (double)row[j] * (double)inv;
	}
	for (int s = 0; s < m->n; s++) {
		const ss_attn_sel *z = &m->sel[s];
		long lo = z->lo[r];
		if (lo == 0)
			continue;
		double l[3] = {cum[lo], cum[M + lo], cum[2 * M + lo]};
		for (long e = 0; e < z->nk[r]; e++) {
			long j = z->kept[e];
			l[m->cls[j]] -= (double)row[j] * (double)inv;
		}
		for (int k = 0; k < 3; k++)   /* a few ulps below 0 when nothing is hidden */
			p->lost[s * 3 + k] += l[k] > 0 ? l[k] : 0.0;
	}
}

/* One query block (rows r0..r1-1 of q) against KV head kvh under a->sel
 * (NULL: every key): the longest kept prefix any row sees gathered (ng
 * keys), then the keys clo..qe-1 of the windows in place. */
static void block_sel(ss_attn *a, attn_thread *p, long r0, long r1, long kvh)
{
	const ss_attn_sel *sel = a->sel;
	long g = a->g, hd = a->hd, nb = r1 - r0, R = g * nb, kvd = a->kvdim;
	long qs = a->t0 + r0, qe = a->t0 + r1, ng = 0, clo = qs;
	for (long r = r0; r < r1; r++) {
		long lo = sel ? sel->lo[r] : 0, nk = sel ? sel->nk[r] : 0;
		ng = nk > ng ? nk : ng;
		clo = lo < clo ? lo : clo;
	}
	long nc = qe - clo, ld = ng + nc;
	const float *kc = a->kc + kvh * hd, *vc = a->vc + kvh * hd;
	for (long x = 0; x < ng; x++) {
		memcpy(p->gk + x * hd, kc + sel->kept[x] * kvd, sizeof(float) * (size_t)hd);
		memcpy(p->gv + x * hd, vc + sel->kept[x] * kvd, sizeof(float) * (size_t)hd);
	}
	gather_q(a, p, r0, nb, kvh);
	float *s = p->ss;
	if (ng)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)R, (int)ng, (int)hd, a->scale, p->qg,
		            (int)hd, p->gk, (int)hd, 0.0f, s, (int)ld);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)R, (int)nc, (int)hd, a->scale, p->qg, (int)hd,
	            kc + clo * kvd, (int)kvd, 0.0f, s + ng, (int)ld);
	if (a->recv_sum)
		memset(p->gcs, 0, sizeof(float) * (size_t)(g * ld));
	for (long x = 0; x < R; x++) {
		float *row = s + x * ld;
		long r = r0 + x % nb, pos = qs + x % nb;
		long lo = sel ? sel->lo[r] : 0, nk = sel ? sel->nk[r] : 0, w0 = ng + lo - clo, nw = pos - lo + 1;
		if (a->softcap > 0) {   /* Gemma 2 */
			k_softcap(row + w0, nw, a->softcap);
			k_softcap(row, nk, a->softcap);
		}
		float m = k_max(row + w0, nw);
		if (nk) {
			float mk = k_max(row, nk);
			m = mk > m ? mk : m;
		}
		double sum = k_exp_shift_to(row + w0, row + w0, nw, m) + (nk ? k_exp_shift_to(row, row, nk, m) : 0.0);
		memset(row + nk, 0, sizeof(float) * (size_t)(w0 - nk));
		memset(row + w0 + nw, 0, sizeof(float) * (size_t)(ld - w0 - nw));
		float inv = (float)(1.0 / sum);
		p->mx[x] = inv;
		if (a->recv_sum) {
			float *cs = p->gcs + (x / nb) * ld;
			k_axpy(cs, row, nk, inv);
			k_axpy(cs + w0, row + w0, nw, inv);
		}
		if (a->meas)
			measure_row(a, p, row, inv, pos, r);
	}
	if (a->recv_sum)
		for (long h = 0; h < g; h++) {
			double *acc = p->acc + (kvh * g + h) * a->maxT;
			const float *cs = p->gcs + h * ld;
			for (long x = 0; x < ng; x++)
				acc[sel->kept[x]] += cs[x];
			for (long j = 0; j < nc; j++)
				acc[clo + j] += cs[ng + j];
		}
	if (ng)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)R, (int)hd, (int)ng, 1.0f, s, (int)ld,
		            p->gv, (int)hd, 0.0f, p->og, (int)hd);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)R, (int)hd, (int)nc, 1.0f, s + ng, (int)ld,
	            vc + clo * kvd, (int)kvd, ng ? 1.0f : 0.0f, p->og, (int)hd);
	put_out(a, p, r0, nb, kvh, hd, p->mx);
}

static int packed(const ss_attn *a)
{
	return a->g * (a->n < a->qb ? a->n : a->qb) >= PACK_MIN;
}

static void attn_task(void *ctx, int tid, int nth)
{
	ss_attn *a = ctx;
	attn_thread *p = &a->th[tid];
	long keys = a->t0 + a->n;
	if (a->recv_sum)
		for (long h = 0; h < a->H; h++)
			memset(p->acc + h * a->maxT, 0, sizeof(double) * (size_t)keys);
	if (a->meas)
		memset(p->lost, 0, sizeof(double) * 3 * (size_t)a->meas->n);
	long nqb = (a->n + a->qb - 1) / a->qb, items = nqb * a->Hkv;
	/* static interleaving: deterministic, and balanced over the causal
	 * triangle because block costs grow with qb for every thread alike */
	for (long it = tid; it < items; it += nth) {
		long qb = it / a->Hkv, kvh = it % a->Hkv;
		long r0 = qb * a->qb, r1 = r0 + a->qb < a->n ? r0 + a->qb : a->n;
		if (a->sel || a->meas)
			block_sel(a, p, r0, r1, kvh);
		else if (packed(a))
			block(a, p, r0, r1, kvh);
		else
			block_few(a, p, r0, r1, kvh);
	}
}

static void reduce_task(void *ctx, int tid, int nth)
{
	ss_attn *a = ctx;
	long keys = a->t0 + a->n, lo, hi;
	pool_share(a->H * keys, 64, tid, nth, &lo, &hi);
	for (long x = lo; x < hi; x++) {
		long h = x / keys, j = x % keys;
		double s = 0;
		for (int t = 0; t < a->nth; t++)
			s += a->th[t].acc[h * a->maxT + j];
		a->recv_sum[h * a->ld + j] += s;
	}
}

/* the selection buffers of every thread, for kept lists of n_kept keys and
 * n_meas measured selections */
static int sel_buffers(ss_attn *a, long n_kept, int n_meas, ss_err *e)
{
	if (n_kept > a->kcap) {
		long kc = n_kept > 2 * a->kcap ? n_kept : 2 * a->kcap, w = kc + a->maxT;
		for (int t = 0; t < a->nth; t++) {
			attn_thread *p = &a->th[t];
			free(p->gk);
			free(p->gv);
			free(p->ss);
			free(p->gcs);
			p->gk = p->gv = p->ss = p->gcs = NULL;
			if (!(p->gk = ss_malloc((size_t)(kc ? kc : 1) * (size_t)a->hd, 4, "kept keys", e)) ||
			    !(p->gv = ss_malloc((size_t)(kc ? kc : 1) * (size_t)a->hd, 4, "kept values", e)) ||
			    !(p->ss = ss_malloc_big((size_t)(a->g * a->qb) * (size_t)w, 4, "attention scores", e)) ||
			    !(p->gcs = ss_malloc((size_t)(a->g * w), 4, "attention sums", e))) {
				a->kcap = -1;
				return -1;
			}
		}
		a->kcap = kc;
	}
	for (int t = 0; t < a->nth && n_meas > 0; t++) {
		attn_thread *p = &a->th[t];
		if (!p->cum && !(p->cum = ss_malloc(3 * (size_t)(a->maxT + 1), 8, "attention measures", e)))
			return -1;
		if (n_meas > a->mcap) {
			free(p->lost);
			if (!(p->lost = ss_malloc(3 * (size_t)n_meas, 8, "attention measures", e)))
				return -1;
		}
	}
	if (n_meas > a->mcap)
		a->mcap = n_meas;
	return 0;
}

/* a selection that breaks its contract (attention.h) is refused */
static int sel_check(const ss_attn_sel *z, long t0, long n, ss_err *e)
{
	for (long r = 0; r < n; r++) {
		long i = t0 + r, lo = z->lo[r], nk = z->nk[r];
		if (lo < 0 || lo > i || nk < 0 || nk > z->n_kept || (nk && z->kept[nk - 1] >= lo))
			return ss_err_set(e, "attention: key selection of query %ld: window from %ld, %ld kept "
			                  "keys of %ld", i, lo, nk, z->n_kept);
	}
	for (long x = 1; x < z->n_kept; x++)
		if (z->kept[x] <= z->kept[x - 1] || z->kept[x - 1] < 0)
			return ss_err_set(e, "attention: kept keys not ascending at entry %ld", x);
	return 0;
}

int attn_run_sel(ss_attn *a, ss_pool *pool, float *q, long t0, long n, const float *kc,
                 const float *vc, const ss_attn_sel *sel, const ss_attn_meas *meas,
                 double *recv_sum, long ld, ss_err *e)
{
	if (t0 + n > a->maxT)
		return ss_err_set(e, "attention over %ld positions, prepared for %ld", t0 + n, a->maxT);
	if (pool_size(pool) != a->nth)
		return ss_err_set(e, "attention prepared for %d threads, called with %d", a->nth, pool_size(pool));
	if (sel && meas)
		return ss_err_set(e, "attention: a measurement needs an unselected call");
	if (sel && sel_check(sel, t0, n, e) < 0)
		return -1;
	for (int s = 0; meas && s < meas->n; s++)
		if (sel_check(&meas->sel[s], t0, n, e) < 0)
			return -1;
	if ((sel || meas) && sel_buffers(a, sel ? sel->n_kept : 0, meas ? meas->n : 0, e) < 0)
		return -1;
	a->q = q;
	a->kc = kc;
	a->vc = vc;
	a->t0 = t0;
	a->n = n;
	a->recv_sum = recv_sum;
	a->ld = ld;
	a->sel = sel;
	a->meas = meas;
	if (!sel && !meas && packed(a))
		pool_run(pool, pack_task, a);
	pool_run(pool, attn_task, a);
	if (recv_sum)
		pool_run(pool, reduce_task, a);
	for (int s = 0; meas && s < meas->n; s++)
		for (int k = 0; k < 3; k++)
			for (int t = 0; t < a->nth; t++)
				meas->lost[s * 3 + k] += a->th[t].lost[s * 3 + k];
	a->sel = NULL;
	a->meas = NULL;
	return 0;
}

int attn_run(ss_attn *a, ss_pool *pool, float *q, long t0, long n, const float *kc,
             const float *vc, double *recv_sum, long ld, ss_err *e)
{
	return attn_run_sel(a, pool, q, t0, n, kc, vc, NULL, NULL, recv_sum, ld, e);
}
