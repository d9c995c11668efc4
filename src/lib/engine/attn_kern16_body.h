/* attn_kern16_body.h - attention's bf16 tile kernels (attn_impl.h:
 * attn_kops16), the bf16 compute mode's QK^T and PV: bf16 operands
 * (rounded to nearest even when packed), products exact in f32, sums in
 * f32.  Compiled once per instruction set: included by attn_kern_c.c,
 * attn_kern_avx2.c, attn_kern_avx512.c and attn_kern_avx512bf16.c, which
 * define AK16(name) and AK16_NAME.
 *
 * Operands come in pairs along the summed index (d for QK^T, the key for
 * PV), the layout of AVX512_BF16's vdpbf16ps: keys kp[panel][hd2][16][2]
 * (hd2 pairs of dimensions, panels hd2 * 32 apart), queries q[row][2 hd2],
 * values v[panel][w / 2][16][2] (panels vs apart), probabilities
 * p[row][ldp] with w even.  Per output element and pair, vdpbf16ps adds
 * the odd product, then the even one, each with one rounding (Intel's
 * definition; DAZ/FTZ, RNE).  The portable C, AVX2 and AVX-512F copies
 * (emulated: bf16 -> f32 is exact, so is the product, and an FMA of an
 * exact product rounds like the add) do the same in the same order, so
 * they give the same bits as vdpbf16ps for operands and partial sums
 * outside the subnormal range (which vdpbf16ps flushes to zero). */
#include "engine/attn_impl.h"
#include "engine/round16.h"

#include <stdint.h>
#include <string.h>

#ifdef __AVX512F__
#include <immintrin.h>
#endif

