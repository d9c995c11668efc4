/* kern_avx2.c - the row kernels for avx2 (its -m flags from the Makefile); see kern_impl.h. */
#define KS(name) name##_avx2
#define KS_NAME "avx2"
#include "engine/kern_body.h"
