/* gemv.c - bf16-weight matrix-vector products on the CPU's best path
 * (see gemv.h).  Every SIMD path handles four rows at once (x read once
 * for four weight rows), one f32 accumulator per row, the tail of a row
 * (K not a multiple of the vector width) in scalar f32. */
#include "engine/gemv.h"
#include "util/cpu.h"

#include <stdlib.h>
#include <string.h>
#include <immintrin.h>

static inline float bf16_f32(uint16_t h)
{
	union { uint32_t u; float f; } c = {(uint32_t)h << 16};
	return c.f;
}

/* ---- plain C ----------------------------------------------------------- */

static void gemv_c(long N, long K, const uint16_t *W, long ldw, const float *x, float *y)
{
	for (long i = 0; i < N; i++) {
		const uint16_t *w = W + i * ldw;
		float s = 0;
		for (long k = 0; k < K; k++)
			s += bf16_f32(w[k]) * x[k];
		y[i] = s;
	}
}

static void gemv_dot_c(long N, long K, const uint16_t *W, long ldw, const uint16_t *xb, float *y)
{
	for (long i = 0; i < N; i++) {
		const uint16_t *w = W + i * ldw;
		float s = 0;
		for (long k = 0; k < K; k++)
			s += bf16_f32(w[k]) * bf16_f32(xb[k]);
		y[i] = s;
	}
}

/* ---- AVX2 + FMA -------------------------------------------------------- */