static inline float bf(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* the C copy: any number of rows, one panel */
static void qk16_c1(int nr, const uint16_t *q, long hd2, const uint16_t *kp, float *s, long lds, float scale)
{
	for (int i = 0; i < nr; i++)
		for (int c = 0; c < NP; c++) {
			float acc = 0;
			const uint16_t *x = q + i * 2 * hd2, *k = kp + 2 * c;
			for (long d = 0; d < hd2; d++) {
				acc += bf(x[2 * d + 1]) * bf(k[d * 2 * NP + 1]);
				acc += bf(x[2 * d]) * bf(k[d * 2 * NP]);
			}
			s[i * lds + c] = acc * scale;
		}
}

static void pv16_c1(int nr, const uint16_t *p, long ldp, const uint16_t *v, long w, float *o, long ldo,
                    const float *al)
{
	for (int i = 0; i < nr; i++)
		for (int c = 0; c < NP; c++) {
			float acc = o[i * ldo + c] * al[i];
			const uint16_t *x = p + i * ldp, *u = v + 2 * c;
			for (long j = 0; j < w / 2; j++) {
				acc += bf(x[2 * j + 1]) * bf(u[j * 2 * NP + 1]);
				acc += bf(x[2 * j]) * bf(u[j * 2 * NP]);
			}
			o[i * ldo + c] = acc;
		}
}

#if defined __AVX2__ && !defined __AVX512F__
#include <immintrin.h>
/* the AVX2 emulation, one panel of 16 keys or columns (two vectors of 8):
 * per pair all rows' odd products, then all rows' even ones (each
 * element's order as vdpbf16ps's) */
static inline __attribute__((always_inline)) void qk16_avx(const int nr, const uint16_t *q, long hd2,
                                                           const uint16_t *kp, float *s, long lds, float scale)
{
	__m256 c0[MR], c1[MR];
	const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
#pragma GCC unroll 6
	for (int i = 0; i < nr; i++)
		c0[i] = c1[i] = _mm256_setzero_ps();
	for (long d = 0; d < hd2; d++) {
		__m256i b0 = _mm256_loadu_si256((const __m256i *)(kp + d * 2 * NP));
		__m256i b1 = _mm256_loadu_si256((const __m256i *)(kp + d * 2 * NP + NP));
		__m256 o0 = _mm256_castsi256_ps(_mm256_and_si256(b0, hi)), o1 = _mm256_castsi256_ps(_mm256_and_si256(b1, hi));
#pragma GCC unroll 6
		for (int i = 0; i < nr; i++) {
			__m256 x = _mm256_set1_ps(bf(q[i * 2 * hd2 + 2 * d + 1]));
			c0[i] = _mm256_fmadd_ps(x, o0, c0[i]);
			c1[i] = _mm256_fmadd_ps(x, o1, c1[i]);
		}
		__m256 e0 = _mm256_castsi256_ps(_mm256_slli_epi32(b0, 16)), e1 = _mm256_castsi256_ps(_mm256_slli_epi32(b1, 16));
#pragma GCC unroll 6
		for (int i = 0; i < nr; i++) {
			__m256 x = _mm256_set1_ps(bf(q[i * 2 * hd2 + 2 * d]));
			c0[i] = _mm256_fmadd_ps(x, e0, c0[i]);
			c1[i] = _mm256_fmadd_ps(x, e1, c1[i]);
		}
	}
	__m256 sc = _mm256_set1_ps(scale);
#pragma GCC unroll 6
	for (int i = 0; i < nr; i++) {
		_mm256_storeu_ps(s + i * lds, _mm256_mul_ps(c0[i], sc));
		_mm256_storeu_ps(s + i * lds + 8, _mm256_mul_ps(c1[i], sc));
	}
}

static inline __attribute__((always_inline)) void pv16_avx(const int nr, const uint16_t *p, long ldp,
                                                           const uint16_t *v, long w, float *o, long ldo,
                                                           const float *al)
{
	__m256 c0[MR], c1[MR];
	const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
#pragma GCC unroll 6
	for (int i = 0; i < nr; i++) {
		__m256 f = _mm256_set1_ps(al[i]);
		c0[i] = _mm256_mul_ps(_mm256_loadu_ps(o + i * ldo), f);
		c1[i] = _mm256_mul_ps(_mm256_loadu_ps(o + i * ldo + 8), f);
	}
	for (long j = 0; j < w / 2; j++) {
		__m256i b0 = _mm256_loadu_si256((const __m256i *)(v + j * 2 * NP));
		__m256i b1 = _mm256_loadu_si256((const __m256i *)(v + j * 2 * NP + NP));
		__m256 o0 = _mm256_castsi256_ps(_mm256_and_si256(b0, hi)), o1 = _mm256_castsi256_ps(_mm256_and_si256(b1, hi));
#pragma GCC unroll 6
		for (int i = 0; i < nr; i++) {
			__m256 x = _mm256_set1_ps(bf(p[i * ldp + 2 * j + 1]));
			c0[i] = _mm256_fmadd_ps(x, o0, c0[i]);
			c1[i] = _mm256_fmadd_ps(x, o1, c1[i]);
		}
		__m256 e0 = _mm256_castsi256_ps(_mm256_slli_epi32(b0, 16)), e1 = _mm256_castsi256_ps(_mm256_slli_epi32(b1, 16));
#pragma GCC unroll 6
		for (int i = 0; i < nr; i++) {
			__m256 x = _mm256_set1_ps(bf(p[i * ldp + 2 * j]));
			c0[i] = _mm256_fmadd_ps(x, e0, c0[i]);
			c1[i] = _mm256_fmadd_ps(x, e1, c1[i]);
		}
	}
#pragma GCC unroll 6
	for (int i = 0; i < nr; i++) {
		_mm256_storeu_ps(o + i * ldo, c0[i]);
		_mm256_storeu_ps(o + i * ldo + 8, c1[i]);
	}
}
#endif

#ifdef __AVX512F__
#ifdef __AVX512BF16__
/* acc += odd products, then even ones: vdpbf16ps */
#define DP(acc, xpair, b) (acc) = _mm512_dpbf16_ps((acc), (__m512bh)(xpair), (__m512bh)(b))
#else
/* the same emulated: b's even halves (<< 16) and odd halves (masked) as f32 */
#define DP(acc, xpair, b) do { \
	__m512 xo_ = _mm512_castsi512_ps(_mm512_and_si512((xpair), hi_)); \
	__m512 xe_ = _mm512_castsi512_ps(_mm512_slli_epi32((xpair), 16)); \
	(acc) = _mm512_fmadd_ps(xo_, _mm512_castsi512_ps(_mm512_and_si512((b), hi_)), (acc)); \
	(acc) = _mm512_fmadd_ps(xe_, _mm512_castsi512_ps(_mm512_slli_epi32((b), 16)), (acc)); \
} while (0)
#endif

