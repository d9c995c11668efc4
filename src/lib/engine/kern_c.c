/* kern_c.c - the row kernels for portable C; see kern_impl.h. */
#define KS(name) name##_c
#define KS_NAME "c"
#include "engine/kern_body.h"
