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
 * once.  The two products are register-blocked kernels (attn_kern_body.h:
 * AVX-512 6 rows x 32 columns, AVX2 6 x 16, portable C; chosen at run
 * time, util/cpu.h) fused with the scaling and the rescaling, on keys and
 * values packed once per call into panels of 16 (keys [16 keys][hd],
 * values [T][16 columns]) that every block shares.  Tiles start at a
 * multiple of 16 keys.  Calls with a few queries (decoding, re-runs: fewer than PACK_MIN rows per block) skip the
 * packing and use two sgemm calls per block instead (block_few).  Calls
 * under a key selection or a measurement (attention.h) take block_sel: the
 * block's kept keys gathered and its windows in place, two sgemm calls for
 * the scores and two for the output, the exact softmax of each row over the
 * keys it sees.
 * In the bf16 compute mode (attn_set_compute) the packed tiles take bf16
 * operands: keys and values packed in bf16 pairs (attn_impl.h: kb, vb),
 * the block's queries and each tile's P~ rounded to bf16, products summed
 * in f32 by vdpbf16ps or its emulation (attn_kern16_body.h), or by AMX's
 * tdpbf16ps on the same packings (attn_kern_amx.c: 16 rows a call, the
 * buffers padded for it, a->amx); the online softmax, l and recv are
 * those of the f32 P~, as in f32, and the key tiles the same. */
#include "engine/attention.h"
#include "engine/attn_impl.h"

#include "util/cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


/* tiles of a block: its keys start up to NP - 1 early (at a panel) */
static long ntiles(long maxT, long kt)
{
	return (maxT + NP - 1 + kt - 1) / kt;
}

/* thread_alloc's and attn_set_compute's buffers, the bf16 mode's in their
 * largest (AMX) layout whatever the mode: the caller (fwd_memory_estimate)
 * does not say which, and they are half the f32 packing's size */
double attn_memory_estimate(const ss_config *c, long maxT, int nth, long qblock)
{
	double g = (double)(c->n_heads / c->n_kv_heads), rows = g * (double)qblock, hd = (double)c->head_dim;
	double r16 = (double)(((long)rows + 15) / 16 * 16), nt = (double)ntiles(maxT, KTILE);
	double hdp = (double)((c->head_dim + NP - 1) / NP * NP), tp = (double)((maxT + NP - 1) / NP * NP);
	double hde = (double)((c->head_dim + 31) / 32 * 32), kv = (double)c->n_kv_heads;
	double per = 4.0 * (rows * hd + r16 * hdp + rows * nt * KTILE + r16 * KTILE + g * (double)(maxT + NP) +
	                    rows * (2.0 + nt)) +
	             8.0 * (rows + (double)c->n_heads * (double)maxT) +
	             2.0 * r16 * (hde + (double)((KTILE + 31) / 32 * 32));   /* qb, pb */
	double shared = 4.0 * kv * tp * (hd + hdp) + 2.0 * kv * (tp + 2 * NP) * (hde + hdp);   /* kp vp, kb vb */
	return per * (nth < 1 ? 1 : nth) + shared;
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
	free(p->qb);
	free(p->pb);
	memset(p, 0, sizeof *p);
}

