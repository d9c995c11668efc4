/* attn_kern_amx.c - the bf16 mode's attention tiles on AMX (tdpbf16ps;
 * this file alone gets -mamx-tile -mamx-bf16 from the Makefile), the
 * attn_kops16 contract of attn_impl.h with 16 rows per call.
 *
 * tdpbf16ps adds to each f32 element of a 16 x 16 tile the products of
 * 16 bf16 pairs (A [16 rows][32 bf16], B [16 pair rows][16 columns][2]):
 * the VNNI layout the packings already have, so tiles load from them as
 * they are: keys a->kb [panel][d/2][16 keys][2] (B of QK^T, 64 bytes a
 * row), values a->vb [column panel][j/2][16 columns][2] (B of P~V), the
 * queries a->th->qb [row][hde] and P~ a->th->pb [row][ldpb] (A).  The
 * attention module lays them out for it (attention.c, a->amx): hde a
 * multiple of 32 (the pad zeros), pb rows a multiple of 32 keys with the
 * keys past a tile's width zeroed, room for 16 rows in every row buffer
 * (a group's rows past the block's are computed and never read) and two
 * spare key panels past maxT.  Products are exact in f32; the order of
 * the sums inside a dot product is the hardware's (not vdpbf16ps's), the
 * rounding points of q, K, V and P~ are the other levels'. */
#include "engine/attn_impl.h"
#include "engine/round16.h"

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* palette 1, 8 tiles of 16 rows x 64 bytes: A, B and C alike */
typedef struct tilecfg {
	uint8_t palette, start_row, reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
} tilecfg;

/* static: GCC 12 does not see ldtilecfg read memory, and dropped the
 * stores into a configuration on the stack */
static const tilecfg cfg __attribute__((aligned(64))) = {
	.palette = 1,
	.colsb = {64, 64, 64, 64, 64, 64, 64, 64},
	.rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

static void amx_begin(void)
{
	_tile_loadconfig(&cfg);
}

static void amx_end(void)
{
	_tile_release();
}

/* y[i] = bf16(x[i]), nearest even (round16.h), as the other levels */
static void round16_amx(const float *x, uint16_t *y, long n)
{
	round16_row_512(x, y, n);
}

/* the first n columns of rows i < nr of x (ld apart) times f[i] or f */
static inline void scale_rows(float *x, long ld, int nr, int n, const float *f, float f1)
{
	__mmask16 m = n >= 16 ? 0xffff : (__mmask16)((1u << n) - 1);
	for (int i = 0; i < nr; i++) {
		__m512 s = _mm512_set1_ps(f ? f[i] : f1);
		float *r = x + i * ld;
		int c = 0;
		for (; c + 16 <= n; c += 16)
			_mm512_storeu_ps(r + c, _mm512_mul_ps(_mm512_loadu_ps(r + c), s));
		if (c < n)
			_mm512_mask_storeu_ps(r + c, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, r + c), s));
	}
}

/* s[i][0..16 np) = scale q[i] . keys for the 16 rows from q (rows i < nr
 * scaled and meant; hd2 a multiple of 16), np <= 4 panels of 16 keys */
static void qk_amx(int nr, const uint16_t *q, long hd2, const uint16_t *kp, int np, float *s, long lds,
                   float scale)
{
	const long ps = hd2 * 2 * NP, ldq = 4 * hd2;   /* panel stride (bf16), query row (bytes) */
	_tile_zero(0);
	if (np > 1)
		_tile_zero(1);
	if (np > 2)
		_tile_zero(2);
	if (np > 3)
		_tile_zero(3);
	for (long k = 0; k < hd2; k += 16) {   /* 32 dimensions a step */
		const uint16_t *b = kp + k * 2 * NP;
		_tile_loadd(4, q + 2 * k, ldq);
		_tile_loadd(5, b, 64);
		_tile_dpbf16ps(0, 4, 5);
		if (np > 1) {
			_tile_loadd(6, b + ps, 64);
			_tile_dpbf16ps(1, 4, 6);
		}
		if (np > 2) {
			_tile_loadd(7, b + 2 * ps, 64);
			_tile_dpbf16ps(2, 4, 7);
		}
		if (np > 3) {
			_tile_loadd(5, b + 3 * ps, 64);
			_tile_dpbf16ps(3, 4, 5);
		}
	}
	_tile_stored(0, s, lds * 4);
	if (np > 1)
		_tile_stored(1, s + NP, lds * 4);
	if (np > 2)
		_tile_stored(2, s + 2 * NP, lds * 4);
	if (np > 3)
		_tile_stored(3, s + 3 * NP, lds * 4);
	if (scale != 1.0f)   /* attn_block passes 1: its softmax scales */
		scale_rows(s, lds, nr, np * NP, NULL, scale);
}

/* o[i][0..16 np) = al[i] o[i] + sum_{j<w} p[i][j] v[j] for the 16 rows
 * from o and p (rows i < nr meant), np <= 4 panels of 16 value columns
 * (vs apart), w a multiple of 32 */
static void pv_amx(int nr, const uint16_t *p, long ldp, const uint16_t *v, long vs, int np, long w, float *o,
                   long ldo, const float *al)
{
	int ones = 1;   /* the rows' max unchanged (the common case past the first tiles): o as it is */
	for (int i = 0; i < nr; i++)
		ones &= al[i] == 1.0f;
	if (!ones)
		scale_rows(o, ldo, nr, np * NP, al, 0);
	_tile_loadd(0, o, ldo * 4);
	if (np > 1)
		_tile_loadd(1, o + NP, ldo * 4);
	if (np > 2)
		_tile_loadd(2, o + 2 * NP, ldo * 4);
	if (np > 3)
		_tile_loadd(3, o + 3 * NP, ldo * 4);
	for (long j = 0; j < w; j += 32) {   /* 32 keys a step */
		const uint16_t *b = v + j * NP;
		_tile_loadd(4, p + j, ldp * 2);
		_tile_loadd(5, b, 64);
		_tile_dpbf16ps(0, 4, 5);
		if (np > 1) {
			_tile_loadd(6, b + vs, 64);
			_tile_dpbf16ps(1, 4, 6);
		}
		if (np > 2) {
			_tile_loadd(7, b + 2 * vs, 64);
			_tile_dpbf16ps(2, 4, 7);
		}
		if (np > 3) {
			_tile_loadd(5, b + 3 * vs, 64);
			_tile_dpbf16ps(3, 4, 5);
		}
	}
	_tile_stored(0, o, ldo * 4);
	if (np > 1)
		_tile_stored(1, o + NP, ldo * 4);
	if (np > 2)
		_tile_stored(2, o + 2 * NP, ldo * 4);
	if (np > 3)
		_tile_stored(3, o + 3 * NP, ldo * 4);
}

const attn_kops16 attn_kops16_amx = {
	.name = "bf16-amx",
	.mr = 16,
	.kmul = 32,
	.qk_pan = 4,
	.pv_pan = 4,
	.qk = qk_amx,
	.pv = pv_amx,
	.round = round16_amx,
	.begin = amx_begin,
	.end = amx_end,
};
