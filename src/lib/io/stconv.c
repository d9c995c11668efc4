/* stconv.c - element types of weights: f32, f16 and bf16 to f32 (scalars
 * exactly, rows with AVX-512 or AVX2/F16C as the CPU has them:
 * stconv_impl.h) and f32 to bf16; see stconv.h. */
#include "io/stconv.h"
#include "io/stconv_impl.h"
#include "util/cpu.h"

#include <string.h>

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

/* Element i of a bf16 / f16 tensor (tensor data need not be 2-byte aligned). */
static inline float half_at(const uint16_t *s, long i, int bf16)
{
	uint16_t h;
	memcpy(&h, s + i, sizeof h);
	return bf16 ? st_bf16_to_f32(h) : st_f16_to_f32(h);
}

const char *st_conv_kernels_name(void)
{
	static const char *const n[SS_ISA_N] = {"c", "avx2", "avx512", "avx512", "avx512"};
	return n[ss_cpu_isa()];
}

void st_conv_f32(float *dst, const void *src, st_dtype dt, long off, long n)
{
	if (dt == ST_F32) {
		memcpy(dst, (const float *)src + off, (size_t)n * 4);
		return;
	}
	const uint16_t *s = (const uint16_t *)src + off;
	int bf16 = dt == ST_BF16;
	long i = 0;
	ss_isa isa = ss_cpu_isa();
	int stream = n >= ST_STREAM_MIN && isa >= SS_ISA_AVX2;
	if (stream) {   /* to the vector width's alignment */
		uintptr_t m = isa >= SS_ISA_AVX512 ? 63 : 31;
		for (; ((uintptr_t)(dst + i) & m) && i < n; i++)
			dst[i] = half_at(s, i, bf16);
	}
	if (isa >= SS_ISA_AVX512)
		i += st_conv_half_avx512(dst + i, s + i, bf16, n - i, stream);
	else if (isa == SS_ISA_AVX2)
		i += st_conv_half_avx2(dst + i, s + i, bf16, n - i, stream);
	for (; i < n; i++)
		dst[i] = half_at(s, i, bf16);
}
