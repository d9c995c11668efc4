/* kern_body.h - the code of the row kernels (kernels.h), compiled once per
 * instruction set: included only by kern_c.c, kern_avx2.c and
 * kern_avx512.c, each defining KS(name) to name its copy and KS_NAME.
 * Sections under __AVX512F__ run first and leave nothing for the AVX2
 * sections after them; those leave the scalar tails.  See kern_impl.h. */
#include "engine/kern_impl.h"
#include "engine/round16.h"

#include <math.h>
#include <stdint.h>
#include <string.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#ifdef __AVX2__
/* exp(r) for |r| <= ln2/2: 1 + r + r^2 P(r) with Cephes expf's P,
 * evaluated in pairs (Estrin): a shorter dependency chain than Horner's,
 * the same accuracy */
static inline __m256 exp_poly(__m256 r)
{
	__m256 r2 = _mm256_mul_ps(r, r);
	__m256 pa = _mm256_fmadd_ps(_mm256_set1_ps(1.6666665459E-1f), r, _mm256_set1_ps(5.0000001201E-1f));
	__m256 pb = _mm256_fmadd_ps(_mm256_set1_ps(8.3334519073E-3f), r, _mm256_set1_ps(4.1665795894E-2f));
	__m256 pc = _mm256_fmadd_ps(_mm256_set1_ps(1.9875691500E-4f), r, _mm256_set1_ps(1.3981999507E-3f));
	__m256 p = _mm256_fmadd_ps(_mm256_fmadd_ps(pc, r2, pb), r2, pa);
	return _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
}

/* exp(x) for 8 floats: range reduction x = n ln2 + r, |r| <= ln2/2, a
 * degree-6 polynomial for exp(r) (Cephes expf coefficients), 2^n by
 * exponent bits.  Relative error about 2 ulp on [-87, 88]; inputs are
 * clamped there. */
static inline __m256 exp8(__m256 x)
{
	const __m256 hi = _mm256_set1_ps(88.3762626647949f), lo = _mm256_set1_ps(-87.3365447504f);
	x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
	__m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
	                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
	__m256 p = exp_poly(r);
	__m256i ni = _mm256_cvtps_epi32(n);
	/* n may be 128 at the top of the range: split the scale in two */
	__m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
	__m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
	__m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
	return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

/* exp(x) for 8 floats x <= 0, as exp8 (the same polynomial) with less
 * around it: no upper clamp, n = round(x log2 e) by adding 1.5 * 2^23
 * (whose low bits then hold n), 2^n in one step since n >= -126, and the
 * polynomial in pairs. */
static inline __m256 exp8_neg(__m256 x)
{
	const __m256 shift = _mm256_set1_ps(12582912.0f);
	x = _mm256_max_ps(x, _mm256_set1_ps(-87.3365447504f));
	__m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), shift);
	__m256 n = _mm256_sub_ps(t, shift);
	__m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
	__m256 p = exp_poly(r);
	/* (bits of t) + 127 << 23: the shifter's own bits shift out */
	__m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(127)), 23);
	return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

static inline double hsum4d(__m256d v)
{
	__m128d a = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
	return _mm_cvtsd_f64(_mm_add_sd(a, _mm_unpackhi_pd(a, a)));
}
#endif

#ifdef __AVX512F__
/* the same polynomial and reduction as exp_poly and exp8_neg, 16 floats:
 * each element rounds as in the AVX2 code */
static inline __m512 exp_poly16(__m512 r)
{
	__m512 r2 = _mm512_mul_ps(r, r);
	__m512 pa = _mm512_fmadd_ps(_mm512_set1_ps(1.6666665459E-1f), r, _mm512_set1_ps(5.0000001201E-1f));
	__m512 pb = _mm512_fmadd_ps(_mm512_set1_ps(8.3334519073E-3f), r, _mm512_set1_ps(4.1665795894E-2f));
	__m512 pc = _mm512_fmadd_ps(_mm512_set1_ps(1.9875691500E-4f), r, _mm512_set1_ps(1.3981999507E-3f));
	__m512 p = _mm512_fmadd_ps(_mm512_fmadd_ps(pc, r2, pb), r2, pa);
	return _mm512_fmadd_ps(p, r2, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
}

static inline __m512 exp16_neg(__m512 x)
{
	const __m512 shift = _mm512_set1_ps(12582912.0f);
	x = _mm512_max_ps(x, _mm512_set1_ps(-87.3365447504f));
	__m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), shift);
	__m512 n = _mm512_sub_ps(t, shift);
	__m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
	__m512 p = exp_poly16(r);
	__m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_castps_si512(t), _mm512_set1_epi32(127)), 23);
	return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

