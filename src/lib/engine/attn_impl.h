/* attn_impl.h - the attention module's private state and the work items
 * its files share (attention.c: lifecycle and runs; attn_block.c: packed
 * tiles and the few-query path; attn_sel.c: key selections and
 * measurements).  Not for use outside engine/attention*.c. */
#ifndef SS_ATTN_IMPL_H
#define SS_ATTN_IMPL_H

#include "engine/attention.h"

#include <stdint.h>


#define KTILE 256   /* keys per tile: 32 x 7 rows x 256 floats = 224 KiB */
#define PACK_MIN 24   /* rows (queries x group) from which keys are packed */
#define MR 6        /* rows per kernel call */
#define NP 16       /* keys per packed panel */

typedef struct attn_thread {
	float *qg, *og;   /* [g * qblock, hd] */
	float *s;         /* [ntile, g * qblock, kt] P~ of the current block */
	float *sl;        /* [g * qblock, kt] the scores of one tile (in L2) */
	float *csum;      /* [g, maxT] */
	float *mx, *al;   /* [g * qblock] row max; rescale factor of the tile */
	float *mu;        /* [g * qblock, ntile] shifts */
	double *l;        /* [g * qblock] softmax denominators */
	double *acc;      /* [H, maxT] */
	/* selections (block_sel), grown by sel_buffers */
	float *gk, *gv;   /* [kcap, hd] gathered keys and values */
	float *ss;        /* [g * qblock, kcap + maxT] scores */
	float *gcs;       /* [g, kcap + maxT] column sums */
	double *cum;      /* [3, maxT + 1] a row's probabilities summed by class */
	double *lost;     /* [mcap * 3] */
	/* the bf16 mode (attn_set_compute) */
	uint16_t *qb;     /* [rpad, hde] the block's queries in bf16 */
	uint16_t *pb;     /* [rpad, ldpb] P~ of the current tile in bf16 */
} attn_thread;

struct ss_attn {
	long H, Hkv, g, hd, qdim, kvdim, maxT, qb, window, kt, ntile;
	long hdp, np;     /* hd rounded up to NP; key panels (maxT rounded up) */
	int nth;
	float scale;
	float softcap;    /* scores -> softcap tanh(scores / softcap); 0: none */
	attn_thread *th;
	float *kp;        /* [Hkv, np, hd, NP] keys: kp[h][j/16][d][j%16] */
	float *vp;        /* [Hkv, hdp / NP, np * NP, NP] values: [h][c/16][j][c%16] */
	/* the bf16 mode: the packed tiles' products in bf16 (attn_kern16_body.h) */
	ss_compute compute;
	int amx;          /* laid out for the AMX tiles (attn_kern_amx.c) */
	long hde;         /* hd rounded up to even (AMX: to 32), the pad zeros */
	long npb;         /* key panels of kb, vb: np (AMX: np + 2, the spares zeros or stale finite) */
	long ldpb;        /* keys per row of pb: kt (AMX: kt rounded up to 32) */
	long rpad;        /* rows of the row buffers: g * qb (AMX: rounded up to 16) */
	uint16_t *kb;     /* [Hkv, npb, hde / 2, NP, 2] keys: kb[h][j/16][d/2][j%16][d%2] */
	uint16_t *vb;     /* [Hkv, hdp / NP, npb * NP / 2, NP, 2] values: [h][c/16][j/2][c%16][j%2] */
	/* the current run */
	float *q;
	const float *kc, *vc;
	long t0, n;
	double *recv_sum;
	long ld;
	const ss_attn_sel *sel;
	const ss_attn_meas *meas;
	long kcap;        /* kept keys the selection buffers hold (-1: none yet) */
	int mcap;         /* measured selections lost[] holds */
};

/* The tile kernels, once per instruction set (attn_kern_body.h): qk
 * writes s[i][0..16 np) = scale q[i] . keys for rows i < nr (at most MR)
 * against np panels of NP packed keys (kp[panel][d][16], hd * NP floats
 * apart); pv sets o[i][0..16 np) = al[i] o[i] + sum_{j<w} p[i][j] v[j]
 * over np panels of NP value columns (v[panel][j][16], vs floats apart).
 * np is at most qk_pan, pv_pan. */
