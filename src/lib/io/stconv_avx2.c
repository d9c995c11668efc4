/* stconv_avx2.c - bf16 and f16 rows to f32 with AVX2 and F16C (the
 * Makefile's -m flags for *_avx2.c); see stconv_impl.h. */
#include "io/stconv_impl.h"

#include <immintrin.h>
#include <stdint.h>

/* Eight elements from s: bf16 is the high half of an f32; f16 by F16C. */
static inline __m256 half8(const uint16_t *s, int bf16)
{
	__m128i v = _mm_loadu_si128((const __m128i *)s);
	if (bf16)
		return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
	return _mm256_cvtph_ps(v);
}

long st_conv_half_avx2(float *dst, const uint16_t *s, int bf16, long n, int stream)
{
	long i = 0;
	if (stream) {
		for (; i + 8 <= n; i += 8)
			_mm256_stream_ps(dst + i, half8(s + i, bf16));
		_mm_sfence();
	}
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(dst + i, half8(s + i, bf16));
	return i;
}
