/* attn_kern_avx512.c - attention's tile kernels for avx512 (its -m flags from the Makefile); see attn_kern_body.h. */
#define AK(name) name##_avx512
#define AK_NAME "avx512"
#include "engine/attn_kern_body.h"
