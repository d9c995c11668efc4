/* attn_kern_avx512.c - attention's tile kernels for avx512 (its -m flags from the Makefile); see attn_kern_body.h. */
#define AK(name) name##_avx512
#define AK_NAME "avx512"
#include "engine/attn_kern_body.h"
/* the bf16 mode's tiles, emulated (attn_kern16_body.h) */
#define AK16(name) name##_avx512
#define AK16_NAME "bf16-avx512"
#include "engine/attn_kern16_body.h"