/* exp8 on 16 floats, each lane rounding as exp8's */
static inline __m512 exp16(__m512 x)
{
	const __m512 hi = _mm512_set1_ps(88.3762626647949f), lo = _mm512_set1_ps(-87.3365447504f);
	x = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
	__m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
	                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
	__m512 p = exp_poly16(r);
	__m512i ni = _mm512_cvtps_epi32(n);
	__m512i n1 = _mm512_srai_epi32(ni, 1), n2 = _mm512_sub_epi32(ni, n1);
	__m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n1, _mm512_set1_epi32(127)), 23));
	__m512 s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n2, _mm512_set1_epi32(127)), 23));
	return _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
}

/* the first n (< 16) lanes */
static inline __mmask16 tailmask(long n)
{
	return (__mmask16)((1u << n) - 1);
}

/* 16 floats summed in double */
static inline double hsum16(__m512 v)
{
	return _mm512_reduce_add_pd(_mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)),
	                                          _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)))));
}
#endif

static double KS(sumsq)(const float *x, long n)
{
	long i = 0;
	double s = 0;
#ifdef __AVX512F__
	__m512d b0 = _mm512_setzero_pd(), b1 = _mm512_setzero_pd();
	for (; i + 16 <= n; i += 16) {
		__m512d u = _mm512_cvtps_pd(_mm256_loadu_ps(x + i)), v = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8));
		b0 = _mm512_fmadd_pd(u, u, b0);
		b1 = _mm512_fmadd_pd(v, v, b1);
	}
	s += _mm512_reduce_add_pd(_mm512_add_pd(b0, b1));
#endif
#ifdef __AVX2__
	__m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
	for (; i + 8 <= n; i += 8) {
		__m256d u = _mm256_cvtps_pd(_mm_loadu_ps(x + i)), v = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
		a0 = _mm256_fmadd_pd(u, u, a0);
		a1 = _mm256_fmadd_pd(v, v, a1);
	}
	s += hsum4d(_mm256_add_pd(a0, a1));
#endif
	for (; i < n; i++)
		s += (double)x[i] * x[i];
	return s;
}

static double KS(dot)(const float *a, const float *b, long n)
{
	long i = 0;
	double s = 0;
#ifdef __AVX512F__
	__m512d b0 = _mm512_setzero_pd(), b1 = _mm512_setzero_pd();
	for (; i + 16 <= n; i += 16) {
		b0 = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_loadu_ps(a + i)), _mm512_cvtps_pd(_mm256_loadu_ps(b + i)), b0);
		b1 = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_loadu_ps(a + i + 8)),
		                     _mm512_cvtps_pd(_mm256_loadu_ps(b + i + 8)), b1);
	}
	s += _mm512_reduce_add_pd(_mm512_add_pd(b0, b1));
#endif
#ifdef __AVX2__
	__m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
	for (; i + 8 <= n; i += 8) {
		a0 = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm_loadu_ps(a + i)), _mm256_cvtps_pd(_mm_loadu_ps(b + i)), a0);
		a1 = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm_loadu_ps(a + i + 4)),
		                     _mm256_cvtps_pd(_mm_loadu_ps(b + i + 4)), a1);
	}
	s += hsum4d(_mm256_add_pd(a0, a1));
#endif
	for (; i < n; i++)
		s += (double)a[i] * b[i];
	return s;
}

/* k_add, k_axpy, k_scale: explicit AVX2 (GCC -O2 leaves these loops scalar,
 * since y and x may alias); a multiply then an add, never an FMA, so every
 * element rounds as in the scalar tail */
static void KS(add)(float *y, const float *x, long n)
{
	long i = 0;
#ifdef __AVX512F__
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_add_ps(_mm512_loadu_ps(y + i), _mm512_loadu_ps(x + i)));
	if (i < n) {
		__mmask16 k = tailmask(n - i);
		_mm512_mask_storeu_ps(y + i, k, _mm512_add_ps(_mm512_maskz_loadu_ps(k, y + i), _mm512_maskz_loadu_ps(k, x + i)));
		i = n;
	}