static inline uint32_t pair_at(const uint16_t *x)
{
	uint32_t u;
	memcpy(&u, x, 4);
	return u;
}

/* s[i][0..16 np) = scale * q[i] . keys for rows i < nr, np = 1 or 2 panels */
static inline __attribute__((always_inline)) void qk16_512(const int nr, const int np, const uint16_t *q,
                                                           long hd2, const uint16_t *kp, float *s, long lds,
                                                           float scale)
{
	__m512 c0[MR], c1[MR];
	const __m512i hi_ = _mm512_set1_epi32((int)0xffff0000u);
	(void)hi_;
#pragma GCC unroll 6
	for (int i = 0; i < nr; i++)
		c0[i] = c1[i] = _mm512_setzero_ps();
	const uint16_t *kq = kp + hd2 * 2 * NP;
#pragma GCC unroll 2
	for (long d = 0; d < hd2; d++) {
		__m512i b0 = _mm512_loadu_si512(kp + d * 2 * NP), b1 = np > 1 ? _mm512_loadu_si512(kq + d * 2 * NP) : b0;
#pragma GCC unroll 6
		for (int i = 0; i < nr; i++) {
			__m512i x = _mm512_set1_epi32((int)pair_at(q + i * 2 * hd2 + 2 * d));
			DP(c0[i], x, b0);
			if (np > 1)
				DP(c1[i], x, b1);
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

/* o[i][0..16 np) = al[i] o[i] + sum_{j<w} p[i][j] v[j] for rows i < nr */
static inline __attribute__((always_inline)) void pv16_512(const int nr, const int np, const uint16_t *p,
                                                           long ldp, const uint16_t *v, long vs, long w,
                                                           float *o, long ldo, const float *al)
{
	__m512 c0[MR], c1[MR];
	const __m512i hi_ = _mm512_set1_epi32((int)0xffff0000u);
	(void)hi_;
#pragma GCC unroll 6
	for (int i = 0; i < nr; i++) {
		__m512 f = _mm512_set1_ps(al[i]);
		c0[i] = _mm512_mul_ps(_mm512_loadu_ps(o + i * ldo), f);
		c1[i] = np > 1 ? _mm512_mul_ps(_mm512_loadu_ps(o + i * ldo + NP), f) : c0[i];
	}
	const uint16_t *u = v + vs;
#pragma GCC unroll 2
	for (long j = 0; j < w / 2; j++) {
		__m512i b0 = _mm512_loadu_si512(v + j * 2 * NP), b1 = np > 1 ? _mm512_loadu_si512(u + j * 2 * NP) : b0;
#pragma GCC unroll 6
		for (int i = 0; i < nr; i++) {
			__m512i x = _mm512_set1_epi32((int)pair_at(p + i * ldp + 2 * j));
			DP(c0[i], x, b0);
			if (np > 1)
				DP(c1[i], x, b1);
		}
	}
#pragma GCC unroll 6
	for (int i = 0; i < nr; i++) {
		_mm512_storeu_ps(o + i * ldo, c0[i]);
		if (np > 1)
			_mm512_storeu_ps(o + i * ldo + NP, c1[i]);
	}
}

#define QK16_CASE(n) case n: { if (np > 1) qk16_512(n, 2, q, hd2, kp, s, lds, scale); \
	else qk16_512(n, 1, q, hd2, kp, s, lds, scale); } return;
#define PV16_CASE(n) case n: { if (np > 1) pv16_512(n, 2, p, ldp, v, vs, w, o, ldo, al); \
	else pv16_512(n, 1, p, ldp, v, vs, w, o, ldo, al); } return;
#endif

/* y[i] = bf16(x[i]), nearest even (finite x: P~ and the queries) */
static void AK16(round16)(const float *x, uint16_t *y, long n)
{
#ifdef __AVX512F__
	round16_row_512(x, y, n);
#else
	long i = 0;
#ifdef __AVX2__
	const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff);
	for (; i + 16 <= n; i += 16) {
		__m256i u = _mm256_loadu_si256((const __m256i *)(x + i)), t = _mm256_loadu_si256((const __m256i *)(x + i + 8));
		u = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(half, _mm256_and_si256(_mm256_srli_epi32(u, 16), one))), 16);
		t = _mm256_srli_epi32(_mm256_add_epi32(t, _mm256_add_epi32(half, _mm256_and_si256(_mm256_srli_epi32(t, 16), one))), 16);
		_mm256_storeu_si256((__m256i *)(y + i), _mm256_permute4x64_epi64(_mm256_packus_epi32(u, t), 0xd8));
	}
