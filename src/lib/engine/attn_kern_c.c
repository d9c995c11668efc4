/* attn_kern_c.c - attention's tile kernels for portable C; see attn_kern_body.h. */
#define AK(name) name##_c
#define AK_NAME "c"
#include "engine/attn_kern_body.h"