#endif
#ifdef __AVX2__
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i)));
#endif
	for (; i < n; i++)
		y[i] += x[i];
}

static void KS(axpy)(float *y, const float *x, long n, float a)
{
	long i = 0;
#ifdef __AVX512F__
	const __m512 wa = _mm512_set1_ps(a);
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_add_ps(_mm512_loadu_ps(y + i), _mm512_mul_ps(wa, _mm512_loadu_ps(x + i))));
	if (i < n) {
		__mmask16 k = tailmask(n - i);
		_mm512_mask_storeu_ps(y + i, k, _mm512_add_ps(_mm512_maskz_loadu_ps(k, y + i),
		                                             _mm512_mul_ps(wa, _mm512_maskz_loadu_ps(k, x + i))));
		i = n;
	}
#endif
#ifdef __AVX2__
	const __m256 va = _mm256_set1_ps(a);
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_mul_ps(va, _mm256_loadu_ps(x + i))));
#endif
	for (; i < n; i++)
		y[i] += a * x[i];
}

static void KS(scale)(float *x, long n, float s)
{
	long i = 0;
#ifdef __AVX512F__
	const __m512 ws = _mm512_set1_ps(s);
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), ws));
	if (i < n) {
		__mmask16 k = tailmask(n - i);
		_mm512_mask_storeu_ps(x + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), ws));
		i = n;
	}
#endif
#ifdef __AVX2__
	const __m256 vs = _mm256_set1_ps(s);
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vs));
#endif
	for (; i < n; i++)
		x[i] *= s;
}

static void KS(silu_mul)(float *g, const float *u, long n)
{
	long i = 0;
#ifdef __AVX512F__   /* the AVX2 section's operations, 16 lanes: the same values */
	const __m512 one16 = _mm512_set1_ps(1.0f), zero16 = _mm512_setzero_ps();
	for (; i + 16 <= n; i += 16) {
		__m512 z = _mm512_loadu_ps(g + i);
		__m512 d = _mm512_add_ps(one16, exp16(_mm512_sub_ps(zero16, z)));
		_mm512_storeu_ps(g + i, _mm512_mul_ps(_mm512_div_ps(z, d), _mm512_loadu_ps(u + i)));
	}
#endif
#ifdef __AVX2__
	const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
	for (; i + 8 <= n; i += 8) {
		__m256 z = _mm256_loadu_ps(g + i);
		__m256 d = _mm256_add_ps(one, exp8(_mm256_sub_ps(zero, z)));
		_mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(z, d), _mm256_loadu_ps(u + i)));
	}
#endif
	for (; i < n; i++)
		g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* GELU's tanh form: 0.5 z (1 + tanh(u)) = z / (1 + exp(-2u)),
 * u = sqrt(2/pi) (z + 0.044715 z^3); the exact form 0.5 z (1 + erf(z/sqrt 2))
 * with erf from Abramowitz and Stegun 7.1.26 (|error| <= 1.5e-7):
 * erf(y) = 1 - (a1 t + ... + a5 t^5) exp(-y^2), t = 1 / (1 + p y), y >= 0 */
#define GELU_C 0.7978845608028654f   /* sqrt(2/pi) */
#define AS_P 0.3275911f
#define AS_A1 0.254829592f
#define AS_A2 -0.284496736f
#define AS_A3 1.421413741f
#define AS_A4 -1.453152027f
#define AS_A5 1.061405429f

static float erf_as(float y)
{
	float a = fabsf(y), t = 1.0f / (1.0f + AS_P * a);
	float p = ((((AS_A5 * t + AS_A4) * t + AS_A3) * t + AS_A2) * t + AS_A1) * t;
	float r = 1.0f - p * expf(-a * a);
	return y < 0 ? -r : r;
}

