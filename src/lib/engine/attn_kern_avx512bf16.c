/* attn_kern_avx512bf16.c - attention's bf16 tile kernels on vdpbf16ps
 * (its -m flags from the Makefile); see attn_kern16_body.h.  The f32
 * tiles of this level are attn_kern_avx512.c's. */
#define AK16(name) name##_avx512bf16
#define AK16_NAME "bf16-avx512bf16"
#include "engine/attn_kern16_body.h"
