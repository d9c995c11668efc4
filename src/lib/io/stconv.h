/* stconv.h - the element types of model weights and their conversion:
 * f32, f16 (IEEE binary16) and bf16 (the high half of an f32).  No
 * container knowledge: safetensors (st.h) tags each tensor with an
 * st_dtype, the forward pass converts rows to f32 through these, and the
 * KV cache and model writers round f32 to bf16. */
#ifndef SS_STCONV_H
#define SS_STCONV_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum st_dtype { ST_F32 = 0, ST_F16, ST_BF16 } st_dtype;

size_t st_dtype_size(st_dtype d);        /* bytes per element: 4 or 2 */
const char *st_dtype_name(st_dtype d);   /* "f32", "f16", "bf16" */
/* The dtype named s ("f32", "f16" or "bf16"): 0, or -1 for another name. */
int st_dtype_parse(const char *s, st_dtype *d);

/* Convert n elements starting at element off of src (elements of type dt,
 * 2-byte ones need not be aligned) to f32 in dst, with AVX-512 or AVX2
 * as the CPU has them (util/cpu.h; stconv_impl.h).  From 2^18 elements on,
 * the vector paths write with non-temporal stores (a whole weight matrix
 * that is not read back while still in cache). */
void st_conv_f32(float *dst, const void *src, st_dtype dt, long off, long n);
/* the row conversion in use: "c", "avx2", "avx512" */
const char *st_conv_kernels_name(void);

/* Scalar conversions (exact; f16 subnormals, inf and NaN handled). */
static inline float st_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}
float st_f16_to_f32(uint16_t h);
/* round to nearest even (NaN kept NaN); inline, the one home of this rounding
 * (the engine's bf16 block and attention packing call it per element) */
static inline uint16_t st_f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);          /* quiet NaN */
	u += 0x7fffu + ((u >> 16) & 1);                     /* round to nearest even */
	return (uint16_t)(u >> 16);
}

#endif