static void KS(gelu_mul)(float *g, const float *u, long n, int tanh_form)
{
	long i = 0;
#ifdef __AVX512F__   /* the AVX2 section's operations, 16 lanes: the same values */
	const __m512 one16 = _mm512_set1_ps(1.0f), half16 = _mm512_set1_ps(0.5f);
	const __m512 sign16 = _mm512_set1_ps(-0.0f);
	for (; i + 16 <= n; i += 16) {
		__m512 z = _mm512_loadu_ps(g + i), r;
		if (tanh_form) {
			__m512 z3 = _mm512_mul_ps(_mm512_mul_ps(z, z), z);
			__m512 v = _mm512_mul_ps(_mm512_set1_ps(-2.0f * GELU_C),
			                         _mm512_fmadd_ps(_mm512_set1_ps(0.044715f), z3, z));
			r = _mm512_div_ps(z, _mm512_add_ps(one16, exp16(v)));
		} else {
			__m512 y = _mm512_mul_ps(z, _mm512_set1_ps(0.70710678118654752f));
			__m512 a = _mm512_andnot_ps(sign16, y);
			__m512 t = _mm512_div_ps(one16, _mm512_fmadd_ps(_mm512_set1_ps(AS_P), a, one16));
			__m512 p = _mm512_fmadd_ps(_mm512_set1_ps(AS_A5), t, _mm512_set1_ps(AS_A4));
			p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(AS_A3));
			p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(AS_A2));
			p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(AS_A1));
			p = _mm512_mul_ps(p, t);
			__m512 er = _mm512_fnmadd_ps(p, exp16(_mm512_xor_ps(sign16, _mm512_mul_ps(a, a))), one16);
			er = _mm512_or_ps(er, _mm512_and_ps(sign16, y));   /* erf is odd */
			r = _mm512_mul_ps(_mm512_mul_ps(half16, z), _mm512_add_ps(one16, er));
		}
		if (u)
			r = _mm512_mul_ps(r, _mm512_loadu_ps(u + i));
		_mm512_storeu_ps(g + i, r);
	}
#endif
#ifdef __AVX2__
	const __m256 one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f);
	const __m256 sign = _mm256_set1_ps(-0.0f);
	for (; i + 8 <= n; i += 8) {
		__m256 z = _mm256_loadu_ps(g + i), r;
		if (tanh_form) {
			__m256 z3 = _mm256_mul_ps(_mm256_mul_ps(z, z), z);
			__m256 v = _mm256_mul_ps(_mm256_set1_ps(-2.0f * GELU_C),
			                         _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), z3, z));
			r = _mm256_div_ps(z, _mm256_add_ps(one, exp8(v)));
		} else {
			__m256 y = _mm256_mul_ps(z, _mm256_set1_ps(0.70710678118654752f));
			__m256 a = _mm256_andnot_ps(sign, y);
			__m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(AS_P), a, one));
			__m256 p = _mm256_fmadd_ps(_mm256_set1_ps(AS_A5), t, _mm256_set1_ps(AS_A4));
			p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(AS_A3));
			p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(AS_A2));
			p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(AS_A1));
			p = _mm256_mul_ps(p, t);
			__m256 er = _mm256_fnmadd_ps(p, exp8(_mm256_xor_ps(sign, _mm256_mul_ps(a, a))), one);
			er = _mm256_or_ps(er, _mm256_and_ps(sign, y));   /* erf is odd */
			r = _mm256_mul_ps(_mm256_mul_ps(half, z), _mm256_add_ps(one, er));
		}
		if (u)
			r = _mm256_mul_ps(r, _mm256_loadu_ps(u + i));
		_mm256_storeu_ps(g + i, r);
	}
#endif
	for (; i < n; i++) {
		float z = g[i], r;
		if (tanh_form)
			r = z / (1.0f + expf(-2.0f * GELU_C * (z + 0.044715f * z * z * z)));
		else
			r = 0.5f * z * (1.0f + erf_as(z * 0.70710678118654752f));
		g[i] = u ? r * u[i] : r;
	}
}

static void KS(softcap)(float *x, long n, float cap)
{
	float inv = 1.0f / cap;
	for (long i = 0; i < n; i++)
		x[i] = cap * tanhf(x[i] * inv);
}

static float KS(max)(const float *x, long n)
{
	float m = -INFINITY;
	long i = 0;
#ifdef __AVX512F__
	__m512 u = _mm512_set1_ps(-INFINITY);
	for (; i + 16 <= n; i += 16)
		u = _mm512_max_ps(u, _mm512_loadu_ps(x + i));
	if (i < n) {
		u = _mm512_max_ps(u, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), tailmask(n - i), x + i));
		i = n;
	}
	m = _mm512_reduce_max_ps(u);