static int thread_alloc(ss_attn *a, attn_thread *p, ss_err *e)
{
	size_t rows = (size_t)(a->g * a->qb), r16 = (rows + 15) / 16 * 16;   /* og, sl: room for AMX's 16 */
	if (!(p->qg = ss_malloc(rows * (size_t)a->hd, 4, "attention queries", e)) ||
	    !(p->og = ss_calloc(r16 * (size_t)a->hdp, 4, "attention output", e)) ||
	    !(p->s = ss_malloc_big(rows * (size_t)(a->ntile * a->kt), 4, "attention scores", e)) ||
	    !(p->sl = ss_calloc(r16 * (size_t)a->kt, 4, "attention scores", e)) ||
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
	free(a->kb);
	free(a->vb);
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
	a->window = c->sliding_window;
	a->kt = KTILE;
	/* the test hook (attention.h): the reference tests choose the geometry
	 * their bf16 references tile by */
	const char *geo = getenv("SINKSCOPE_ATTN_TILE");
	if (geo) {
		char *end = NULL;
		long nb = strtol(geo, &end, 10), kt = *end == ',' ? strtol(end + 1, &end, 10) : 0;
		if (*end || nb < 1 || kt < NP || kt % NP || kt > 1L << 20) {
			free(a);
			return ss_err_set(e, "SINKSCOPE_ATTN_TILE '%s': expected QBLOCK,KTILE (a key tile a multiple of %d)",
			                  geo, NP);
		}
		qblock = nb;
		a->kt = kt;
	}
	a->qb = qblock < maxT ? qblock : maxT;
	a->ntile = ntiles(maxT, a->kt);
	a->nth = nth < 1 ? 1 : nth;
	a->scale = (float)(c->attn_scale > 0 ? c->attn_scale : 1.0 / sqrt((double)a->hd));
	a->softcap = (float)c->attn_softcap;
	a->kcap = -1;
	a->hdp = (a->hd + NP - 1) / NP * NP;
	a->hde = (a->hd + 1) / 2 * 2;
	a->np = (maxT + NP - 1) / NP;
	a->npb = a->np;
	a->ldpb = a->kt;
	a->rpad = a->g * a->qb;
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

/* the bf16 buffers' shapes (attn_impl.h: hde, npb, ldpb, rpad) */
static void bf16_layout(ss_attn *a, int amx)
{
	long r = a->g * a->qb;
	a->amx = amx;
	a->hde = amx ? (a->hd + 31) / 32 * 32 : (a->hd + 1) / 2 * 2;
	a->npb = amx ? a->np + 2 : a->np;
	a->ldpb = amx ? (a->kt + 31) / 32 * 32 : a->kt;
	a->rpad = amx ? (r + 15) / 16 * 16 : r;
}

int attn_set_compute(ss_attn *a, ss_compute mode, ss_err *e)
{
	if (mode == SS_COMPUTE_BF16 && !a->kb) {
		/* the layout of the level in use: AMX's tiles read 32 dimensions,
		 * 32 keys and 16 rows at a time (attn_kern_amx.c) */
		bf16_layout(a, ss_cpu_isa() >= SS_ISA_AMX);
		size_t rows = (size_t)a->rpad, nkb = (size_t)(a->Hkv * a->npb * a->hde * NP);
		size_t nvb = (size_t)(a->Hkv * a->npb * a->hdp * NP);
		if (!(a->kb = ss_malloc_big(nkb, 2, "attention keys (bf16)", e)) ||
		    !(a->vb = ss_malloc_big(nvb, 2, "attention values (bf16)", e)))
			return -1;
		if (a->amx)   /* the spare panels are read (times P~ = 0): finite */
			memset(a->vb, 0, nvb * 2);
		for (int t = 0; t < a->nth; t++)
			if (!(a->th[t].qb = ss_calloc(rows * (size_t)a->hde, 2, "attention queries (bf16)", e)) ||
			    !(a->th[t].pb = ss_calloc(rows * (size_t)a->ldpb, 2, "attention scores (bf16)", e)))
				return -1;
	}
	a->compute = mode == SS_COMPUTE_BF16 ? SS_COMPUTE_BF16 : SS_COMPUTE_F32;
	return 0;
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
	free(a->kb);   /* the bf16 buffers again, for the new tile */
	free(a->vb);
	a->kb = a->vb = NULL;
	return attn_set_compute(a, a->compute, e);
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
			attn_block_sel(a, p, r0, r1, kvh);
		else if (packed(a))
			attn_block(a, p, r0, r1, kvh);
		else
			attn_block_few(a, p, r0, r1, kvh);
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
		pool_run(pool, attn_pack_task, a);
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
