/* mm_pack_avx512.c - weights stored in bf16, [N, K] row-major, packed into
 * the two blocked layouts oneDNN's brgemm matmul asks for on AVX-512
 * machines (engine/matmul.c decides when they apply; this file alone gets
 * the AVX-512 flags from the Makefile):
 *
 *   BA16a64b2a  the bf16 mode: (K, N) in blocks of 32 k x 64 n, the blocks
 *               of one 64-column panel consecutive along K; inside a block
 *               [k%32 / 2][n%64][k%2], the pairs of K that vdpbf16ps and
 *               tdpbf16ps multiply (2048 bf16 a block);
 *   BA16a64b    the f32 mode: blocks of 16 k x 64 n, inside [k%16][n%64]
 *               (1024 floats a block), bf16 widened exactly.
 *
 * Both are a transpose of 32-bit units: a pair of bf16 along K (the bf16
 * mode) or one widened float (the f32 mode) goes from row n, unit u to
 * block row u, column n.  Sixteen rows of 16 units are transposed in
 * registers and stored as 16 rows of 64 bytes, streaming (non-temporal:
 * a layer's packings, tens or hundreds of MB, are read back once by the
 * products that follow, and cached stores would first read each line).  K and N past the matrix
 * (the layouts' padding) are zeros, as oneDNN's reorder leaves them.  The
 * packed bytes are the ones oneDNN's reorder writes (test_matmul compares
 * them). */
#include "engine/mm_impl.h"

#include <immintrin.h>

/* r[c] = column c of the 16 x 16 matrix of 32-bit units whose rows are
 * r[0..15] */
static inline void transpose16(__m512i r[16])
{
	__m512i t[16], u[16];
	for (int i = 0; i < 16; i += 2) {
		t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
		t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
	}
	/* u[4g + j], 128-bit lane L: rows 4g..4g+3 of column 4L + j */
	for (int g = 0; g < 16; g += 4) {
		u[g] = _mm512_unpacklo_epi64(t[g], t[g + 2]);
		u[g + 1] = _mm512_unpackhi_epi64(t[g], t[g + 2]);
		u[g + 2] = _mm512_unpacklo_epi64(t[g + 1], t[g + 3]);
		u[g + 3] = _mm512_unpackhi_epi64(t[g + 1], t[g + 3]);
	}
	/* column 4L + j: lane L of u[j], u[4 + j], u[8 + j], u[12 + j] */
	for (int j = 0; j < 4; j++) {
		__m512i v0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x88);       /* lanes 0, 2 */
		__m512i v1 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xdd);       /* lanes 1, 3 */
		__m512i w0 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x88);
		__m512i w1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xdd);
		r[j] = _mm512_shuffle_i32x4(v0, w0, 0x88);
		r[8 + j] = _mm512_shuffle_i32x4(v0, w0, 0xdd);
		r[4 + j] = _mm512_shuffle_i32x4(v1, w1, 0x88);
		r[12 + j] = _mm512_shuffle_i32x4(v1, w1, 0xdd);
	}
}

/* units u0 .. u0+15 of a row (NULL: past N), those past nu zeros: pairs of
 * bf16 along K (the bf16 mode), or single bf16 widened into floats */
static inline __m512i units(const uint16_t *row, int wide, long u0, long nu, long K)
{
	if (!row || u0 >= nu)
		return _mm512_setzero_si512();
	if (wide) {
		long c = nu - u0 < 16 ? nu - u0 : 16;
		__m256i h = _mm256_maskz_loadu_epi16((__mmask16)((1u << c) - 1), row + u0);
		return _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
	}
	long k0 = 2 * u0, c = K - k0 < 32 ? K - k0 : 32;   /* an odd K: the last pair's second 0 */
	__mmask32 m = c == 32 ? 0xffffffffu : (__mmask32)((1u << c) - 1);
	return _mm512_maskz_loadu_epi16(m, row + k0);
}

void mm_pack_blocked_avx512(void *dst, int wide, const uint16_t *const *rows, long N, long K, long nb0,
                            long nb1)
{
	/* units along K: pairs (bf16 mode, blocks of 16 pairs) or single bf16
	 * (f32 mode, blocks of 16); a block is 16 units x 64 columns of 4 bytes */
	long nu = wide ? K : (K + 1) / 2, kb = (nu + 15) / 16;
	uint32_t *d = dst;
	/* 16 rows at a time along the whole of K: 16 sequential streams the
	 * hardware prefetches (a block's 64 rows at once were 64, and waited
	 * on memory) */
	for (long nb = nb0; nb < nb1; nb++)
		for (long c = 0; c < 4; c++) {   /* columns 16 c .. 16 c + 15 of each block */
			const uint16_t *row[16];
			for (int i = 0; i < 16; i++) {
				long n = nb * 64 + c * 16 + i;
				row[i] = n < N ? rows[n] : NULL;
			}
			for (long b = 0; b < kb; b++) {
				uint32_t *blk = d + (nb * kb + b) * 1024 + c * 16;
				__m512i r[16];
				for (int i = 0; i < 16; i++)
					r[i] = units(row[i], wide, b * 16, nu, K);
				transpose16(r);
				for (int u = 0; u < 16; u++)
					_mm512_stream_si512((void *)(blk + u * 64), r[u]);
			}
		}
	_mm_sfence();
}
