/* attn_sel.c - attention under a key selection or a measurement
 * (attention.h: ss_attn_sel, ss_attn_meas): the exact softmax of each row
 * over the keys it sees, two sgemm calls for the scores and two for the
 * output. */
#include "engine/attn_impl.h"
#include "engine/kernels.h"

#include <cblas.h>
#include <string.h>

/* the number of entries of the sorted list K[0..n) below x */
static long count_below(const long *K, long n, long x)
{
	long a = 0, b = n;
	while (a < b) {
		long m = (a + b) / 2;
		if (K[m] < x)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

void attn_keys(long window, const ss_attn_sel *sel, long r, long i, long *lo, long *k0, long *k1)
{
	long w = attn_window_lo(window, i);
	*k0 = *k1 = 0;
	*lo = w;
	if (!sel)
		return;
	if (sel->lo[r] > w)
		*lo = sel->lo[r];
	*k1 = sel->nk[r];
	*k0 = w > 0 ? count_below(sel->kept, *k1, w) : 0;
}

/* The probabilities of one unselected row (p over the keys lw..pos of its
 * window, row[j - off] * inv) that each measured selection hides, by key class,
 * into p->lost.  Hidden keys of selection z: those of the window below
 * the first key z shows but the ones z keeps (attn_keys). */
static void measure_row(const ss_attn *a, attn_thread *p, const float *row, long off, float inv, long lw, long pos,
                        long r)
{
	const ss_attn_meas *m = a->meas;
	double *cum = p->cum, c[3] = {0, 0, 0};
	long M = a->maxT + 1;
	for (long j = lw; j <= pos; j++) {
		cum[j] = c[0];
		cum[M + j] = c[1];
		cum[2 * M + j] = c[2];
		c[m->cls[j]] += (double)row[j - off] * (double)inv;
	}
	for (int s = 0; s < m->n; s++) {
		const ss_attn_sel *z = &m->sel[s];
		long lo, k0, k1;
		attn_keys(a->window, z, r, pos, &lo, &k0, &k1);
		if (lo == lw)
			continue;
		double l[3] = {cum[lo], cum[M + lo], cum[2 * M + lo]};
		for (long e = k0; e < k1; e++) {
			long j = z->kept[e];
			l[m->cls[j]] -= (double)row[j - off] * (double)inv;
		}
		for (int k = 0; k < 3; k++)   /* a few ulps below 0 when nothing is hidden */
			p->lost[s * 3 + k] += l[k] > 0 ? l[k] : 0.0;
	}
}

/* One query block (rows r0..r1-1 of q) against KV head kvh under a->sel
 * (NULL: every key of the windows): the kept keys some row sees gathered
 * (entries kmin..kmin+ng-1 of the list), then the keys clo..qe-1 of the
 * windows in place; each row's keys from attn_keys. */
void attn_block_sel(ss_attn *a, attn_thread *p, long r0, long r1, long kvh)
{
	const ss_attn_sel *sel = a->sel;
	long g = a->g, hd = a->hd, nb = r1 - r0, R = g * nb, kvd = a->kvdim;
	long qs = a->t0 + r0, qe = a->t0 + r1, clo = qs, kmin = -1, kmax = 0;
	for (long r = r0; r < r1; r++) {
		long lo, k0, k1;
		attn_keys(a->window, sel, r, a->t0 + r, &lo, &k0, &k1);
		clo = lo < clo ? lo : clo;
		if (k1 > k0) {
			kmin = kmin < 0 || k0 < kmin ? k0 : kmin;
			kmax = k1 > kmax ? k1 : kmax;
		}
	}
	kmin = kmin < 0 ? 0 : kmin;
	long ng = kmax > kmin ? kmax - kmin : 0, nc = qe - clo, ld = ng + nc;
	const float *kc = a->kc + kvh * hd, *vc = a->vc + kvh * hd;
	const long *kept = sel ? sel->kept + kmin : NULL;
	for (long x = 0; x < ng; x++) {
		memcpy(p->gk + x * hd, kc + kept[x] * kvd, sizeof(float) * (size_t)hd);
		memcpy(p->gv + x * hd, vc + kept[x] * kvd, sizeof(float) * (size_t)hd);
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
		long r = r0 + x % nb, pos = qs + x % nb, lo, k0, k1;
		attn_keys(a->window, sel, r, pos, &lo, &k0, &k1);
		long g0 = k1 > k0 ? k0 - kmin : 0, nk = k1 > k0 ? k1 - k0 : 0;   /* the row's kept: row[g0..g0+nk) */
		long w0 = ng + lo - clo, nw = pos - lo + 1;
		if (a->softcap > 0) {   /* Gemma 2 */
			k_softcap(row + w0, nw, a->softcap);
			k_softcap(row + g0, nk, a->softcap);
		}
		float m = k_max(row + w0, nw);
		if (nk) {
			float mk = k_max(row + g0, nk);
			m = mk > m ? mk : m;
		}
		double sum = k_exp_shift_to(row + w0, row + w0, nw, m) +
		             (nk ? k_exp_shift_to(row + g0, row + g0, nk, m) : 0.0);
		memset(row, 0, sizeof(float) * (size_t)g0);
		memset(row + g0 + nk, 0, sizeof(float) * (size_t)(w0 - g0 - nk));
		memset(row + w0 + nw, 0, sizeof(float) * (size_t)(ld - w0 - nw));
		float inv = (float)(1.0 / sum);
		p->mx[x] = inv;
		if (a->recv_sum) {
			float *cs = p->gcs + (x / nb) * ld;
			k_axpy(cs + g0, row + g0, nk, inv);
			k_axpy(cs + w0, row + w0, nw, inv);
		}
		if (a->meas)
			measure_row(a, p, row + ng, clo, inv, lo, pos, r);
	}
	if (a->recv_sum)
		for (long h = 0; h < g; h++) {
			double *acc = p->acc + (kvh * g + h) * a->maxT;
			const float *cs = p->gcs + h * ld;
			for (long x = 0; x < ng; x++)
				acc[kept[x]] += cs[x];
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
