/* kern_avx512.c - the row kernels for avx512 (its -m flags from the Makefile); see kern_impl.h. */
#define KS(name) name##_avx512
#define KS_NAME "avx512"
#include "engine/kern_body.h"
