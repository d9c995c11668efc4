/* attn_block.c - attention's packed tiles (keys and values packed into
 * panels, the register-blocked QK^T and PV kernels, the online softmax)
 * and the few-query path; see attention.c for the scheme. */
#include "engine/attn_impl.h"
#include "engine/kernels.h"
#include "io/stconv.h"
#include "util/cpu.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

const attn_kops *attn_kern(void)
{
	/* AVX512_BF16 adds nothing to the f32 tiles */
	static const attn_kops *const k[SS_ISA_N] = {&attn_kops_c, &attn_kops_avx2, &attn_kops_avx512,
	                                             &attn_kops_avx512, &attn_kops_avx512};
	return k[ss_cpu_isa()];
}

const char *attn_kernels_name(void)
{
	return attn_kern()->name;
}

const attn_kops16 *attn_kern16(void)
{
	static const attn_kops16 *const k[SS_ISA_N] = {&attn_kops16_c, &attn_kops16_avx2, &attn_kops16_avx512,
	                                               &attn_kops16_avx512bf16, &attn_kops16_amx};
	return k[ss_cpu_isa()];
}

const attn_kops16 *attn_kern16_for(const ss_attn *a)
{
	const attn_kops16 *k = attn_kern16();
	return k == &attn_kops16_amx && !a->amx ? &attn_kops16_avx512bf16 : k;
}

const char *attn_kernels16_name(void)
{
	return attn_kern16()->name;
}

/* the bf16 mode's packing of panels [p0, p0 + np) (attn_impl.h: kb, vb) */
static void pack16(ss_attn *a, long p0, long np, long keys, long lo, long hi)
{
	long hd = a->hd, hde = a->hde, cp = a->hdp / NP;
	for (long it = lo; it < hi; it++) {
		long h = it / np, pn = p0 + it % np;
		uint16_t *kd = a->kb + (h * a->npb + pn) * hde * NP;
		for (long i = 0; i < NP; i++) {
			long j = pn * NP + i;
			const float *k = a->kc + j * a->kvdim + h * hd, *v = a->vc + j * a->kvdim + h * hd;
			for (long d = 0; d < hde; d++)
				kd[(d / 2) * 2 * NP + 2 * i + d % 2] = j < keys && d < hd ? st_f32_to_bf16(k[d]) : 0;
			for (long c = 0; c < a->hdp; c++)
				a->vb[((h * cp + c / NP) * a->npb * NP + (j & ~1L)) * NP + (c % NP) * 2 + (j & 1)] =
				        j < keys && c < hd ? st_f32_to_bf16(v[c]) : 0;
		}
	}
}

/* keys and values of panels [p0, p1) of every KV head into a->kp, a->vp
 * (zeros beyond the keys given and beyond hd) */
