/* round16.h - f32 -> bf16 rounding for the kernels compiled per
 * instruction set (kern_body.h, attn_kern16_body.h, attn_kern_amx.c): round
 * to nearest even by integer addition, as io/stconv's st_f32_to_bf16 for
 * finite values, subnormals kept (AVX512_BF16's vcvtneps2bf16 would flush
 * them).  Library-internal. */
#ifndef SS_ROUND16_H
#define SS_ROUND16_H

#include "io/stconv.h"

#include <stdint.h>

#ifdef __AVX512F__
#include <immintrin.h>

/* the 16 floats of v, each rounded to bf16 */
static inline __m256i round16_512(__m512 v)
{
	__m512i u = _mm512_castps_si512(v);
	u = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
	                                         _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1))));
	return _mm512_cvtepi32_epi16(_mm512_srli_epi32(u, 16));
}

/* y[i] = bf16(x[i]) for i < n (finite x) */
static inline void round16_row_512(const float *x, uint16_t *y, long n)
{
	long i = 0;
	for (; i + 16 <= n; i += 16)
		_mm256_storeu_si256((__m256i *)(y + i), round16_512(_mm512_loadu_ps(x + i)));
	for (; i < n; i++)
		y[i] = st_f32_to_bf16(x[i]);
}
#endif

#endif