#endif
#ifdef __AVX2__
	__m256 v = _mm256_set1_ps(-INFINITY);
	for (; i + 8 <= n; i += 8)
		v = _mm256_max_ps(v, _mm256_loadu_ps(x + i));
	float t[8];
	_mm256_storeu_ps(t, v);
	for (int k = 0; k < 8; k++)
		m = t[k] > m ? t[k] : m;
#endif
	for (; i < n; i++)
		m = x[i] > m ? x[i] : m;
	return m;
}

static double KS(exp_shift)(float *x, long n, float max)
{
	long i = 0;
	double s = 0;
#ifdef __AVX2__
	__m256 mx = _mm256_set1_ps(max), acc = _mm256_setzero_ps();
	for (; i + 8 <= n; i += 8) {
		__m256 v = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), mx));
		_mm256_storeu_ps(x + i, v);
		acc = _mm256_add_ps(acc, v);
	}
	float t[8];
	_mm256_storeu_ps(t, acc);
	for (int k = 0; k < 8; k++)
		s += t[k];
#endif
	for (; i < n; i++) {
		x[i] = expf(x[i] - max);
		s += x[i];
	}
	return s;
}

static double KS(exp_shift_to)(float *y, const float *x, long n, float max)
{
	long i = 0;
	double s = 0;
#ifdef __AVX512F__
	__m512 wm = _mm512_set1_ps(max), b0 = _mm512_setzero_ps(), b1 = _mm512_setzero_ps();
	for (; i + 32 <= n; i += 32) {
		__m512 v0 = exp16_neg(_mm512_sub_ps(_mm512_loadu_ps(x + i), wm));
		__m512 v1 = exp16_neg(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), wm));
		_mm512_storeu_ps(y + i, v0);
		_mm512_storeu_ps(y + i + 16, v1);
		b0 = _mm512_add_ps(b0, v0);
		b1 = _mm512_add_ps(b1, v1);
	}
	for (; i + 16 <= n; i += 16) {
		__m512 v = exp16_neg(_mm512_sub_ps(_mm512_loadu_ps(x + i), wm));
		_mm512_storeu_ps(y + i, v);
		b0 = _mm512_add_ps(b0, v);
	}
	if (i < n) {   /* masked lanes: exp(0 - max) is never stored nor summed */
		__mmask16 k = tailmask(n - i);
		__m512 v = _mm512_maskz_mov_ps(k, exp16_neg(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), wm)));
		_mm512_mask_storeu_ps(y + i, k, v);
		b0 = _mm512_add_ps(b0, v);
		i = n;
	}
	s += hsum16(_mm512_add_ps(b0, b1));
#endif
#ifdef __AVX2__
	__m256 mx = _mm256_set1_ps(max), a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
	for (; i + 16 <= n; i += 16) {
		__m256 v0 = exp8_neg(_mm256_sub_ps(_mm256_loadu_ps(x + i), mx));
		__m256 v1 = exp8_neg(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), mx));
		_mm256_storeu_ps(y + i, v0);
		_mm256_storeu_ps(y + i + 8, v1);
		a0 = _mm256_add_ps(a0, v0);
		a1 = _mm256_add_ps(a1, v1);
	}
	for (; i + 8 <= n; i += 8) {
		__m256 v = exp8_neg(_mm256_sub_ps(_mm256_loadu_ps(x + i), mx));
		_mm256_storeu_ps(y + i, v);
		a0 = _mm256_add_ps(a0, v);
	}
	float t[8];
	_mm256_storeu_ps(t, _mm256_add_ps(a0, a1));
	for (int k = 0; k < 8; k++)
		s += t[k];
#endif
	for (; i < n; i++) {
		y[i] = expf(x[i] - max);
		s += y[i];
	}
	return s;
}

/* exp_shift_to of x[i] scale (the product rounded to float first; scale 1:
 * x as it is), with each y[i] also rounded to bf16 into yb[i] (nearest
 * even, as io/stconv's st_f32_to_bf16 for finite values): the bf16
 * attention's P~ in one pass over the scores.  The same values and sum as
 * exp_shift_to on the scaled row, bit for bit. */
