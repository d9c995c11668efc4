/* stconv_avx512.c - bf16 and f16 rows to f32 with AVX-512 (the Makefile's
 * -m flags for *_avx512.c); see stconv_impl.h. */
#include "io/stconv_impl.h"

#include <immintrin.h>
#include <stdint.h>

/* Sixteen elements from s: bf16 is the high half of an f32; f16 by
 * vcvtph2ps. */
static inline __m512 half16(const uint16_t *s, int bf16)
{
	__m256i v = _mm256_loadu_si256((const __m256i *)s);
	if (bf16)
		return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
	return _mm512_cvtph_ps(v);
}

long st_conv_half_avx512(float *dst, const uint16_t *s, int bf16, long n, int stream)
{
	long i = 0;
	if (stream) {
		for (; i + 16 <= n; i += 16)
			_mm512_stream_ps(dst + i, half16(s + i, bf16));
		_mm_sfence();
	}
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(dst + i, half16(s + i, bf16));
	return i;
}