void attn_pack_task(void *ctx, int tid, int nth)
{
	ss_attn *a = ctx;
	long keys = a->t0 + a->n, hd = a->hd, p0 = 0, lo, hi;
	p0 = attn_window_lo(a->window, a->t0) / NP;   /* the first block's first key */
	long np = (keys + NP - 1) / NP - p0;
	pool_share(a->Hkv * np, 1, tid, nth, &lo, &hi);
	if (a->compute == SS_COMPUTE_BF16) {
		pack16(a, p0, np, keys, lo, hi);
		return;
	}
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

/* ---- one work item ----------------------------------------------------- */

/* the queries of rows r0..r0+nb-1 for the g heads of KV head kvh, stacked
 * head by head into p->qg */
void attn_gather_q(const ss_attn *a, attn_thread *p, long r0, long nb, long kvh)
{
	long g = a->g, hd = a->hd;
	for (long r = 0; r < g; r++)
		for (long i = 0; i < nb; i++)
			memcpy(p->qg + (r * nb + i) * hd, a->q + (r0 + i) * a->qdim + (kvh * g + r) * hd,
			       (size_t)hd * 4);
}

/* the block's column sums p->csum [g, nk] (keys k0..k0+nk-1) into p->acc */
void attn_add_csum(const ss_attn *a, attn_thread *p, long kvh, long k0, long nk)
{
	for (long r = 0; r < a->g; r++) {
		double *acc = p->acc + (kvh * a->g + r) * a->maxT + k0;
		const float *cs = p->csum + r * nk;
		for (long j = 0; j < nk; j++)
			acc[j] += cs[j];
	}
}

/* the output rows p->og (ldo floats apart) times scale[x] back into q */
void attn_put_out(const ss_attn *a, const attn_thread *p, long r0, long nb, long kvh, long ldo,
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
void attn_block(ss_attn *a, attn_thread *p, long r0, long r1, long kvh)
{
	long g = a->g, hd = a->hd, hdp = a->hdp, nb = r1 - r0, R = g * nb, kt = a->kt;
	long qs = a->t0 + r0, qe = a->t0 + r1;          /* absolute positions */
	long klo = attn_window_lo(a->window, qs);   /* the first row's keys (attn_keys) */
	long kb = klo / NP * NP, nk = qe - kb;          /* keys kb..qe-1, tiles from kb */
	long nt = (nk + kt - 1) / kt;
	const attn_kops *K = attn_kern();
	const float *kp = a->kp + (kvh * a->np + kb / NP) * hd * NP;
	const float *vp = a->vp + (kvh * (hdp / NP) * a->np * NP + kb) * NP;
	/* the bf16 mode: the same tiles on bf16 operands (attn_kern16_body.h) */
	int b16 = a->compute == SS_COMPUTE_BF16;
	const attn_kops16 *K16 = attn_kern16_for(a);
	long hde = a->hde, npb = a->npb, vs = npb * NP * NP, ldpb = a->ldpb;
	const uint16_t *kp16 = b16 ? a->kb + (kvh * npb + kb / NP) * hde * NP : NULL;
	const uint16_t *vp16 = b16 ? a->vb + (kvh * (hdp / NP) * npb * NP + kb) * NP : NULL;
	/* rows per call, panels per call (the f32 tiles: at most 2 as always),
	 * the multiple of keys pv takes */
	int mr = b16 ? K16->mr : MR, kmul = b16 ? K16->kmul : 1;
	int qpan = b16 ? K16->qk_pan : K->qk_pan, vpan = b16 ? K16->pv_pan : K->pv_pan;
	qpan = !b16 && qpan > 2 ? 2 : qpan;
	vpan = !b16 && vpan > 2 ? 2 : vpan;
	if (b16 && K16->begin)
		K16->begin();
	attn_gather_q(a, p, r0, nb, kvh);
	for (long x = 0; b16 && x < R; x++) {
		K16->round(p->qg + x * hd, p->qb + x * hde, hd);
		for (long d = hd; d < hde; d++)
			p->qb[x * hde + d] = 0;
	}
	for (long x = 0; x < R; x++) {
		p->mx[x] = -INFINITY;
		p->l[x] = 0;
	}
	long Rp = mr > MR ? (R + mr - 1) / mr * mr : R;   /* AMX: the rows its last group writes, in the pad */
	memset(p->og, 0, sizeof(float) * (size_t)(Rp * hdp));
	for (long t = 0; t < nt; t++) {
		long c0 = t * kt, c1 = c0 + kt < nk ? c0 + kt : nk, w = c1 - c0;
		float *st = p->s + t * R * kt, *sl = p->sl;
		/* S = scale Qg K^T into the L2 tile (stores into the block's
		 * buffer itself waited on memory at T >= 8192), four panels of keys (16 KiB at hd 64) against
		 * each group of rows in turn; the keys after a group's last
		 * position are masked for all of it: not computed */
		for (long j0 = 0; j0 < w; j0 += 4 * NP)
			for (long x0 = 0; x0 < R; x0 += mr) {
				int nr = R - x0 < mr ? (int)(R - x0) : mr;
				long top = tile_top(x0, nr, nb, qs, kb + c0, w), lim = top < j0 + 4 * NP ? top : j0 + 4 * NP;
				for (long j = j0; j < lim; j += qpan * NP) {
					int np = (int)((lim - j + NP - 1) / NP);
					np = np < qpan ? np : qpan;
					if (b16)   /* unscaled: the softmax below scales */
						K16->qk(nr, p->qb + x0 * hde, hde / 2, kp16 + (c0 + j) * hde, np, sl + x0 * kt + j,
						        kt, 1.0f);
					else
						K->qk(nr, p->qg + x0 * hd, hd, kp + (c0 + j) * hd, np, sl + x0 * kt + j, kt,
						      a->scale);
				}
			}
		long wb = (w + kmul - 1) / kmul * kmul;   /* the bf16 mode's pb row: the pad 0 */
		/* the online softmax, P~ into the block's buffer (the bf16 mode: also
		 * rounded into pb, the scores scaled here; max(x scale) = max(x)
		 * scale as rounding is monotone, so the values are those of scores
		 * scaled first) */
		for (long x = 0; x < R; x++) {
			float *row = st + x * kt, *sr = sl + x * kt;
			uint16_t *rb = b16 ? p->pb + x * ldpb : NULL;
			long pos = qs + x % nb;
			/* visible keys of this row within the tile, relative to the tile */
			long vlo = attn_window_lo(a->window, pos) - kb - c0;
			long vhi = pos + 1 - kb - c0;
			vlo = vlo < 0 ? 0 : vlo;
			vhi = vhi > w ? w : vhi;
			if (vhi <= vlo) {
				memset(row, 0, sizeof(float) * (size_t)w);
				if (rb)
					memset(rb, 0, sizeof *rb * (size_t)wb);
				p->mu[x * a->ntile + t] = -INFINITY;
				p->al[x] = 1;
				continue;
			}
			if (vlo > 0)
				memset(row, 0, sizeof(float) * (size_t)vlo);
			if (vhi < w)
				memset(row + vhi, 0, sizeof(float) * (size_t)(w - vhi));
			float sc = b16 ? a->scale : 1.0f;
			if (a->softcap > 0 && sc != 1.0f) {
				k_scale(sr + vlo, vhi - vlo, sc);
				sc = 1.0f;
			}
			if (a->softcap > 0)
				k_softcap(sr + vlo, vhi - vlo, a->softcap);
			float m = k_max(sr + vlo, vhi - vlo) * sc, mo = p->mx[x];
			m = m > mo ? m : mo;
			double sum;
			if (rb) {
				memset(rb, 0, sizeof *rb * (size_t)vlo);
				memset(rb + vhi, 0, sizeof *rb * (size_t)(wb - vhi));
				sum = k_exp_shift_to16(row + vlo, rb + vlo, sr + vlo, vhi - vlo, m, sc);
			} else {
				sum = k_exp_shift_to(row + vlo, sr + vlo, vhi - vlo, m);
			}
			float al = mo == -INFINITY ? 0.0f : expf(mo - m);
			p->l[x] = p->l[x] * (double)al + sum;
			p->al[x] = al;
			p->mx[x] = m;
			p->mu[x * a->ntile + t] = m;
		}
		/* O = O a + P~ V, a panel of 16 value columns (16 KiB) against each
		 * group of rows in turn, over the keys some row of the group sees */
		for (long c = 0; c < hdp; c += vpan * NP) {
			int np = (int)((hdp - c) / NP);
			np = np < vpan ? np : vpan;
			for (long x0 = 0; x0 < R; x0 += mr) {
				int nr = R - x0 < mr ? (int)(R - x0) : mr;
				long top = tile_top(x0, nr, nb, qs, kb + c0, w);
				if (b16)
					K16->pv(nr, p->pb + x0 * ldpb, ldpb, vp16 + (c * npb + c0) * NP, vs, np,
					        (top + kmul - 1) / kmul * kmul, p->og + x0 * hdp + c, hdp, p->al + x0);
				else
					K->pv(nr, st + x0 * kt, kt, vp + (c * a->np + c0) * NP, vs, np, top,
					      p->og + x0 * hdp + c, hdp, p->al + x0);
			}
		}
	}
	if (b16 && K16->end)
		K16->end();
	/* the output: O / l */
	for (long x = 0; x < R; x++)
		p->al[x] = (float)(1.0 / p->l[x]);
	attn_put_out(a, p, r0, nb, kvh, hdp, p->al);
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
	attn_add_csum(a, p, kvh, kb, nk);
}

/* A few queries (decoding, re-runs): packing all the keys would cost more
 * than the products, so the block's rows (rows r0..r1-1 of q) against KV
 * head kvh go through two sgemm calls over the keys in place, with the
 * same exact softmax (max, exp, masked keys 0) and column sums. */
void attn_block_few(ss_attn *a, attn_thread *p, long r0, long r1, long kvh)
{
	long g = a->g, hd = a->hd, nb = r1 - r0, R = g * nb;
	long qs = a->t0 + r0, qe = a->t0 + r1;
	long klo = attn_window_lo(a->window, qs), nk = qe - klo;
	attn_gather_q(a, p, r0, nb, kvh);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)R, (int)nk, (int)hd, a->scale, p->qg, (int)hd,
	            a->kc + klo * a->kvdim + kvh * hd, (int)a->kvdim, 0.0f, p->s, (int)nk);
	if (a->recv_sum)
		memset(p->csum, 0, sizeof(float) * (size_t)(g * nk));
	for (long x = 0; x < R; x++) {
		float *row = p->s + x * nk;
		long pos = qs + x % nb;
		long jlo = attn_window_lo(a->window, pos), jhi = pos + 1;
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
		attn_add_csum(a, p, kvh, klo, nk);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)R, (int)hd, (int)nk, 1.0f, p->s, (int)nk,
	            a->vc + klo * a->kvdim + kvh * hd, (int)a->kvdim, 0.0f, p->og, (int)hd);
	attn_put_out(a, p, r0, nb, kvh, hd, p->mx);
}
