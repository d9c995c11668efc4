/* stconv.c - element types of weights: f32, f16 and bf16 to f32 (scalars
 * exactly, rows with AVX2/F16C where built for it) and f32 to bf16; see
 * stconv.h. */
#include "io/stconv.h"

#include <string.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

size_t st_dtype_size(st_dtype d) { return d == ST_F32 ? 4 : 2; }

const char *st_dtype_name(st_dtype d)
{
	static const char *const n[] = {"f32", "f16", "bf16"};
	return n[d];
}

int st_dtype_parse(const char *s, st_dtype *d)
{
	for (int i = ST_F32; i <= ST_BF16; i++)
		if (!strcmp(s, st_dtype_name((st_dtype)i))) {
			*d = (st_dtype)i;
			return 0;
		}
	return -1;
}

float st_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

float st_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, ex = (h >> 10) & 0x1f, man = h & 0x3ff, u;
	if (ex == 0x1f) {
		u = sign | 0x7f800000u | (man << 13);          /* inf, NaN */
	} else if (ex == 0) {
		if (!man) {
			u = sign;                                  /* zero */
		} else {                                       /* subnormal: normalise */
			int s = -1;
			do {
				s++;
				man <<= 1;
			} while (!(man & 0x400));
			u = sign | ((uint32_t)(127 - 15 - s) << 23) | ((man & 0x3ff) << 13);
		}
	} else {
		u = sign | ((ex + 127 - 15) << 23) | (man << 13);
	}
	float f;
	memcpy(&f, &u, 4);
	return f;
}

uint16_t st_f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);          /* quiet NaN */
	u += 0x7fffu + ((u >> 16) & 1);                     /* round to nearest even */
	return (uint16_t)(u >> 16);
}

/* elements from which st_conv_f32 writes with non-temporal stores (1 MiB of f32) */
#define ST_STREAM_MIN (1L << 18)

/* Element i of a bf16 / f16 tensor (tensor data need not be 2-byte aligned). */
static inline float half_at(const uint16_t *s, long i, int bf16)
{
	uint16_t h;
	memcpy(&h, s + i, sizeof h);
	return bf16 ? st_bf16_to_f32(h) : st_f16_to_f32(h);
}

#if defined __AVX2__ && defined __F16C__
#define ST_SIMD 1
/* Eight elements from s: bf16 is the high half of an f32; f16 by F16C. */
static inline __m256 half8(const uint16_t *s, int bf16)
{
	__m128i v = _mm_loadu_si128((const __m128i *)s);
	if (bf16)
		return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
	return _mm256_cvtph_ps(v);
}
#endif

void st_conv_f32(float *dst, const void *src, st_dtype dt, long off, long n)
{
	if (dt == ST_F32) {
		memcpy(dst, (const float *)src + off, (size_t)n * 4);
		return;
	}
	const uint16_t *s = (const uint16_t *)src + off;
	int bf16 = dt == ST_BF16;
	long i = 0;
#ifdef ST_SIMD
	if (n >= ST_STREAM_MIN) {
		/* a whole weight matrix: non-temporal stores skip reading the
		 * destination's cache lines first (a third of the traffic); the
		 * data is not read back before it would have left the cache
		 * anyway */
		for (; ((uintptr_t)(dst + i) & 31) && i < n; i++)
			dst[i] = half_at(s, i, bf16);
		for (; i + 8 <= n; i += 8)
			_mm256_stream_ps(dst + i, half8(s + i, bf16));
		_mm_sfence();
	}
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(dst + i, half8(s + i, bf16));
#endif
	for (; i < n; i++)
		dst[i] = half_at(s, i, bf16);
}