static double KS(exp_shift_to16)(float *y, uint16_t *yb, const float *x, long n, float max, float scale)
{
#ifdef __AVX512F__
	long i = 0;
	__m512 wm = _mm512_set1_ps(max), sc = _mm512_set1_ps(scale), b0 = _mm512_setzero_ps(),
	       b1 = _mm512_setzero_ps();
	for (; i + 32 <= n; i += 32) {
		__m512 v0 = exp16_neg(_mm512_sub_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), sc), wm));
		__m512 v1 = exp16_neg(_mm512_sub_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i + 16), sc), wm));
		_mm512_storeu_ps(y + i, v0);
		_mm512_storeu_ps(y + i + 16, v1);
		_mm256_storeu_si256((__m256i *)(yb + i), round16_512(v0));
		_mm256_storeu_si256((__m256i *)(yb + i + 16), round16_512(v1));
		b0 = _mm512_add_ps(b0, v0);
		b1 = _mm512_add_ps(b1, v1);
	}
	for (; i + 16 <= n; i += 16) {
		__m512 v = exp16_neg(_mm512_sub_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), sc), wm));
		_mm512_storeu_ps(y + i, v);
		_mm256_storeu_si256((__m256i *)(yb + i), round16_512(v));
		b0 = _mm512_add_ps(b0, v);
	}
	if (i < n) {   /* masked lanes: never stored nor summed */
		__mmask16 k = tailmask(n - i);
		__m512 v = _mm512_maskz_mov_ps(
		        k, exp16_neg(_mm512_sub_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), sc), wm)));
		_mm512_mask_storeu_ps(y + i, k, v);
		_mm256_mask_storeu_epi16(yb + i, k, round16_512(v));
		b0 = _mm512_add_ps(b0, v);
	}
	return hsum16(_mm512_add_ps(b0, b1));
#else
	const float *src = x;
	if (scale != 1.0f) {   /* y as the scaled row, then exp_shift_to in place */
		for (long i = 0; i < n; i++)
			y[i] = x[i] * scale;
		src = y;
	}
	double s = KS(exp_shift_to)(y, src, n, max);
	for (long i = 0; i < n; i++)
		yb[i] = st_f32_to_bf16(y[i]);
	return s;
#endif
}

static void KS(rope)(float *x, long half, const float *cs, const float *sn)
{
	/* HF: q*cos + rotate_half(q)*sin, rotate_half(q) = cat(-q2, q1); the
	 * vector sections do the scalar loop's operations, the same values */
	long i = 0;
#ifdef __AVX512F__
	for (; i + 16 <= half; i += 16) {
		__m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + half);
		__m512 c = _mm512_loadu_ps(cs + i), s = _mm512_loadu_ps(sn + i);
		_mm512_storeu_ps(x + i, _mm512_sub_ps(_mm512_mul_ps(a, c), _mm512_mul_ps(b, s)));
		_mm512_storeu_ps(x + i + half, _mm512_add_ps(_mm512_mul_ps(b, c), _mm512_mul_ps(a, s)));
	}
#endif
#ifdef __AVX2__
	for (; i + 8 <= half; i += 8) {
		__m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + half);
		__m256 c = _mm256_loadu_ps(cs + i), s = _mm256_loadu_ps(sn + i);
		_mm256_storeu_ps(x + i, _mm256_sub_ps(_mm256_mul_ps(a, c), _mm256_mul_ps(b, s)));
		_mm256_storeu_ps(x + i + half, _mm256_add_ps(_mm256_mul_ps(b, c), _mm256_mul_ps(a, s)));
	}
#endif
	for (; i < half; i++) {
		float a = x[i], b = x[i + half];
		x[i] = a * cs[i] - b * sn[i];
		x[i + half] = b * cs[i] + a * sn[i];
	}
}

static void KS(ss_rmsnorm)(float *o, const float *x, const float *w, long n, double eps)
{
	/* HF LlamaRMSNorm: x * rsqrt(mean(x^2) + eps), then times weight */
	float r = (float)(1.0 / sqrt(KS(sumsq)(x, n) / (double)n + eps));
	long i = 0;
#ifdef __AVX512F__   /* the scalar loop's operations: the same values */
	for (__m512 rv = _mm512_set1_ps(r); i + 16 <= n; i += 16)
		_mm512_storeu_ps(o + i, _mm512_mul_ps(_mm512_loadu_ps(w + i), _mm512_mul_ps(_mm512_loadu_ps(x + i), rv)));
#endif
#ifdef __AVX2__
	for (__m256 rv = _mm256_set1_ps(r); i + 8 <= n; i += 8)
		_mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_loadu_ps(w + i), _mm256_mul_ps(_mm256_loadu_ps(x + i), rv)));
