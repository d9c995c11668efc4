/* mm_impl.h - the matmul module's private kernels (engine/matmul.c and
 * engine/mm_pack_avx512.c); not for use outside them. */
#ifndef SS_MM_IMPL_H
#define SS_MM_IMPL_H

#include <stdint.h>

/* Column panels nb0..nb1-1 (64 columns each) of W [N, K] (row n at rows[n],
 * bf16) into dst in oneDNN's BA16a64b2a (wide 0: the bf16 mode's layout) or
 * BA16a64b (wide 1: floats, widened exactly); see mm_pack_avx512.c.  Needs
 * AVX-512 F and BW. */
void mm_pack_blocked_avx512(void *dst, int wide, const uint16_t *const *rows, long N, long K, long nb0,
                            long nb1);

#endif
