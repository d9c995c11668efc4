/* stconv_impl.h - the row conversion of st_conv_f32 (stconv.h) per
 * instruction set (library-internal): stconv_avx2.c (AVX2 + F16C, 8
 * elements a step) and stconv_avx512.c (16), chosen at run time by
 * stconv.c (util/cpu.h).  Each converts the longest prefix of whole steps
 * of the n bf16 (bf16 != 0) or f16 elements of s into dst and returns its
 * length; stconv.c does the rest.  stream: non-temporal stores (dst then
 * aligned to the vector width).  Conversions are exact: every path gives
 * the same bits. */
#ifndef SS_STCONV_IMPL_H
#define SS_STCONV_IMPL_H

#include <stdint.h>

/* elements from which st_conv_f32 writes with non-temporal stores (1 MiB
 * of f32): a whole weight matrix skips reading the destination's cache
 * lines first (a third of the traffic); the data is not read back before
 * it would have left the cache anyway */
#define ST_STREAM_MIN (1L << 18)

long st_conv_half_avx2(float *dst, const uint16_t *s, int bf16, long n, int stream);
long st_conv_half_avx512(float *dst, const uint16_t *s, int bf16, long n, int stream);

#endif
