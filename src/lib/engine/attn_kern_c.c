/* attn_kern_c.c - attention's tile kernels for portable C; see attn_kern_body.h. */
#define AK(name) name##_c
#define AK_NAME "c"
#include "engine/attn_kern_body.h"
/* the bf16 mode's tiles, emulated (attn_kern16_body.h) */
#define AK16(name) name##_c
#define AK16_NAME "bf16-c"
#include "engine/attn_kern16_body.h"
