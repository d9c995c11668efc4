/* attn_kern_body.h - attention's tile kernels (attn_impl.h: attn_kops),
 * compiled once per instruction set: included only by attn_kern_c.c,
 * attn_kern_avx2.c and attn_kern_avx512.c, which define AK(name) to name
 * their copy and AK_NAME.  Every copy computes each score and output
 * element the same way (one FMA per d or key, in order; the scale after),
 * so all give the same bits; they differ in how many keys or columns a
 * call covers: portable C and AVX2 one panel of 16 (6 rows x 16 in
 * registers), AVX-512 two (6 rows x 32: 12 accumulators, two loads and six
 * broadcasts per 12 FMAs). */
#include "engine/attn_impl.h"

#ifdef __AVX2__
#include <immintrin.h>
#endif

#if defined __AVX2__ && !defined __AVX512F__
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
static void qk_c1(int nr, const float *q, long hd, const float *kp, float *s, long lds, float scale)
{
	for (int i = 0; i < nr; i++)
		for (int c = 0; c < NP; c++) {
			float acc = 0;
			for (long d = 0; d < hd; d++)
				acc += q[i * hd + d] * kp[d * NP + c];
			s[i * lds + c] = acc * scale;
		}
}

static void pv_c1(int nr, const float *p, long ldp, const float *v, long w, float *o, long ldo, const float *al)
{
	for (int i = 0; i < nr; i++)
		for (int c = 0; c < NP; c++) {
			float acc = o[i * ldo + c] * al[i];
			for (long j = 0; j < w; j++)
				acc += p[i * ldp + j] * v[j * NP + c];
			o[i * ldo + c] = acc;
		}
}

#ifdef __AVX512F__
/* s[i][0..16 np - 1] = scale * sum_d q[i][d] kp[panel][d][..] for rows
 * i < nr, np = 1 or 2 panels (hd * NP floats apart) */
static inline __attribute__((always_inline)) void qk_512(const int nr, const int np, const float *q, long hd,
                                                         const float *kp, float *s, long lds, float scale)
{
	__m512 c0[MR], c1[MR];
#pragma GCC unroll 6
	for (int i = 0; i < nr; i++)
		c0[i] = c1[i] = _mm512_setzero_ps();
	const float *kq = kp + hd * NP;
#pragma GCC unroll 4
	for (long d = 0; d < hd; d++) {
		__m512 b0 = _mm512_loadu_ps(kp + d * NP), b1 = np > 1 ? _mm512_loadu_ps(kq + d * NP) : b0;
#pragma GCC unroll 6
		for (int i = 0; i < nr; i++) {
			__m512 x = _mm512_set1_ps(q[i * hd + d]);
			c0[i] = _mm512_fmadd_ps(x, b0, c0[i]);
			if (np > 1)
				c1[i] = _mm512_fmadd_ps(x, b1, c1[i]);
		}
	}
	__m512 sc = _mm512_set1_ps(scale);
#pragma GCC unroll 6
	for (int i = 0; i < nr; i++) {
		_mm512_storeu_ps(s + i * lds, _mm512_mul_ps(c0[i], sc));
		if (np > 1)
			_mm512_storeu_ps(s + i * lds + NP, _mm512_mul_ps(c1[i], sc));
	}
}

/* o[i][0..16 np - 1] = al[i] o[i][..] + sum_{j<w} p[i][j] v[panel][j][..]
 * for rows i < nr, np = 1 or 2 column panels (vs floats apart) */
