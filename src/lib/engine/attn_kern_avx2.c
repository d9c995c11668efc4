/* attn_kern_avx2.c - attention's tile kernels for avx2 (its -m flags from the Makefile); see attn_kern_body.h. */
#define AK(name) name##_avx2
#define AK_NAME "avx2"
#include "engine/attn_kern_body.h"
/* the bf16 mode's tiles, emulated (attn_kern16_body.h) */
#define AK16(name) name##_avx2
#define AK16_NAME "bf16-avx2"
#include "engine/attn_kern16_body.h"