typedef struct attn_kops {
	const char *name;   /* "c", "avx2", "avx512" */
	int qk_pan, pv_pan;
	void (*qk)(int nr, const float *q, long hd, const float *kp, int np, float *s, long lds, float scale);
	void (*pv)(int nr, const float *p, long ldp, const float *v, long vs, int np, long w, float *o, long ldo,
	           const float *al);
} attn_kops;
extern const attn_kops attn_kops_c, attn_kops_avx2, attn_kops_avx512;
/* the copy for ss_cpu_isa() (AVX512_BF16 adds nothing to the f32 tiles) */
const attn_kops *attn_kern(void);
/* The bf16 mode's tiles (attn_kern16_body.h): qk writes s[i][0..16 np) =
 * scale q[i] . keys with q in bf16 pairs (q[i][2 hd2]) and keys packed as
 * a->kb (hd2 * 32 apart); pv sets o[i][..] = al[i] o[i] + sum_{j<w} p[i][j]
 * v[j] with p in bf16 and values packed as a->vb (vs apart), w even.
 * Native vdpbf16ps at SS_ISA_AVX512BF16, emulated with the same rounding
 * below it. */
typedef struct attn_kops16 {
	const char *name;   /* "bf16-c", "bf16-avx2", "bf16-avx512" (emulated), "bf16-avx512bf16", "bf16-amx" */
	int mr;             /* rows per call: MR, or 16 (AMX: nr <= 16 rows meant, 16 read and written) */
	int kmul;           /* pv's w is a multiple of it: 2, or 32 (AMX) */
	int qk_pan, pv_pan;
	void (*qk)(int nr, const uint16_t *q, long hd2, const uint16_t *kp, int np, float *s, long lds, float scale);
	void (*pv)(int nr, const uint16_t *p, long ldp, const uint16_t *v, long vs, int np, long w, float *o,
	           long ldo, const float *al);
	/* y[i] = x[i] rounded to bf16, nearest even, for i < n (finite x) */
	void (*round)(const float *x, uint16_t *y, long n);
	/* around a block's calls on one thread (AMX: the tile configuration
	 * loaded, the tiles released); NULL: none */
	void (*begin)(void);
	void (*end)(void);
} attn_kops16;
extern const attn_kops16 attn_kops16_c, attn_kops16_avx2, attn_kops16_avx512, attn_kops16_avx512bf16,
        attn_kops16_amx;
/* the copy for ss_cpu_isa(): at SS_ISA_AMX bf16-amx when a was laid out
 * for it (a->amx, set by attn_set_compute at that level), else the
 * vdpbf16ps tiles */
const attn_kops16 *attn_kern16(void);
const attn_kops16 *attn_kern16_for(const ss_attn *a);

/* keys and values of every KV head packed into a->kp, a->vp (pool task) */
void attn_pack_task(void *ctx, int tid, int nth);
/* the queries of rows r0..r0+nb-1 for the g heads of KV head kvh, stacked
 * head by head into p->qg */
void attn_gather_q(const ss_attn *a, attn_thread *p, long r0, long nb, long kvh);
/* the block's column sums p->csum [g, nk] (keys k0..k0+nk-1) into p->acc */
void attn_add_csum(const ss_attn *a, attn_thread *p, long kvh, long k0, long nk);
/* the output rows p->og (ldo floats apart) times scale[x] back into q */
void attn_put_out(const ss_attn *a, const attn_thread *p, long r0, long nb, long kvh, long ldo,
                  const float *scale);
/* one query block (rows r0..r1-1 of q) against KV head kvh: packed tiles
 * (attn_block), a few queries through sgemm (attn_block_few), under a key
 * selection or a measurement (attn_block_sel) */
void attn_block(ss_attn *a, attn_thread *p, long r0, long r1, long kvh);
void attn_block_few(ss_attn *a, attn_thread *p, long r0, long r1, long kvh);
void attn_block_sel(ss_attn *a, attn_thread *p, long r0, long r1, long kvh);

#endif
