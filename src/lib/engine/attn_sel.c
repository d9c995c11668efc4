/* attn_sel.c - attention under a key selection or a measurement
 * (attention.h: ss_attn_sel, ss_attn_meas): the exact softmax of each row
 * over the keys it sees, two sgemm calls for the scores and two for the
 * output. */
#include "engine/attn_impl.h"
#include "engine/kernels.h"

#include <cblas.h>
#include <string.h>

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
void attn_block_sel(ss_attn *a, attn_thread *p, long r0, long r1, long kvh)
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
	attn_gather_q(a, p, r0, nb, kvh);
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
	attn_put_out(a, p, r0, nb, kvh, hd, p->mx);
}