#endif
	for (; i < n; i++)
		o[i] = w[i] * (x[i] * r);
}

static void KS(ss_layernorm)(float *o, const float *x, const float *w, const float *b, long n, double eps)
{
	/* torch LayerNorm: (x - mean) / sqrt(var + eps) * w + b, var biased;
	 * the mean and the variance summed in double, lane by lane first */
	double m = 0, v = 0;
	long i = 0;
#ifdef __AVX512F__
	__m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
	for (; i + 16 <= n; i += 16) {
		s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm256_loadu_ps(x + i)));
		s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8)));
	}
	m += _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
#endif
#ifdef __AVX2__
	__m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
	for (; i + 8 <= n; i += 8) {
		a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm_loadu_ps(x + i)));
		a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4)));
	}
	m += hsum4d(_mm256_add_pd(a0, a1));
#endif
	for (; i < n; i++)
		m += x[i];
	m /= (double)n;
	i = 0;
#ifdef __AVX512F__
	__m512d mv = _mm512_set1_pd(m);
	s0 = s1 = _mm512_setzero_pd();
	for (; i + 16 <= n; i += 16) {
		__m512d d0 = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i)), mv);
		__m512d d1 = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8)), mv);
		s0 = _mm512_fmadd_pd(d0, d0, s0);
		s1 = _mm512_fmadd_pd(d1, d1, s1);
	}
	v += _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
#endif
#ifdef __AVX2__
	__m256d mw = _mm256_set1_pd(m);
	a0 = a1 = _mm256_setzero_pd();
	for (; i + 8 <= n; i += 8) {
		__m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), mw);
		__m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i + 4)), mw);
		a0 = _mm256_fmadd_pd(d0, d0, a0);
		a1 = _mm256_fmadd_pd(d1, d1, a1);
	}
	v += hsum4d(_mm256_add_pd(a0, a1));
#endif
	for (; i < n; i++)
		v += ((double)x[i] - m) * ((double)x[i] - m);
	float r = (float)(1.0 / sqrt(v / (double)n + eps)), mf = (float)m;
	i = 0;
#ifdef __AVX512F__   /* the scalar loop's operations */
	for (__m512 rv = _mm512_set1_ps(r), m16 = _mm512_set1_ps(mf); i + 16 <= n; i += 16) {
		__m512 t = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), m16), rv);
		_mm512_storeu_ps(o + i, _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(w + i), t), _mm512_loadu_ps(b + i)));
	}
#endif
#ifdef __AVX2__
	for (__m256 rv = _mm256_set1_ps(r), m8 = _mm256_set1_ps(mf); i + 8 <= n; i += 8) {
		__m256 t = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), m8), rv);
		_mm256_storeu_ps(o + i, _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(w + i), t), _mm256_loadu_ps(b + i)));
	}
#endif
	for (; i < n; i++)
		o[i] = w[i] * ((x[i] - mf) * r) + b[i];
}

static void KS(ss_rope)(float *x, long rotary_dim, long pos, const float *inv_freq)
{
	long half = rotary_dim / 2;
	float cs[512], sn[512];
	for (long i = 0; i < half && i < 512; i++) {
		float ang = (float)pos * inv_freq[i]; /* f32 product, as HF's f32 matmul */
		cs[i] = (float)cos((double)ang);
		sn[i] = (float)sin((double)ang);
	}
	KS(rope)(x, half, cs, sn);
}

static double KS(ss_softmax)(float *x, long n)
{
	float m = KS(max)(x, n);
	double s = KS(exp_shift)(x, n, m);
	KS(scale)(x, n, (float)(1.0 / s));
	return s;
}

const k_ops KS(k_ops) = {
	.name = KS_NAME,
	.sumsq = KS(sumsq),
	.dot = KS(dot),
	.add = KS(add),
	.axpy = KS(axpy),
	.scale = KS(scale),
	.silu_mul = KS(silu_mul),
	.gelu_mul = KS(gelu_mul),
	.softcap = KS(softcap),
	.max = KS(max),
	.exp_shift = KS(exp_shift),
	.exp_shift_to = KS(exp_shift_to),
	.exp_shift_to16 = KS(exp_shift_to16),
	.rope = KS(rope),
	.rmsnorm = KS(ss_rmsnorm),
	.layernorm = KS(ss_layernorm),
	.rope_pos = KS(ss_rope),
	.softmax = KS(ss_softmax),
};