static inline __attribute__((always_inline)) void pv_512(const int nr, const int np, const float *p, long ldp,
                                                         const float *v, long vs, long w, float *o, long ldo,
                                                         const float *al)
{
	__m512 c0[MR], c1[MR];
#pragma GCC unroll 6
	for (int i = 0; i < nr; i++) {
		__m512 f = _mm512_set1_ps(al[i]);
		c0[i] = _mm512_mul_ps(_mm512_loadu_ps(o + i * ldo), f);
		c1[i] = np > 1 ? _mm512_mul_ps(_mm512_loadu_ps(o + i * ldo + NP), f) : c0[i];
	}
	const float *u = v + vs;
#pragma GCC unroll 4
	for (long j = 0; j < w; j++) {
		__m512 b0 = _mm512_loadu_ps(v + j * NP), b1 = np > 1 ? _mm512_loadu_ps(u + j * NP) : b0;
#pragma GCC unroll 6
		for (int i = 0; i < nr; i++) {
			__m512 x = _mm512_set1_ps(p[i * ldp + j]);
			c0[i] = _mm512_fmadd_ps(x, b0, c0[i]);
			if (np > 1)
				c1[i] = _mm512_fmadd_ps(x, b1, c1[i]);
		}
	}
#pragma GCC unroll 6
	for (int i = 0; i < nr; i++) {
		_mm512_storeu_ps(o + i * ldo, c0[i]);
		if (np > 1)
			_mm512_storeu_ps(o + i * ldo + NP, c1[i]);
	}
}

#define QK_CASE(n) case n: { if (np > 1) qk_512(n, 2, q, hd, kp, s, lds, scale); \
	else qk_512(n, 1, q, hd, kp, s, lds, scale); } return;
#define PV_CASE(n) case n: { if (np > 1) pv_512(n, 2, p, ldp, v, vs, w, o, ldo, al); \
	else pv_512(n, 1, p, ldp, v, vs, w, o, ldo, al); } return;
#endif

/* S rows (nr of them) against np panels of NP keys */
static void AK(qk)(int nr, const float *q, long hd, const float *kp, int np, float *s, long lds, float scale)
{
#if defined __AVX512F__
	switch (nr) {
	QK_CASE(6) QK_CASE(5) QK_CASE(4) QK_CASE(3) QK_CASE(2) QK_CASE(1)
	}
#endif
	for (int k = 0; k < np; k++, kp += hd * NP, s += NP) {
#if defined __AVX2__ && !defined __AVX512F__
		switch (nr) {
		case 6: qk_avx(6, q, hd, kp, s, lds, scale); continue;
		case 5: qk_avx(5, q, hd, kp, s, lds, scale); continue;
		case 4: qk_avx(4, q, hd, kp, s, lds, scale); continue;
		case 3: qk_avx(3, q, hd, kp, s, lds, scale); continue;
		case 2: qk_avx(2, q, hd, kp, s, lds, scale); continue;
		case 1: qk_avx(1, q, hd, kp, s, lds, scale); continue;
		}
#endif
		qk_c1(nr, q, hd, kp, s, lds, scale);
	}
}

/* O rows (nr of them) = O al + P V over np panels of NP columns */
static void AK(pv)(int nr, const float *p, long ldp, const float *v, long vs, int np, long w, float *o, long ldo,
                   const float *al)
{
#if defined __AVX512F__
	switch (nr) {
	PV_CASE(6) PV_CASE(5) PV_CASE(4) PV_CASE(3) PV_CASE(2) PV_CASE(1)
	}
#endif
	for (int k = 0; k < np; k++, v += vs, o += NP) {
#if defined __AVX2__ && !defined __AVX512F__
		switch (nr) {
		case 6: pv_avx(6, p, ldp, v, w, o, ldo, al); continue;
		case 5: pv_avx(5, p, ldp, v, w, o, ldo, al); continue;
		case 4: pv_avx(4, p, ldp, v, w, o, ldo, al); continue;
		case 3: pv_avx(3, p, ldp, v, w, o, ldo, al); continue;
		case 2: pv_avx(2, p, ldp, v, w, o, ldo, al); continue;
		case 1: pv_avx(1, p, ldp, v, w, o, ldo, al); continue;
		}
#endif
		pv_c1(nr, p, ldp, v, w, o, ldo, al);
	}
}

const attn_kops AK(attn_kops) = {
	.name = AK_NAME,
#ifdef __AVX512F__
	.qk_pan = 2,
	.pv_pan = 2,
#else
	.qk_pan = 1,
	.pv_pan = 1,
#endif
	.qk = AK(qk),
	.pv = AK(pv),
};