__attribute__((target("avx2,fma")))
static inline __m256 wide8(const uint16_t *p)
{
	__m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
	return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

__attribute__((target("avx2,fma")))
static inline float hsum8(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma")))
static void gemv_avx2(long N, long K, const uint16_t *W, long ldw, const float *x, float *y)
{
	long K8 = K & ~7L, i = 0;
	for (; i + 4 <= N; i += 4) {
		const uint16_t *w0 = W + i * ldw, *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
		__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
		for (long k = 0; k < K8; k += 8) {
			__m256 xv = _mm256_loadu_ps(x + k);
			a0 = _mm256_fmadd_ps(wide8(w0 + k), xv, a0);
			a1 = _mm256_fmadd_ps(wide8(w1 + k), xv, a1);
			a2 = _mm256_fmadd_ps(wide8(w2 + k), xv, a2);
			a3 = _mm256_fmadd_ps(wide8(w3 + k), xv, a3);
		}
		float s[4] = {hsum8(a0), hsum8(a1), hsum8(a2), hsum8(a3)};
		for (long k = K8; k < K; k++) {
			s[0] += bf16_f32(w0[k]) * x[k];
			s[1] += bf16_f32(w1[k]) * x[k];
			s[2] += bf16_f32(w2[k]) * x[k];
			s[3] += bf16_f32(w3[k]) * x[k];
		}
		memcpy(y + i, s, sizeof s);
	}
	for (; i < N; i++) {
		const uint16_t *w = W + i * ldw;
		__m256 a = _mm256_setzero_ps();
		for (long k = 0; k < K8; k += 8)
			a = _mm256_fmadd_ps(wide8(w + k), _mm256_loadu_ps(x + k), a);
		float s = hsum8(a);
		for (long k = K8; k < K; k++)
			s += bf16_f32(w[k]) * x[k];
		y[i] = s;
	}
}

/* ---- AVX-512F ---------------------------------------------------------- */

__attribute__((target("avx512f")))
static inline __m512 wide16(const uint16_t *p)
{
	__m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
	return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}

__attribute__((target("avx512f")))
static void gemv_avx512(long N, long K, const uint16_t *W, long ldw, const float *x, float *y)
{
	long K16 = K & ~15L, i = 0;
	for (; i + 4 <= N; i += 4) {
		const uint16_t *w0 = W + i * ldw, *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
		__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
		for (long k = 0; k < K16; k += 16) {
			__m512 xv = _mm512_loadu_ps(x + k);
			a0 = _mm512_fmadd_ps(wide16(w0 + k), xv, a0);
			a1 = _mm512_fmadd_ps(wide16(w1 + k), xv, a1);
			a2 = _mm512_fmadd_ps(wide16(w2 + k), xv, a2);
			a3 = _mm512_fmadd_ps(wide16(w3 + k), xv, a3);
		}
		float s[4] = {_mm512_reduce_add_ps(a0), _mm512_reduce_add_ps(a1),
		              _mm512_reduce_add_ps(a2), _mm512_reduce_add_ps(a3)};
		for (long k = K16; k < K; k++) {
			s[0] += bf16_f32(w0[k]) * x[k];
			s[1] += bf16_f32(w1[k]) * x[k];
			s[2] += bf16_f32(w2[k]) * x[k];
			s[3] += bf16_f32(w3[k]) * x[k];
		}
		memcpy(y + i, s, sizeof s);
	}
	for (; i < N; i++) {
		const uint16_t *w = W + i * ldw;
		__m512 a = _mm512_setzero_ps();
		for (long k = 0; k < K16; k += 16)
			a = _mm512_fmadd_ps(wide16(w + k), _mm512_loadu_ps(x + k), a);
		float s = _mm512_reduce_add_ps(a);
		for (long k = K16; k < K; k++)
			s += bf16_f32(w[k]) * x[k];
		y[i] = s;
	}
}

/* bf16 inputs on AVX-512F: both sides widened, as the C path */
__attribute__((target("avx512f")))
static void gemv_dot_avx512(long N, long K, const uint16_t *W, long ldw, const uint16_t *xb, float *y)
{
	long K16 = K & ~15L;
	for (long i = 0; i < N; i++) {
		const uint16_t *w = W + i * ldw;
		__m512 a = _mm512_setzero_ps();
		for (long k = 0; k < K16; k += 16)
			a = _mm512_fmadd_ps(wide16(w + k), wide16(xb + k), a);
		float s = _mm512_reduce_add_ps(a);
		for (long k = K16; k < K; k++)
			s += bf16_f32(w[k]) * bf16_f32(xb[k]);
		y[i] = s;
	}
}

/* ---- AVX512_BF16: vdpbf16ps, 32 bf16 pairs per instruction ------------- */

__attribute__((target("avx512f,avx512bf16")))
static void gemv_dot_bf16(long N, long K, const uint16_t *W, long ldw, const uint16_t *xb, float *y)
{
	long K32 = K & ~31L, i = 0;
	for (; i + 4 <= N; i += 4) {
		const uint16_t *w0 = W + i * ldw, *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
		__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
		for (long k = 0; k < K32; k += 32) {
			__m512bh xv = (__m512bh)_mm512_loadu_si512(xb + k);
			a0 = _mm512_dpbf16_ps(a0, (__m512bh)_mm512_loadu_si512(w0 + k), xv);
			a1 = _mm512_dpbf16_ps(a1, (__m512bh)_mm512_loadu_si512(w1 + k), xv);
			a2 = _mm512_dpbf16_ps(a2, (__m512bh)_mm512_loadu_si512(w2 + k), xv);
			a3 = _mm512_dpbf16_ps(a3, (__m512bh)_mm512_loadu_si512(w3 + k), xv);
		}
		float s[4] = {_mm512_reduce_add_ps(a0), _mm512_reduce_add_ps(a1),
		              _mm512_reduce_add_ps(a2), _mm512_reduce_add_ps(a3)};
		for (long k = K32; k < K; k++) {
			float xk = bf16_f32(xb[k]);
			s[0] += bf16_f32(w0[k]) * xk;
			s[1] += bf16_f32(w1[k]) * xk;
			s[2] += bf16_f32(w2[k]) * xk;
			s[3] += bf16_f32(w3[k]) * xk;
		}
		memcpy(y + i, s, sizeof s);
	}
	for (; i < N; i++) {
		const uint16_t *w = W + i * ldw;
		__m512 a = _mm512_setzero_ps();
		for (long k = 0; k < K32; k += 32)
			a = _mm512_dpbf16_ps(a, (__m512bh)_mm512_loadu_si512(w + k),
			                     (__m512bh)_mm512_loadu_si512(xb + k));
		float s = _mm512_reduce_add_ps(a);
		for (long k = K32; k < K; k++)
			s += bf16_f32(w[k]) * bf16_f32(xb[k]);
		y[i] = s;
	}
}

/* ---- the path ---------------------------------------------------------- */

/* -1: the process's level (util/cpu.h); else gemv_set_path's */
static int path = -1;

ss_gemv_path gemv_cpu_best(void)
{
	ss_isa b = ss_cpu_best();   /* the same order of levels, AMX adding nothing here */
	return (ss_gemv_path)(b > SS_ISA_AVX512BF16 ? SS_ISA_AVX512BF16 : b);
}

const char *gemv_path_name(ss_gemv_path p)
{
	return ss_isa_name((ss_isa)p);
}

void gemv_set_path(ss_gemv_path p)
{
	ss_gemv_path best = gemv_cpu_best();
	path = p < best ? p : best;
}

static ss_gemv_path chosen(void)
{
	ss_isa l = ss_cpu_isa();
	l = l > SS_ISA_AVX512BF16 ? SS_ISA_AVX512BF16 : l;
	return path < 0 ? (ss_gemv_path)l : (ss_gemv_path)path;
}

ss_gemv_path gemv_dot_path(void)
{
	return chosen();
}

ss_gemv_path gemv_path(void)
{
	ss_gemv_path p = chosen();
	return p == SS_GEMV_AVX512BF16 ? SS_GEMV_AVX512 : p;
}

void gemv_bf16(long N, long K, const uint16_t *W, long ldw, const float *x, float *y)
{
	switch (gemv_path()) {
	case SS_GEMV_AVX512BF16:
	case SS_GEMV_AVX512: gemv_avx512(N, K, W, ldw, x, y); break;
	case SS_GEMV_AVX2: gemv_avx2(N, K, W, ldw, x, y); break;
	default: gemv_c(N, K, W, ldw, x, y); break;
	}
}

void gemv_bf16_dot(long N, long K, const uint16_t *W, long ldw, const uint16_t *xb, float *y)
{
	switch (gemv_dot_path()) {
	case SS_GEMV_AVX512BF16: gemv_dot_bf16(N, K, W, ldw, xb, y); break;
	case SS_GEMV_AVX512: gemv_dot_avx512(N, K, W, ldw, xb, y); break;
	default: gemv_dot_c(N, K, W, ldw, xb, y); break;   /* AVX2: as C (bf16 mode needs AVX-512) */
	}
}