#endif
	for (; i < n; i++)
		y[i] = st_f32_to_bf16(x[i]);
#endif
}

static void AK16(qk16)(int nr, const uint16_t *q, long hd2, const uint16_t *kp, int np, float *s, long lds,
                     float scale)
{
#ifdef __AVX512F__
	switch (nr) {
	QK16_CASE(6) QK16_CASE(5) QK16_CASE(4) QK16_CASE(3) QK16_CASE(2) QK16_CASE(1)
	}
#endif
	for (int k = 0; k < np; k++, kp += hd2 * 2 * NP, s += NP) {
#if defined __AVX2__ && !defined __AVX512F__
		switch (nr) {
		case 6: qk16_avx(6, q, hd2, kp, s, lds, scale); continue;
		case 5: qk16_avx(5, q, hd2, kp, s, lds, scale); continue;
		case 4: qk16_avx(4, q, hd2, kp, s, lds, scale); continue;
		case 3: qk16_avx(3, q, hd2, kp, s, lds, scale); continue;
		case 2: qk16_avx(2, q, hd2, kp, s, lds, scale); continue;
		case 1: qk16_avx(1, q, hd2, kp, s, lds, scale); continue;
		}
#endif
		qk16_c1(nr, q, hd2, kp, s, lds, scale);
	}
}

static void AK16(pv16)(int nr, const uint16_t *p, long ldp, const uint16_t *v, long vs, int np, long w, float *o,
                     long ldo, const float *al)
{
#ifdef __AVX512F__
	switch (nr) {
	PV16_CASE(6) PV16_CASE(5) PV16_CASE(4) PV16_CASE(3) PV16_CASE(2) PV16_CASE(1)
	}
#endif
	for (int k = 0; k < np; k++, v += vs, o += NP) {
#if defined __AVX2__ && !defined __AVX512F__
		switch (nr) {
		case 6: pv16_avx(6, p, ldp, v, w, o, ldo, al); continue;
		case 5: pv16_avx(5, p, ldp, v, w, o, ldo, al); continue;
		case 4: pv16_avx(4, p, ldp, v, w, o, ldo, al); continue;
		case 3: pv16_avx(3, p, ldp, v, w, o, ldo, al); continue;
		case 2: pv16_avx(2, p, ldp, v, w, o, ldo, al); continue;
		case 1: pv16_avx(1, p, ldp, v, w, o, ldo, al); continue;
		}
#endif
		pv16_c1(nr, p, ldp, v, w, o, ldo, al);
	}
}

const attn_kops16 AK16(attn_kops16) = {
	.name = AK16_NAME,
	.mr = MR,
	.kmul = 2,
#ifdef __AVX512F__
	.qk_pan = 2,
	.pv_pan = 2,
#else
	.qk_pan = 1,
	.pv_pan = 1,
#endif
	.qk = AK16(qk16),
	.pv = AK16(pv16),
	.round = AK16(round16),
};
